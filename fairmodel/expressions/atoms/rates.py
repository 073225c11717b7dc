"""The ramp surrogate of a gap in group decision rates: the atom behind ``surrogate="ramp"`` of
``fm.selection_rate_gap``, ``fm.equal_opportunity_gap`` and ``fm.equalized_odds_gap``.

A decision is ``score > threshold``; a group's rate on a stratum of rows (all rows: the selection rate; the positives:
the true-positive rate; the negatives: the false-positive rate) is the share of its rows with a positive decision.
The atom's value is the largest pairwise gap of the groups' *ramp* rates, the mean of
``clip((score - threshold) / width + 1/2, 0, 1)`` over a group's rows (the ramp of Example B.3 of He, Huang, Yao,
Lin 2025, stretched to ``width``), taken over the strata:

    ramp gap = max_s ( max_k r_sk - min_k r_sk ).

It is a difference of convex functions of a linear score, so ``gap <= eps`` is lowered by the partial-fairness
family to DC constraints solved by IDCA (:mod:`fairmodel.oracles.dc_rates`). It bounds the true (0/1) rate gap up to
the slack: each ramp rate is within (1/2) x (the share of the group's rows with |score - threshold| < width / 2) of
the true rate, so on every stratum ``true gap <= ramp gap + (the two largest of those group slacks)``. ``gap <= eps``
declares the true gap <= eps: the judge checks the true gap (the ramp gap and this slack are reported), and the
exact backend lowers the ramp bound until the true gap meets eps (:mod:`fairmodel.families.partial_rates`).

With ``sample_weight`` every rate (true, ramp and the slack's share) is weighted: a group's rate on a stratum is
``sum_i w_i 1[score_i > threshold] / sum_i w_i`` over its rows there, and the judge checks the weighted true gap.
"""
from __future__ import annotations

import numpy as np

from ...utilities.validate import check_number, check_sample_weight
from ...data import Groups
from ...errors import DataError, ModelError
from ...oracles.dc_rates import cell_codes, rate_cell_sums, rate_measure
from .partial import _check_score
from ..core import Expr

SURROGATES = ("linear", "ramp")


