"""Group labels encoded to integer codes, with the names kept (the sensitive attribute of a data set)."""
from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

from ..errors import DataError
from ..utilities.validate import check_labels, check_printable_names, check_unique_names


class Groups:
    """Group membership of n samples: integer ``codes`` in ``0..m-1`` and the original ``names``.

    Array-like (``np.asarray(groups)`` gives the codes). Names are sorted when they are mutually
    comparable, otherwise kept in order of first appearance.
    """

    __slots__ = ("codes", "names", "_sizes")

    def __init__(self, labels, names: Sequence[Hashable] | None = None):
        if isinstance(labels, Groups):
            self.codes, self.names, self._sizes = labels.codes, labels.names, labels._sizes
            return
        labels = _as_label_array(labels)
        if labels.ndim != 1:
            raise DataError(f"group labels must be 1-D; got shape {labels.shape}")
        if labels.size == 0:
            raise DataError("group labels are empty")
        if names is not None:
            codes = np.asarray(labels)
            if not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() >= len(names):
                raise DataError(f"with explicit names, labels must be integer codes in [0, {len(names)})")
            self.codes, self.names = codes.astype(np.intp), tuple(names)
        else:
            check_labels(labels)
            items = labels.tolist()
            try:
                uniques = sorted(set(items))
            except TypeError:
                uniques = list(dict.fromkeys(items))
            index = {u: i for i, u in enumerate(uniques)}
            self.codes = np.fromiter((index[v] for v in items), dtype=np.intp, count=len(items))
            self.names = tuple(uniques)
        check_printable_names(self.names, "the group label")
        check_unique_names(self.names, "distinct group labels read as the same text",
                           "reports name groups by text, so they would merge: make the labels one type (e.g. strings)")
        self.codes.setflags(write=False)
        self._sizes = np.bincount(self.codes, minlength=len(self.names))
        self._sizes.setflags(write=False)

    @property
    def n_groups(self) -> int:
        return len(self.names)

    @property
    def sizes(self) -> np.ndarray:
        """Number of samples in each group (by code)."""
        return self._sizes

    def __len__(self) -> int:
        return self.codes.shape[0]

    def __array__(self, dtype=None, copy=None):
        return self.codes if dtype is None else self.codes.astype(dtype)

    def indices(self) -> list[np.ndarray]:
        """Row indices of each group, in code order."""
        order = np.argsort(self.codes, kind="stable")
        return np.split(order, np.cumsum(self._sizes)[:-1])

    def take(self, rows: np.ndarray) -> "Groups":
        """The groups of a subset of rows, keeping all names (so group codes stay comparable)."""
        return Groups(self.codes[rows], names=self.names)

    def require_nonempty(self, what: str = "this problem") -> None:
        empty = [str(self.names[i]) for i in np.flatnonzero(self._sizes == 0)]
        if empty:
            raise DataError(f"group(s) {', '.join(empty)} have no samples; {what} needs every group non-empty. "
                            f"Drop the empty group names or sample more data.")

    def __repr__(self) -> str:
        pairs = ", ".join(f"{n!r}: {s}" for n, s in zip(self.names, self._sizes))
        return f"Groups({{{pairs}}})"


def group_means(values, codes: np.ndarray, m: int, counts=None) -> np.ndarray:
    """The mean of ``values`` over the rows of each of the m groups (rows with code -1 are in no group); ``counts``:
    the rows per group when known. The one copy of a group mean (the group-mean atom and the group risks)."""
    keep = codes >= 0
    if counts is None:
        counts = np.bincount(codes[keep], minlength=m)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(codes[keep], weights=np.asarray(values)[keep], minlength=m) / counts


def relative_weights(weights, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u, n_c, W_c): u_i = w_i n_c / W_c, the sample weight of row i relative to the mean weight of its set c =
    codes[i] >= 0 (n_c rows, total weight W_c; u_i = w_i on the rows of no set), so that the mean of u_i e_i over a
    set is the w-weighted mean of e there. A set whose weights are all zero has W_c = 0: the caller refuses it."""
    w = np.asarray(weights, dtype=float)
    inside = codes >= 0
    count = np.bincount(codes[inside])
    total = np.bincount(codes[inside], weights=w[inside], minlength=count.size)
    u = w.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        u[inside] = w[inside] * count[codes[inside]] / total[codes[inside]]
    return u, count, total


def _as_label_array(labels) -> np.ndarray:
    """A 1-D array of labels; a list of tuples becomes an object array of tuples (not a 2-D array)."""
    if labels is None:
        raise DataError("group labels are None: give one label per row (e.g. data.groups or the sensitive column)")
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__"):
        raise DataError(f"group labels must be one label per row (an array, a list or a column); got the single "
                        f"value {labels!r}")
    if isinstance(labels, np.ndarray):
        return labels
    labels = list(labels) if not hasattr(labels, "to_numpy") else labels.to_numpy()
    if isinstance(labels, np.ndarray):
        return labels
    if len({type(v) for v in labels}) == 1 and not isinstance(labels[0], tuple):
        return np.asarray(labels)
    out = np.empty(len(labels), dtype=object)  # mixed types or tuples: keep every label as it is
    out[:] = labels
    return out
