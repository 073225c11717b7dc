"""Problem files of min-max problems (family ``saddle``): the built-in games of :class:`fairmodel.SaddleProblem`
(Maheshwari, Chiu, Mazumdar, Sastry, Ratliff 2022, Section 6), given in the file or drawn at random with a seed.
They need no [data] table.

* ``game = "matrix"``: ``L_i(x, y) = x^T A_i y`` on two probability simplices (G2); ``A`` is one payoff matrix
  (m x k) or a list of n of them; without ``A``, n matrices of standard normal entries (``n``, ``m``, ``k``);
* ``game = "quadratic"``: ``L_i(x, y) = ||A_i x - b_i||^2 / 2 + y^T (B_i x - e_i) - mu ||y||^2 / 2`` on the ball
  ``||x|| <= rho`` and the box ``[-1, 1]^m`` (G1), with standard normal A_i (q x d), b_i, B_i (m x d) and
  0.3 x standard normal e_i.
"""
from __future__ import annotations

import numpy as np

from ...minmax import SaddleProblem

KEYS = {"game": "matrix (x^T A_i y on two simplices, default) or quadratic (smooth, strongly concave in y)",
        "A": "matrix game: the payoff matrix (m x k) or n matrices; omit for a random game",
        "n": "components of a random game (default 20)", "m": "rows of A (matrix) or the y dimension (default 3)",
        "k": "columns of A (matrix game, default 3)", "d": "x dimension (quadratic game, default 3)",
        "q": "rows of A_i (quadratic game, default 4)", "mu": "strong concavity in y (quadratic game, default 0.5)",
        "rho": "radius of the x ball (quadratic game, default 2)", "seed": "seed of a random game (default 0)"}
ONLY = {"matrix": ("A", "k"), "quadratic": ("d", "q", "mu", "rho")}
DATALESS = ("saddle",)


def build(spec, t, data):
    game = spec.get(t, "game", "[problem]", "str", default="matrix", choices=list(ONLY))
    for other, keys in ONLY.items():
        for key in keys:
            if other != game and key in t:
                raise spec.error(f"[problem] {key}", f"only for game = \"{other}\"")
    rng = np.random.default_rng(spec.get(t, "seed", "[problem]", "seed", default=0))
    n = spec.get(t, "n", "[problem]", "int", default=20, positive=True)
    m = spec.get(t, "m", "[problem]", "int", default=3, positive=True)
    if game == "matrix":
        if "A" in t:
            if "n" in t or "m" in t or "k" in t:
                raise spec.error("[problem] A", "give A, or n, m, k for a random game, not both")
            return SaddleProblem.matrix_game(_payoffs(spec, spec.get(t, "A", "[problem]", "list")))
        k = spec.get(t, "k", "[problem]", "int", default=3, positive=True)
        _check_size(spec, n * m * k, f"n m k = {n} x {m} x {k}")
        return SaddleProblem.matrix_game(rng.standard_normal((n, m, k)))
    d = spec.get(t, "d", "[problem]", "int", default=3, positive=True)
    q = spec.get(t, "q", "[problem]", "int", default=4, positive=True)
    _check_size(spec, n * (q * d + q + m * d + m), f"n (q d + q + m d + m) with n = {n}, q = {q}, d = {d}, m = {m}")
    A, b = rng.standard_normal((n, q, d)), rng.standard_normal((n, q))
    B, e = rng.standard_normal((n, m, d)), 0.3 * rng.standard_normal((n, m))
    return SaddleProblem.quadratic(A, b, B, e, mu=spec.get(t, "mu", "[problem]", "number", default=0.5, positive=True),
                                   rho=spec.get(t, "rho", "[problem]", "number", default=2.0, positive=True))


def _payoffs(spec, A) -> np.ndarray:
    """The payoff matrices written in the file, as an array: every entry a finite number (no text, no true/false),
    every row of the same length and every matrix of the same number of rows."""
    stack, depths = [(A, 0)], set()
    while stack:
        v, depth = stack.pop()
        if isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise spec.error("[problem] A", f"entries must be finite numbers; got {v!r}")
        else:
            depths.add(depth)
    try:
        array = np.array(A, dtype=float)
    except ValueError:      # rows of different lengths
        array = None
    if array is None or depths not in ({2}, {3}) or 0 in array.shape:
        raise spec.error("[problem] A", "must be one payoff matrix (m rows of k numbers each) or a list of n such "
                                        "matrices of the same shape; rows of different lengths or empty rows are "
                                        "not a matrix")
    return array


MAX_ENTRIES = 10 ** 7    # a random game's entries a problem file may ask for: 80 MB of float64


def _check_size(spec, entries: int, formula: str) -> None:
    """Refuse a random game of more than :data:`MAX_ENTRIES` entries before it is drawn."""
    if entries > MAX_ENTRIES:
        raise spec.error("[problem]", f"the random game has {formula} = {entries:,} entries "
                                      f"({8 * entries / 2 ** 30:,.1f} GiB of float64), more than the {MAX_ENTRIES:,} "
                                      f"a problem file draws; choose fewer components n or smaller matrices")


DESCRIPTION = "a min-max game of fm.SaddleProblem (matrix or quadratic), no data"
FAMILIES = {"saddle": (build, KEYS, DESCRIPTION)}
