"""Problem files: a fair-learning problem as a TOML file (see :mod:`.spec` for the format).

``FAMILIES`` maps the name of the ``[problem] family`` key to ``(builder(spec, problem_table, data) -> Problem,
allowed keys of [problem] with their meaning, one-line description)``; one module per family holds its builder.
"""
from __future__ import annotations

from ...errors import FairmodelError
from . import auc, composite, dp, group_risk, partial, strategic
from .spec import (ProblemFileError, Spec, build_loss, build_weights, load_data, read,  # noqa: F401
                   set_value, solve_options)

FAMILIES = {**group_risk.FAMILIES, **composite.FAMILIES, **dp.FAMILIES, **auc.FAMILIES, **partial.FAMILIES,
            **strategic.FAMILIES}


def build_problem(spec: Spec, data):
    """The Problem of the file's [problem] table."""
    t = spec.table("problem", {"family": "", **{k: v for _, keys, _ in FAMILIES.values() for k, v in keys.items()}})
    family = spec.get(t, "family", "[problem]", "str", choices=list(FAMILIES))
    if family is None:
        raise spec.error("[problem] family", f"missing; allowed values are {', '.join(FAMILIES)}")
    builder, allowed, _ = FAMILIES[family]
    spec.check_keys(t, {"family": "", **allowed}, f"[problem] (family {family})")
    try:
        return builder(spec, t, data)
    except ProblemFileError:
        raise
    except FairmodelError as exc:
        raise spec.error("[problem]", str(exc)) from None


def load(path):
    """(problem, data, spec) of a problem file."""
    spec = read(path)
    data = load_data(spec)
    return build_problem(spec, data), data, spec
