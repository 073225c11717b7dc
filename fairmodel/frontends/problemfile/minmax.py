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
    rng = np.random.default_rng(spec.get(t, "seed", "[problem]", "int", default=0))
    n = spec.get(t, "n", "[problem]", "int", default=20, positive=True)
    m = spec.get(t, "m", "[problem]", "int", default=3, positive=True)
    if game == "matrix":
        if "A" in t:
            if "n" in t or "m" in t or "k" in t:
                raise spec.error("[problem] A", "give A, or n, m, k for a random game, not both")
            A = spec.get(t, "A", "[problem]", "list")
            return SaddleProblem.matrix_game(np.asarray(A, dtype=float) if _numeric(A) else A)
        k = spec.get(t, "k", "[problem]", "int", default=3, positive=True)
        return SaddleProblem.matrix_game(rng.standard_normal((n, m, k)))
    d = spec.get(t, "d", "[problem]", "int", default=3, positive=True)
    q = spec.get(t, "q", "[problem]", "int", default=4, positive=True)
    A, b = rng.standard_normal((n, q, d)), rng.standard_normal((n, q))
    B, e = rng.standard_normal((n, m, d)), 0.3 * rng.standard_normal((n, m))
    return SaddleProblem.quadratic(A, b, B, e, mu=spec.get(t, "mu", "[problem]", "number", default=0.5, positive=True),
                                   rho=spec.get(t, "rho", "[problem]", "number", default=2.0, positive=True))


def _numeric(A) -> bool:
    try:
        np.asarray(A, dtype=float)
    except (TypeError, ValueError):
        return False
    return True


DESCRIPTION = "a min-max game of fm.SaddleProblem (matrix or quadratic), no data"
FAMILIES = {"saddle": (build, KEYS, DESCRIPTION)}
