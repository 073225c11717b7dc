"""The output average of a stochastic run whose length is not known in advance.

Mirror-prox and gradient descent-ascent converge at the rate of an *average* of their iterates, and the average of
the later iterates forgets the start (the "suffix" output of ALEG over the second half of a fixed number of epochs).
A run that stops when the judge's checks pass does not know its last epoch, so :class:`TailAverage` keeps two
running sums (the doubling trick): at epoch s in [2^j, 2^(j+1)) the output averages the iterates of epochs
2^(j-1), ..., s, which is between the last half and the last three quarters of the run.
"""
from __future__ import annotations

import numpy as np


def tail_start(epoch: int) -> int:
    """The first epoch of the tail window of :class:`TailAverage` at ``epoch`` (0-based): 2^(j-1) for an epoch in
    [2^j, 2^(j+1)), 0 for the epochs 0 and 1. A method that keeps running sums (OGDA's lazy average) subtracts
    the sum at the start of that epoch instead of keeping a second accumulator."""
    return 0 if epoch < 2 else 1 << (int(epoch).bit_length() - 2)


class TailAverage:
    """Weighted sums of arrays (e.g. w and the dual weights) over the tail of the epochs run so far."""

    def __init__(self):
        self._previous: list | None = None     # sums over [2^(j-1), 2^j)
        self._current: list | None = None      # sums over [2^j, s]
        self._weights = [0.0, 0.0]
        self._next = 1                          # the next epoch at which a new sum starts

    def start_epoch(self, epoch: int) -> None:
        """Call at the start of every epoch (0, 1, 2, ...)."""
        if epoch >= self._next:
            self._previous, self._weights[0] = self._current, self._weights[1]
            self._current, self._weights[1] = None, 0.0
            self._next *= 2

    def add(self, weight: float, *arrays) -> None:
        if self._current is None:
            self._current = [np.zeros_like(np.asarray(a, dtype=float)) for a in arrays]
        for acc, a in zip(self._current, arrays):
            acc += weight * a
        self._weights[1] += weight

    @property
    def weight(self) -> float:
        return self._weights[0] + self._weights[1]

    def value(self) -> list:
        """The averages (None before any iterate was added)."""
        parts = [(p, w) for p, w in ((self._previous, self._weights[0]), (self._current, self._weights[1]))
                 if p is not None and w > 0]
        if not parts:
            return None
        total = sum(w for _, w in parts)
        return [sum(p[i] for p, _ in parts) / total for i in range(len(parts[0][0]))]
