"""Problem files of strategic Wasserstein DRO (family ``strategic_dro``)."""
from __future__ import annotations

from ...expressions import logistic_loss
from ...expressions.atoms.strategic import strategic_score, wasserstein_worst_case
from ...problem import Minimize, Problem
from .spec import build_weights

KEYS = {"loss": "logistic (the only loss of Theorem 5.3's form)",
                     "strategic_features": "list of feature names (or indices) the -1 agents can move",
                     "zeta": "the agents' strategic power (default 0.05)",
                     "wasserstein_radius": "the transport budget delta (default 0.1)",
                     "label_cost": "kappa: a label flip costs 2 kappa (default 0.5)",
                     "variant": "corrected (default) or paper", "alpha_max": "bound on alpha (default log 2/delta)"}


def build(spec, t, data):
    spec.get(t, "loss", "[problem]", "str", default="logistic", choices=["logistic"])
    w = build_weights(spec, data)
    score = strategic_score(data, w, spec.get(t, "strategic_features", "[problem]", "list", default=[]),
                               zeta=spec.get(t, "zeta", "[problem]", "number", default=0.05))
    atom = wasserstein_worst_case(
        logistic_loss(score, data.y),
        radius=spec.get(t, "wasserstein_radius", "[problem]", "number", default=0.1, positive=True),
        label_cost=spec.get(t, "label_cost", "[problem]", "number", default=0.5, positive=True),
        variant=spec.get(t, "variant", "[problem]", "str", default="corrected", choices=["corrected", "paper"]),
        alpha_max=spec.get(t, "alpha_max", "[problem]", "number", positive=True))
    return Problem(Minimize(atom))


DESCRIPTION = ("strategic Wasserstein DRO: sup over a Wasserstein ball of the logistic risk after the agents' best "
               "response")
FAMILIES = {"strategic_dro": (build, KEYS, DESCRIPTION)}
