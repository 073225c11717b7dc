"""Problem files of compositions that no single paper covers (family ``composition``): an objective under fairness
constraints, solved exactly as one CVXPY program and stochastically by the generic primal-dual lowering.

Objectives (``objective =``): ``max_group_risk`` (group DRO: the largest group mean of the loss), ``mean_risk``
(the mean loss), or a DSL expression (:mod:`.expression`), e.g. ``"mean(loss) + 0.01 * sum_squares(w)"``.

Constraints (``constraint =``, required; ``"none"`` for none), each at most ``bound``:

* ``demographic_parity``: the linear surrogate of demographic parity: the groups' mean scores differ by at most
  ``bound``, ``max(m) - min(m) <= bound`` with ``m = group_mean(score, groups)``;
* ``equal_opportunity``: the linear surrogate of equal opportunity of Donini et al. 2018: the same spread of the
  groups' mean scores on the positives, ``m = group_mean(score, groups, where=y > 0)``;
* ``equalized_odds``: the linear surrogate of equalized odds of Donini et al. 2018: the same spread, on the
  positives and on the negatives (``fm.equalized_odds_gap``);
* ``auc_gap``: the surrogate AUC-fairness gap of a preset (``kind``, default ``intra``; Yao, Lin, Yang 2023);
* ``covariance``: the decision-boundary covariance of Zafar et al. 2017: for every group g (all but the first
  when there are two), ``|mean((1[group = g] - p_g) score)| <= bound``;
* ``group_loss``: bounded group loss (Agarwal, Dudik, Wu 2019): every group's risk at most ``bound``.

More constraints as DSL expressions in the table ``[problem.constraints]`` (name = "expression"), e.g.
``top = "max(group_mean(loss, groups)) <= 0.4"``.
"""
from __future__ import annotations

import numpy as np

from ... import expressions as dsl
from ...errors import FairmodelError
from ...expressions.atoms.auc import auc_gap
from ...problem import Minimize, Problem
from . import expression
from .spec import build_loss, build_weights

OBJECTIVES = ("max_group_risk", "mean_risk")
COMPARING = ("demographic_parity", "equal_opportunity", "equalized_odds", "auc_gap", "covariance")
CONSTRAINTS = ("demographic_parity", "equal_opportunity", "equalized_odds", "auc_gap", "covariance", "group_loss",
               "none")
KEYS = {"objective": "max_group_risk (group DRO), mean_risk, or a DSL expression such as \"mean(loss) + 0.01 * "
                     "sum_squares(w)\" (default max_group_risk)",
        "loss": "logistic, hinge or squared",
        "constraint": "demographic_parity, equal_opportunity, equalized_odds, auc_gap, covariance, group_loss or none "
                      "(required)",
        "bound": "the constraint's bound (default 0.05)", "kind": "auc_gap preset (default intra)",
        "constraints": "a table of more constraints, name = \"DSL expression\" (e.g. top = \"max(group_mean(loss, "
                       "groups)) <= 0.4\")"}
DESCRIPTION = ("an objective (group DRO, mean risk or a DSL expression) under fairness constraints (demographic "
               "parity, equal opportunity, equalized odds, AUC gap, covariance, bounded group loss, DSL expressions): "
               "one CVXPY program and the generic stochastic primal-dual lowering")


def _spread(score, groups, where=None):
    m = dsl.group_mean(score, groups, where=where)
    return dsl.max(m) - dsl.min(m)


def constraints_of(kind: str, data, score, risks, bound: float, preset: str = "intra") -> list:
    """The constraints named ``kind`` on ``data`` for the score and the group risks (see the module docstring)."""
    if kind == "demographic_parity":
        return [(_spread(score, data.groups) <= bound).named("demographic_parity")]
    if kind == "equal_opportunity":
        return [(_spread(score, data.groups, data.y > 0) <= bound).named("equal_opportunity")]
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
    names = {"w": w, "score": score, "loss": loss, "y": np.asarray(data.y), "groups": data.groups, "data": data}
    objective = spec.get(t, "objective", "[problem]", "str", default="max_group_risk")
    if objective in OBJECTIVES:
        target = dsl.max(risks) if objective == "max_group_risk" else dsl.mean(loss)
    else:
        target = _parsed(spec, "[problem] objective", lambda: expression.objective_of(objective, names))
    table = t.get("constraints", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise spec.error("[problem] constraints", "must be a table of name = \"DSL expression\"")
    kind = spec.get(t, "constraint", "[problem]", "str", default="none" if table else None, choices=list(CONSTRAINTS))
    if kind is None:
        raise spec.error("[problem] constraint", f"missing; choose one of {', '.join(CONSTRAINTS)} (\"none\" for "
                                                 f"no preset constraint), or give [problem.constraints]")
    bound = spec.get(t, "bound", "[problem]", "number", default=0.05)
    preset = spec.get(t, "kind", "[problem]", "str", default="intra")
    if "kind" in t and kind != "auc_gap":
        raise spec.error("[problem] kind", "only for constraint = \"auc_gap\"")
    if "bound" in t and kind == "none":
        raise spec.error("[problem] bound", "no preset constraint takes it (constraint = \"none\")")
    if kind in COMPARING and data.n_groups < 2:
        raise spec.error("[problem] constraint", f"{kind} compares groups, but the sensitive attribute has one group "
                                                 f"({data.groups.names[0]!r}): the constraint would always hold. Give "
                                                 f"a sensitive column with two or more groups, or constraint = "
                                                 f"\"group_loss\" or \"none\"")
    constraints = constraints_of(kind, data, score, risks, float(np.asarray(bound)), preset)
    for name, text in table.items():
        made = _parsed(spec, f"[problem.constraints] {name}", lambda text=text: expression.constraint_of(text, names))
        constraints.append(made.named(name))
    return Problem(Minimize(target), constraints)


def _parsed(spec, key: str, make):
    try:
        return make()
    except FairmodelError as exc:
        raise spec.error(key, str(exc)) from None


FAMILIES = {"composition": (build, KEYS, DESCRIPTION)}
