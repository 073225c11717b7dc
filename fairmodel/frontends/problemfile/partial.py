"""Problem files of partial fairness in a rank band and of the ramp surrogates of decision-rate gaps (family
``partial_fairness``; both are DC programs solved by IDCA, He, Huang, Yao, Lin 2025)."""
from __future__ import annotations

import numbers

from ...errors import DataError
from ...expressions import mean, sum_squares
from ...expressions.atoms.fairness import equal_opportunity_gap, equalized_odds_gap, selection_rate_gap
from ...expressions.atoms.partial import partial_dp, weak_partial_dp, with_group_interactions
from ...problem import Minimize, Problem
from .spec import build_loss, build_weights

RATES = {"selection_rate": selection_rate_gap, "equal_opportunity": equal_opportunity_gap,
         "equalized_odds": equalized_odds_gap}
KEYS = {"kind": "pdp (model (13), default), weak_pdp (model (17)), or the ramp surrogate of a decision-rate gap "
                "(largest pairwise): selection_rate, equal_opportunity or equalized_odds",
                     "band": "rank band [a, b], 0 <= a < b <= 1 (default [0, 1]; pdp and weak_pdp)",
                     "kappa": "allowed parity gap, 0 <= kappa < 1 (default 0.1); for the rate gaps 0 < kappa",
                     "threshold": "decision threshold of weak_pdp and of the rate gaps (default 0)",
                     "width": "ramp width of the rate gaps (default 1)",
                     "loss": "logistic, hinge or squared", "l2": "coefficient of sum_squares(w) (default 0)",
                     "group_interactions": "true: the paper's features (1, xi, gamma, gamma xi) (default false)"}


def build(spec, t, data):
    kind = spec.get(t, "kind", "[problem]", "str", default="pdp", choices=["pdp", "weak_pdp", *RATES])
    band = spec.get(t, "band", "[problem]", "list", default=[0.0, 1.0])
    if len(band) != 2 or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in band) \
            or not 0 <= band[0] < band[1] <= 1:
        raise spec.error("[problem] band", f"must be two numbers [a, b] with 0 <= a < b <= 1; got {band!r}")
    kappa = spec.get(t, "kappa", "[problem]", "number", default=0.1)
    if not 0 <= kappa < 1:
        raise spec.error("[problem] kappa", f"must lie in [0, 1) (the allowed parity gap); got {kappa!r}")
    if "threshold" in t and kind == "pdp":
        raise spec.error("[problem] threshold", "only for kind = \"weak_pdp\" and the rate gaps")
    if kind in RATES and "band" in t:
        raise spec.error("[problem] band", "only for kind = \"pdp\" or \"weak_pdp\" (a rate gap counts every row)")
    if kind not in RATES and "width" in t:
        raise spec.error("[problem] width", "only for the rate gaps (selection_rate, equal_opportunity, "
                                            "equalized_odds)")
    if kind in RATES and not kappa > 0:
        raise spec.error("[problem] kappa", f"must be > 0 for a rate gap (IDCA needs a strictly feasible start); "
                                            f"got {kappa!r}")
    l2 = spec.get(t, "l2", "[problem]", "number", default=0.0)
    if not l2 >= 0:
        raise spec.error("[problem] l2", f"must be >= 0; got {l2!r}")
    if spec.get(t, "group_interactions", "[problem]", "bool", default=False):
        try:
            data = with_group_interactions(data)
        except DataError as exc:
            raise spec.error("[problem] group_interactions", str(exc)) from None
    w = build_weights(spec, data)
    s = data.score(w)
    objective = mean(build_loss(spec, t, data, w))
    if l2:
        objective = objective + l2 * sum_squares(w)
    if kind in RATES:
        width = spec.get(t, "width", "[problem]", "number", default=1.0)
        if not width > 0:
            raise spec.error("[problem] width", f"must be > 0; got {width!r}")
        atom = RATES[kind](s, data, surrogate="ramp", width=width,
                           threshold=spec.get(t, "threshold", "[problem]", "number", default=0.0))
        return Problem(Minimize(objective), [(atom <= kappa).named(kind)])
    if kind == "pdp":
        atom = partial_dp(s, data.groups, band=tuple(band))
    else:
        atom = weak_partial_dp(s, data.groups, band=tuple(band),
                                  threshold=spec.get(t, "threshold", "[problem]", "number", default=0.0))
    return Problem(Minimize(objective), [atom <= kappa])


DESCRIPTION = ("a convex loss under partial (weak) demographic parity in a rank band, or under the ramp surrogate of "
               "a gap in decision rates (IDCA)")
FAMILIES = {"partial_fairness": (build, KEYS, DESCRIPTION)}
