"""Problem files of AUC maximization under AUC-based fairness constraints (family ``auc_fairness``)."""
from __future__ import annotations

from ...expressions.atoms.auc import auc_gap, auc_loss
from ...expressions.models import SigmoidMLP
from ...problem import Minimize, Problem
from .spec import build_weights

KEYS = {"kind": "fairness preset: group, inter, intra, pos_avg_eq, neg_avg_eq, bpsn_bnsp (default intra)",
                     "kappa": "fairness budget (default 0.05); omit the constraint with kappa = \"none\"",
                     "c1": "square surrogate c1 (default 0.5)", "c2": "square surrogate c2 (default 1)",
                     "alpha_quad_coef": "c1 (default) or paper_literal", "protected": "the protected group name",
                     "hidden": "hidden units of a sigmoid network (omit for a linear score)"}


def build(spec, t, data):
    hidden = spec.get(t, "hidden", "[problem]", "int", positive=True)
    if hidden is None:
        model = build_weights(spec, data)
    else:
        radius = spec.table("model", {"radius": ""}, required=False).get("radius")
        model = SigmoidMLP(data.n_features, hidden=hidden, radius=radius)
    s = data.score(model)
    atom = {"c1": spec.get(t, "c1", "[problem]", "number", default=0.5, positive=True),
            "c2": spec.get(t, "c2", "[problem]", "number", default=1.0, positive=True),
            "alpha_quad_coef": spec.get(t, "alpha_quad_coef", "[problem]", "str", default="c1",
                                        choices=["c1", "paper_literal"])}
    constraints = []
    if t.get("kappa") != "none":
        kappa = spec.get(t, "kappa", "[problem]", "number", default=0.05)
        gap = auc_gap(s, data, kind=spec.get(t, "kind", "[problem]", "str", default="intra"),
                         protected=spec.get(t, "protected", "[problem]", "str"), **atom)
        constraints.append(gap <= kappa)
    return Problem(Minimize(auc_loss(s, data.y, **atom)), constraints)


DESCRIPTION = ("AUC maximization under an AUC-based fairness constraint (SFLS / IQRC)")
FAMILIES = {"auc_fairness": (build, KEYS, DESCRIPTION)}
