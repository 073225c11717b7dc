"""Problem files of partial fairness in a rank band (family ``partial_fairness``)."""
from __future__ import annotations

import numbers

from ...errors import DataError
from ...expressions import mean, sum_squares
from ...expressions.atoms.partial import partial_dp, weak_partial_dp, with_group_interactions
from ...problem import Minimize, Problem
from .spec import build_loss, build_weights

KEYS = {"kind": "pdp (model (13), default) or weak_pdp (model (17))",
                     "band": "rank band [a, b], 0 <= a < b <= 1 (default [0, 1])",
                     "kappa": "allowed parity gap, 0 <= kappa < 1 (default 0.1)",
                     "threshold": "decision threshold of weak_pdp (default 0)",
                     "loss": "logistic, hinge or squared", "l2": "coefficient of sum_squares(w) (default 0)",
                     "group_interactions": "true: the paper's features (1, xi, gamma, gamma xi) (default false)"}


def build(spec, t, data):
    kind = spec.get(t, "kind", "[problem]", "str", default="pdp", choices=["pdp", "weak_pdp"])
    band = spec.get(t, "band", "[problem]", "list", default=[0.0, 1.0])
    if len(band) != 2 or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in band) \
            or not 0 <= band[0] < band[1] <= 1:
        raise spec.error("[problem] band", f"must be two numbers [a, b] with 0 <= a < b <= 1; got {band!r}")
    kappa = spec.get(t, "kappa", "[problem]", "number", default=0.1)
    if not 0 <= kappa < 1:
        raise spec.error("[problem] kappa", f"must lie in [0, 1) (the allowed parity gap); got {kappa!r}")
    if "threshold" in t and kind != "weak_pdp":
        raise spec.error("[problem] threshold", "only for kind = \"weak_pdp\"")
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
    if kind == "pdp":
        atom = partial_dp(s, data.groups, band=tuple(band))
    else:
        atom = weak_partial_dp(s, data.groups, band=tuple(band),
                                  threshold=spec.get(t, "threshold", "[problem]", "number", default=0.0))
    return Problem(Minimize(objective), [atom <= kappa])


DESCRIPTION = ("a convex loss under partial (weak) demographic parity in a rank band (IDCA)")
FAMILIES = {"partial_fairness": (build, KEYS, DESCRIPTION)}
