"""Values of a pure function of a point kept at its last few points: an oracle that reads every row (a pass over
chunked data) is not asked twice for the same point.

IDCA asks again at points it has seen: every working-set round of its subproblem starts at the anchor, a
subproblem's answer is the next anchor, and the run's record, its extrapolation and the judge evaluate f_0 and
the constraints at the same iterates. Keys are the point's exact bytes, so a kept value is the value."""
from __future__ import annotations

import copy

import numpy as np


class Recent:
    """The values of ``fn(x)`` at the last ``size`` points asked (least recently used dropped first); each call
    returns a copy, so callers may change what they get. ``state()``: what else ``fn`` depends on (an array, part
    of the key), for an ``fn`` whose owner can change (a constraint's bound).

    A call may give its own ``fn`` and ``enough(kept) -> bool``, for values of several kinds at a point (a value
    and gradient, or with the Hessian too): a kept value that is not enough is computed again and replaced."""

    def __init__(self, fn=None, size: int = 4, state=None):
        self.fn, self.size, self.state = fn, int(size), state
        self.kept: dict = {}

    def __call__(self, x, fn=None, enough=None):
        key = np.asarray(x, dtype=float).tobytes()
        if self.state is not None:
            key += np.asarray(self.state(), dtype=float).tobytes()
        value = self.kept.pop(key, None)
        if value is None or (enough is not None and not enough(value)):
            value = (fn or self.fn)(x)
        self.kept[key] = value                       # the most recently used last
        if len(self.kept) > self.size:
            del self.kept[next(iter(self.kept))]
        return copy.deepcopy(value)
