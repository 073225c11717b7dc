"""Problem files of the group-risk families: ``gdro`` (max_g R_g), ``mero`` (max_g R_g - R*_g), ``erm``."""
from __future__ import annotations

from ...expressions import group_mean, group_optimal, max, mean
from ...problem import Minimize, Problem
from .spec import build_loss, build_weights

KEYS = {"loss": "logistic, hinge or squared"}


def builder(kind: str):
    def build(spec, t, data):
        loss = build_loss(spec, t, data, build_weights(spec, data))
        if kind == "erm":
            return Problem(Minimize(mean(loss)))
        risks = group_mean(loss, data.groups)
        if kind == "mero":
            return Problem(Minimize(max(risks - group_optimal(risks))))
        return Problem(Minimize(max(risks)))
    return build


FAMILIES = {
    "gdro": (builder("gdro"), KEYS, "group DRO: max_g R_g(w)"),
    "mero": (builder("mero"), KEYS, "MERO: max_g R_g(w) - R*_g"),
    "erm": (builder("erm"), KEYS, "ERM: mean loss"),
}
