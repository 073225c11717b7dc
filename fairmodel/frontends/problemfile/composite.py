"""Problem files of compositions that no single paper covers (family ``composition``): a group-DRO or mean-risk
objective under a fairness constraint, solved exactly as one CVXPY program and stochastically by the generic
primal-dual lowering.

Constraints (``constraint =``):

* ``equal_opportunity``: the linear surrogate of equal opportunity of Donini et al. 2018: the mean scores of the
  positives of the groups differ by at most ``bound``: ``max(m) - min(m) <= bound`` with
  ``m = group_mean(score, groups, where=y > 0)``;
* ``equalized_odds``: the linear surrogate of equalized odds of Donini et al. 2018: the same spread of the groups'
  mean scores, on the positives and on the negatives, at most ``bound`` (``fm.equalized_odds_gap``);
* ``auc_gap``: the surrogate AUC-fairness gap of a preset (``kind``, default ``intra``; Yao, Lin, Yang) at most
  ``bound``;
* ``covariance``: the decision-boundary covariance of Zafar et al. 2017: for every group g (all but the first
  when there are two), ``|mean((1[group = g] - p_g) score)| <= bound``;
* ``group_loss``: bounded group loss (Agarwal, Dudik, Wu 2019): every group's risk at most ``bound``.
"""
from __future__ import annotations

import numpy as np

from ... import expressions as dsl
from ...expressions.atoms.auc import auc_gap
from ...problem import Minimize, Problem
from .spec import build_loss, build_weights

OBJECTIVES = ("max_group_risk", "mean_risk")
CONSTRAINTS = ("equal_opportunity", "equalized_odds", "auc_gap", "covariance", "group_loss", "none")
KEYS = {"objective": "max_group_risk (group DRO, default) or mean_risk", "loss": "logistic, hinge or squared",
        "constraint": "equal_opportunity, equalized_odds, auc_gap, covariance, group_loss or none (default "
                      "equal_opportunity)",
        "bound": "the constraint's bound (default 0.05)", "kind": "auc_gap preset (default intra)"}
DESCRIPTION = ("group DRO or mean risk under a fairness constraint (equal opportunity, AUC gap, covariance, "
               "bounded group loss): one CVXPY program and the generic stochastic primal-dual lowering")


def constraints_of(kind: str, data, score, risks, bound: float, preset: str = "intra") -> list:
    """The constraints named ``kind`` on ``data`` for the score and the group risks (see the module docstring)."""
    if kind == "equal_opportunity":
        m = dsl.group_mean(score, data.groups, where=data.y > 0)
        return [(dsl.max(m) - dsl.min(m) <= bound).named("equal_opportunity")]
    if kind == "equalized_odds":
        return [(dsl.equalized_odds_gap(score, data) <= bound).named("equalized_odds")]
    if kind == "auc_gap":
        return [(auc_gap(score, data, kind=preset) <= bound).named(f"auc_gap_{preset}")]
    if kind == "covariance":
        codes = data.groups.codes
        groups = range(1, data.n_groups) if data.n_groups == 2 else range(data.n_groups)
        out = []
        for g in groups:
            z = (codes == g).astype(float)
            name = f"covariance_{data.groups.names[g]}"
            out.append((dsl.abs(dsl.mean((z - z.mean()) * score)) <= bound).named(name.replace(" ", "_")))
        return out
    if kind == "group_loss":
        return [(dsl.max(risks) <= bound).named("group_loss")]
    return []


def build(spec, t, data):
    if data.y is None or not data.has_groups:
        raise spec.error("[data]", "a composition needs a target and a sensitive attribute")
    w = build_weights(spec, data)
    score = data.score(w)
    loss = build_loss(spec, t, data, w)
    risks = dsl.group_mean(loss, data.groups)
    objective = spec.get(t, "objective", "[problem]", "str", default="max_group_risk", choices=list(OBJECTIVES))
    kind = spec.get(t, "constraint", "[problem]", "str", default="equal_opportunity", choices=list(CONSTRAINTS))
    bound = spec.get(t, "bound", "[problem]", "number", default=0.05)
    preset = spec.get(t, "kind", "[problem]", "str", default="intra")
    if "kind" in t and kind != "auc_gap":
        raise spec.error("[problem] kind", "only for constraint = \"auc_gap\"")
    target = dsl.max(risks) if objective == "max_group_risk" else dsl.mean(loss)
    return Problem(Minimize(target), constraints_of(kind, data, score, risks, float(np.asarray(bound)), preset))


FAMILIES = {"composition": (build, KEYS, DESCRIPTION)}