class RampRateGap(Expr):
    """The largest pairwise gap of the groups' ramp decision rates over the strata (see the module docstring).

    ``strata``: a list of (name of the rate, boolean row mask), e.g. ``[("true-positive rate", y > 0)]``;
    ``sample_weight``: non-negative row weights of the rates (None: every row counts once).
    """

    def __init__(self, score, groups, strata, threshold: float = 0.0, width: float = 1.0, sample_weight=None):
        self.score = _check_score(score, "the ramp rate gap")
        self.threshold = check_number(threshold, "threshold", error=ModelError)
        self.width = check_number(width, "width (of the ramp)", low=0.0, strict=True, error=ModelError)
        self.groups = Groups(groups)
        n = self.score.size
        if len(self.groups) != n:
            raise DataError(f"groups has {len(self.groups)} entries but the score has {n} samples; they must match")
        if self.groups.n_groups < 2:
            raise DataError(f"a rate gap compares groups, but the sensitive attribute has {self.groups.n_groups} "
                            f"group; give two or more groups")
        self.strata = [(name, np.asarray(mask, dtype=bool)) for name, mask in strata]
        self.n_strata = len(self.strata)
        # the (stratum, group) cells: a per-row cell code (-1: in no stratum), the strata being disjoint
        self.codes, self.cell_keys, self.cell_sizes = cell_codes(self.groups, [m for _, m in self.strata])
        for (s, k), size in zip(self.cell_keys, self.cell_sizes):
            if size == 0:
                raise DataError(f"group {self.groups.names[k]!r} has no row for its {self.strata[s][0]}; every group "
                                f"needs rows in every stratum: merge or drop that group, or use more data")
        self.factors = None if sample_weight is None else self._factors(check_sample_weight(sample_weight, n,
                                                                                             "the score"))
        self.args = (self.score,)

    def _factors(self, w) -> np.ndarray:
        """Row i's factor w_i n_c / (sum of w over its cell c): the plain share of a cell's rows with these factors
        is the weighted share (:mod:`fairmodel.oracles.dc_rates`); rows in no stratum keep 1."""
        inside = self.codes >= 0
        cells = self.codes[inside].astype(np.intp)
        total = np.bincount(cells, weights=w[inside], minlength=len(self.cell_keys))
        for (s, k), t in zip(self.cell_keys, total):
            if t <= 0:
                raise DataError(f"group {self.groups.names[k]!r} has zero total sample weight on its rows for the "
                                f"{self.strata[s][0]}: its weighted rate is undefined; give those rows positive "
                                f"weights, or merge or drop that group")
        out = np.ones(w.size)
        out[inside] = w[inside] * self.cell_sizes[cells] / total[cells]
        return out

    @property
    def curvature(self):
        return "unknown"

    def get_data(self):
        return (id(self),)

    def cell_label(self, j: int) -> str:
        s, k = self.cell_keys[j]
        return f"{self.strata[s][0]},{self.groups.names[k]}"

    # -- values ----------------------------------------------------------------------------------------
    def measure(self, scores) -> dict:
        """Ramp and true (0/1) rates of every (stratum, group) cell, the gaps per stratum and the slack (the sum of
        the two largest group slacks of each stratum: true gap <= ramp gap + slack on every stratum)."""
        sums = rate_cell_sums(np.asarray(scores, dtype=float), self.codes, len(self.cell_keys), self.threshold,
                              self.width, self.factors)
        return self.measure_sums(sums)

    def measure_sums(self, sums) -> dict:
        """:meth:`measure` from the per-cell sums of :func:`fairmodel.oracles.dc_rates.rate_cell_sums` (e.g. added
        over the chunks of a data source)."""
        out = rate_measure(sums, np.array([s for s, _ in self.cell_keys]), self.n_strata)
        out.update(labels=[self.cell_label(j) for j in range(len(self.cell_keys))],
                   strata=[name for name, _ in self.strata])
        return out

    def _numeric(self, env):
        if env.rows is not None:
            raise ModelError("the ramp rate gap is evaluated on all rows (the partial-fairness family's IDCA is "
                             "full batch)")
        return self.measure(self.score.numeric(env))["ramp_gap"]

    def backprop(self, env, upstream, grads):
        raise ModelError("the ramp rate gap is a difference of convex functions, not convex; write it as a "
                         "constraint 'gap <= eps', which the partial-fairness family lowers to DC constraints (IDCA)")

    def describe(self) -> str:
        """What the surrogate bounds, in words."""
        rates = " and ".join(name for name, _ in self.strata)
        weighted = "weighted " if self.factors is not None else ""
        return (f"ramp surrogate of the {weighted}{rates} gap (largest pairwise over {self.groups.n_groups} groups), "
                f"decisions score > {self.threshold:g}, ramp width {self.width:g}: bounds the true (0/1) gap up to the "
                f"{weighted}share of rows within {self.width / 2:g} of the threshold")

    def render(self, n):
        rates = " and ".join(name for name, _ in self.strata)
        t, wd = n.number(self.threshold), n.number(self.width)
        names = ", ".join(map(str, self.groups.names))
        mean = "mean" if self.factors is None else "sample-weighted mean"
        n.define(("rgap", rates, t, wd, mean),
                 f"rampgap = largest pairwise gap of the groups' ramp rates ({rates}), {mean} of clip((s - {t}) / {wd} "
                 f"+ 1/2, 0, 1) over a group's rows (the ramp of Example B.3 of He, Huang, Yao, Lin 2025); it bounds "
                 f"the true gap of the decisions s > {t} up to the share of rows within {wd}/2 of {t}; groups: {names}",
                 f"$\\mathrm{{rampgap}}$ = largest pairwise gap of the groups' ramp rates ({rates}), {mean} of "
                 f"$\\mathrm{{clip}}((s - {t}) / {wd} + 1/2, 0, 1)$ over a group's rows (the ramp of Example B.3 of "
                 f"He, Huang, Yao, Lin 2025); it bounds the true gap of the decisions $s > {t}$ up to the share of rows "
                 f"within ${wd}/2$ of ${t}$")
        body = self.score.render(n)
        return n.pick(f"rampgap({body})", f"\\mathrm{{rampgap}}\\left({body}\\right)")


def check_surrogate(surrogate) -> str:
    if surrogate not in SURROGATES:
        raise ModelError(f"surrogate must be 'linear' (the gap of the groups' mean scores, a convex constraint) or "
                         f"'ramp' (the ramp surrogate of the rate gap, a DC constraint solved by IDCA); got "
                         f"{surrogate!r}")
    return surrogate
