"""Problem files: a fair-learning problem as a TOML file (see :mod:`.spec` for the format).

``FAMILIES`` maps the name of the ``[problem] family`` key to ``(builder(spec, problem_table, data) -> Problem,
allowed keys of [problem] with their meaning, one-line description)``; one module per family holds its builder.
"""
from __future__ import annotations

from typing import NamedTuple

from ...crosscheck import crosscheck
from ...data.dataset import Dataset
from ...errors import FairmodelError
from ...minmax import SaddleProblem
from ...problem import Problem
from . import auc, composite, dp, group_risk, minmax, partial, strategic
from .spec import (DATA_KEYS, MODEL_KEYS, ProblemFileError, Spec, build_loss, build_weights,  # noqa: F401
                   file_backend, load_data, read, set_value, solve_options)

FAMILIES = {**group_risk.FAMILIES, **composite.FAMILIES, **dp.FAMILIES, **auc.FAMILIES, **partial.FAMILIES,
            **strategic.FAMILIES, **minmax.FAMILIES}


def build_problem(spec: Spec, data):
    """The Problem of the file's [problem] table."""
    t = spec.table("problem", {"family": "", **{k: v for _, keys, _ in FAMILIES.values() for k, v in keys.items()}})
    family = spec.get(t, "family", "[problem]", "str", choices=list(FAMILIES))
    if family is None:
        raise spec.error("[problem] family", f"missing; allowed values are {', '.join(FAMILIES)}")
    builder, allowed, _ = FAMILIES[family]
    spec.check_keys(t, {"family": "", **allowed}, f"[problem] (family {family})")
    try:
        problem = builder(spec, t, data)
    except ProblemFileError:
        raise
    except FairmodelError as exc:
        raise spec.error("[problem]", str(exc)) from None
    title = spec.doc.get("title")
    problem.title = str(title) if title else None        # names its results, cross-checks and plots
    return problem


def _family(spec: Spec):
    return spec.doc.get("problem", {}).get("family") if isinstance(spec.doc.get("problem"), dict) else None


def sweepable_keys(spec: Spec, backend: str) -> list[str]:
    """The dotted keys a sweep of this file may vary with ``backend`` (each takes effect in every solve)."""
    family = _family(spec)
    keys = [f"problem.{k}" for k in FAMILIES[family][1]] if family in FAMILIES else []
    if family not in minmax.DATALESS:
        keys += [f"data.{k}" for k in DATA_KEYS] + [f"model.{k}" for k in MODEL_KEYS]
    keys += ["solve.method"] if backend == file_backend(spec) else []
    keys += ["solve.seed"] if backend == "stochastic" else []
    return keys + [f"solve.{backend}.<option>"]


def check_sweepable(spec: Spec, key: str, backend: str) -> None:
    """Refuse a swept key that would not take effect, with the list of the ones that do."""
    keys = sweepable_keys(spec, backend)
    parts = key.split(".")
    ok = key in keys or (len(parts) == 3 and parts[:2] == ["solve", backend] and parts[2])
    if not ok:
        raise ProblemFileError(f"{spec.path.name}: cannot sweep {key!r} with the {backend} backend (it would not "
                               f"change the solve); sweepable keys are {', '.join(keys)}")


def load_spec(spec: Spec):
    """(problem, data) of a read problem file; data is None for a family that needs none (a min-max game)."""
    if _family(spec) in minmax.DATALESS:
        if "data" in spec.doc or "model" in spec.doc:
            raise spec.error("[data]" if "data" in spec.doc else "[model]", f"the {_family(spec)} family takes no "
                             f"data and no model; remove the table")
        return build_problem(spec, None), None
    data = load_data(spec)
    return build_problem(spec, data), data


def load(path):
    """(problem, data, spec) of a problem file (the command line's reading; the public one is :func:`load_problem`)."""
    spec = read(path)
    return (*load_spec(spec), spec)


class ProblemFile(NamedTuple):
    """A problem file loaded by :func:`load_problem`: unpacks as ``problem, data, options``.

    ``problem``: the :class:`~fairmodel.Problem` (or :class:`~fairmodel.SaddleProblem` of a min-max family) the
    file declares, titled with its ``title``; ``data``: the :class:`~fairmodel.Dataset` of its ``[data]`` table
    (``None`` for a family that takes no data); ``options``: its ``[solve]`` tables as keyword arguments,
    ``{"backend": ..., "exact": {...}, "stochastic": {...}}`` (the stochastic ones include the seed).
    :meth:`solve` and :meth:`crosscheck` use them as ``fairmodel solve`` and ``fairmodel crosscheck`` do.
    """

    problem: Problem | SaddleProblem
    data: Dataset | None
    options: dict

    def solve(self, backend: str | None = None, **options):
        """``problem.solve`` with the file's options of ``backend`` (default: the file's ``[solve] backend``, else
        exact); keyword arguments given here replace the file's."""
        backend = backend or self.options["backend"]
        return self.problem.solve(backend=backend, **{**self.options[backend], **options})

    def crosscheck(self, **common):
        """:func:`fairmodel.crosscheck` of the problem with the file's options of each backend and seed."""
        stochastic = dict(self.options["stochastic"])
        return crosscheck(self.problem, seed=stochastic.pop("seed"), exact_options=dict(self.options["exact"]),
                          stochastic_options=stochastic, **common)


def load_problem(path) -> ProblemFile:
    """Read a problem file (TOML: see the 'Command line' page of the documentation) into ``(problem, data,
    options)``: the same problem the ``fairmodel`` command solves. Any wrong key, type or value raises
    :class:`~fairmodel.DataError` naming the file, the key and the allowed values.

    >>> prob, data, _ = fm.load_problem("examples/problems/group_dro_adult.toml")   # doctest: +SKIP
    >>> fm.load_problem("examples/problems/group_dro_adult.toml").crosscheck()     # doctest: +SKIP
    """
    problem, data, spec = load(path)
    options = {"backend": file_backend(spec), "exact": solve_options(spec, "exact"),
               "stochastic": solve_options(spec, "stochastic")}
    return ProblemFile(problem, data, options)
