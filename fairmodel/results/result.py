"""Results of a solve, saved as JSON + NPZ (never pickle).

``result.save("run")`` writes ``run.json`` (everything but arrays, with a format tag and schema version)
and ``run.npz`` (the variables, the history columns and any array-valued metric); the suffixes are appended to
the name given (``run_eps0.01`` gives ``run_eps0.01.json``). Both files carry one random id and are saved as one
unit (:func:`fairmodel.utilities.outputs.save_files`: written aside, then moved into place together), so an
interrupted or concurrent save never leaves a mixed pair or a temporary file. Existing results are kept unless
``overwrite=True``, also when another save takes the name while this one writes. ``fm.load_result`` reads a pair
back and refuses files that are missing, corrupt, not written by fairmodel, from two different saves, or not of the
documented schema (types, shapes, statuses; object arrays are never loaded).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ResultFileError
from ..families.base import certificate_missing
from ..families.registry import by_name
from ..utilities import display
from ..utilities.outputs import check_free as check_names_free
from ..utilities.outputs import save_files
from ..utilities.validate import check_bool, check_problem, nesting_depth
from .schema import validate_fields

FORMAT = "fairmodel.result"
SCHEMA = 1                 # of the JSON document of a result (to_dict; the command line's output, docs/schema-v1.json)
FILE_SCHEMA = 2            # of a saved result: 2, the digest covers every field and array (1: the arrays only)
MAX_NESTING = 64           # JSON nested deeper is not a saved result (a result nests about 6 deep)
HEADLINE_METRICS = ("risk", "entropy_term")   # shown by summary() and the cross-check table when a family has them
OK_STATUSES = ("optimal", "optimal_inaccurate", "converged", "completed", "budget_exhausted")
STATUSES = OK_STATUSES + ("inaccurate", "infeasible", "unverified", "unbounded", "diverged", "failed",
                          "interrupted")


@dataclass
class Result:
    """The outcome of ``Problem.solve``.

    ``objective``, ``constraints``, ``metrics`` and ``certificate`` are the judge's evaluation on the
    full data. ``checks`` are the judge's checks that decided ``ok`` (name, value, tolerance, passed, kind,
    reason). ``status`` is one of ``optimal``, ``optimal_inaccurate`` (exact solvers, confirmed by a certificate),
    ``converged``, ``completed``, ``budget_exhausted`` (stochastic: the iteration budget ran out, which is the
    normal end of a fixed-budget run) when the judge's checks pass; ``infeasible`` (a judged constraint violation
    beyond its tolerance) or ``inaccurate`` (a certificate beyond its tolerance or contradicting itself, or an
    inaccurate exact solve no certificate confirms), whatever the solver's loop said; ``unverified`` (no check of the judge could be
    computed); ``unbounded`` (the objective has no finite minimum on the declared domain); ``diverged``,
    ``failed`` or ``interrupted`` (with ``message``).
    """

    status: str
    objective: float
    variables: dict = field(default_factory=dict)
    constraints: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    certificate: dict = field(default_factory=dict)
    history: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    solver: dict = field(default_factory=dict)
    seed: int | None = None
    backend: str = ""
    method: str = ""
    family: str = ""
    message: str = ""
    problem: str = ""
    checks: list = field(default_factory=list)
    name: str = ""

    @classmethod
    def from_parts(cls, *, backend, method, family, seed, solution, evaluation, timings, problem_text,
                   checks=(), name: str = ""):
        metrics = {**solution.metrics, **evaluation.metrics}
        certificate = {**solution.certificate, **evaluation.certificate}
        return cls(status=solution.status, objective=float(evaluation.objective),
                   variables=dict(solution.variables), constraints=evaluation.constraints, metrics=metrics,
                   certificate=certificate, history=list(solution.history), timings=timings,
                   solver=dict(solution.solver), seed=_seed_value(seed), backend=backend, method=method,
                   family=family, message=solution.message, problem=problem_text, checks=list(checks), name=name)

    @property
    def ok(self) -> bool:
        """True when the solver ended normally, at least one check of the judge was computed, every computed check
        passed and, where the result has a certificate, it was computed (see docs/ok.md): a result without a
        computed check is never ok."""
        computed = [c for c in self.checks if c["value"] == c["value"]]
        return (self.status in OK_STATUSES and bool(computed) and all(c["passed"] for c in computed)
                and not certificate_missing([(c.get("kind"), c["value"] == c["value"]) for c in self.checks]))

    @property
    def label(self) -> str:
        """What the result is of, for headings: the problem's ``name`` (its title and kind), else the family."""
        return self.name or self.family

    def failed_checks(self) -> list[dict]:
        return [c for c in self.checks if not c["passed"] and c["value"] == c["value"]]

    @property
    def max_violation(self) -> float:
        return max((c["violation"] for c in self.constraints.values()), default=0.0)

    def history_column(self, key: str) -> np.ndarray:
        """One column of the history (``nan`` where a record lacks the key)."""
        return np.array([rec.get(key, np.nan) for rec in self.history], dtype=float)

    def predictor(self):
        """A fitted predictor built from this result (families that have one, e.g. DP post-processing)."""
        return by_name(self.family).predictor(self)

    def summary(self) -> str:
        """The status, the objective (and what it is, when the family says), the headline metrics (the risk next
        to a regularized objective, the group risks), constraints, certificates and the time."""
        kind = self.metrics.get("objective_kind")
        lines = [f"{self.label} / {self.backend} / {self.method}: status {self.status}",
                 f"  objective      {self.objective:.6g}" + (f"   ({kind})" if isinstance(kind, str) else "")]
        lines += [f"  {name.replace('_', ' '):<14} {self.metrics[name]:.6g}" for name in HEADLINE_METRICS
                  if isinstance(self.metrics.get(name), (int, float))]
        groups = self.metrics.get("group_risks")
        if isinstance(groups, dict):
            lines.append("  group risks    " + ", ".join(f"{g}: {v:.4g}" for g, v in groups.items()))
        for name, c in self.constraints.items():
            lines.append(f"  {name:<14} {c['value']:.6g} <= {c['bound']:.6g} (violation {c['violation']:.2g})")
        for name, v in self.certificate.items():
            lines.append(f"  {name:<14} {v:.6g}")
        lines.append(f"  time           {self.timings.get('solve', float('nan')):.3g} s")
        if self.message:
            lines.append(f"  note: {self.message}")
        return "\n".join(lines)

    __str__ = summary

    # -- persistence ------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-ready dict (arrays as nested lists)."""
        return {"format": FORMAT, "schema": SCHEMA, **_jsonable(self._fields(), None)}

    def _fields(self) -> dict:
        return {"status": self.status, "objective": self.objective, "variables": self.variables,
                "constraints": self.constraints, "metrics": self.metrics, "certificate": self.certificate,
                "history": _history_columns(self.history), "timings": self.timings, "solver": self.solver,
                "seed": self.seed, "backend": self.backend, "method": self.method, "family": self.family,
                "message": self.message, "problem": self.problem, "checks": self.checks, "name": self.name}

    def save(self, path, overwrite: bool = False) -> tuple[Path, Path]:
        """Write ``<path>.json`` and ``<path>.npz`` (suffixes appended) as one unit; returns both paths.

        Refuses to replace an existing result unless ``overwrite=True``.
        """
        json_path, npz_path = result_paths(path)
        replace = check_bool(overwrite, "overwrite", error=ResultFileError)
        if not replace:
            check_free(path)
        save_files(json_path.parent, self.writers(json_path.stem), replace=replace)
        return json_path, npz_path

    def writers(self, name: str) -> dict:
        """``{name.json: write, name.npz: write}``: the two files of this result with one id, for
        :func:`~fairmodel.utilities.outputs.save_files` (which :meth:`save` calls; the command line saves several
        results as one unit with it)."""
        save_id = uuid.uuid4().hex
        arrays: dict[str, np.ndarray] = {}
        doc = {"format": FORMAT, "schema": FILE_SCHEMA, "id": save_id, **_jsonable(self._fields(), arrays)}
        doc["digest"] = _digest(doc, arrays)
        arrays[ID_KEY] = np.array(save_id)
        text = json.dumps(doc, indent=1, allow_nan=True).encode()
        return {f"{name}.json": lambda f: f.write(text), f"{name}.npz": lambda f: np.savez_compressed(f, **arrays)}

    # -- notebook display ---------------------------------------------------------------------------------
    def __repr__(self):
        ok = "ok" if self.ok else "NOT ok"
        return display.short(f"<fairmodel.Result {self.label} / {self.backend} / {self.method}: {self.status} ({ok}), "
                              f"objective {display.fmt(self.objective, 6)}, max violation "
                              f"{display.fmt(self.max_violation, 2)}; .summary() / .to_markdown() for the rest>")

    def _table_rows(self) -> list:
        rows = [["status", self.status + ("" if self.ok else f" ({self.message})" if self.message else "")],
                ["objective", display.fmt(self.objective, 6)]]
        rows += [[name.replace("_", " "), display.fmt(self.metrics[name], 6)] for name in HEADLINE_METRICS
                 if isinstance(self.metrics.get(name), (int, float))]
        rows += [[f"constraint {k}", f"{display.fmt(c['value'], 6)} <= {display.fmt(c['bound'], 6)}"]
                 for k, c in self.constraints.items()]
        rows += [[k, display.fmt(v, 4)] for k, v in self.certificate.items() if np.ndim(v) == 0]
        rows += [["solve time (s)", display.fmt(self.timings.get("solve"), 3)]]
        return rows

    def to_markdown(self) -> str:
        """The result as a Markdown table (status, objective, constraints, certificates, time)."""
        return (f"**{self.label}** / {self.backend} / {self.method}\n\n"
                + display.md_table(["", "value"], self._table_rows()))

    def _repr_markdown_(self):
        return self.to_markdown()

    def _repr_html_(self):
        return display.html_table(["", "value"], self._table_rows(),
                                   caption=f"{self.label} / {self.backend} / {self.method}")


ID_KEY = "__id__"


def result_paths(path) -> tuple[Path, Path]:
    """The ``.json`` and ``.npz`` paths of a result saved under ``path`` (a trailing .json/.npz is dropped)."""
    base = _base(path)
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".npz")


def check_free(path) -> None:
    """Raise :class:`ResultFileError` if a result is already saved under ``path`` (checked before long work)."""
    json_path, npz_path = result_paths(path)
    check_names_free(json_path.parent, [json_path.name, npz_path.name])


def load_result(path, problem=None) -> Result:
    """Read a result written by :meth:`Result.save` (give the name used to save, or the ``.json`` path).

    The pair is refused when any field or array changed after saving (the JSON file holds a digest of both, and a
    pair without one is refused), when a saved check's verdict does not follow from its value and tolerance, or
    when the saved status contradicts the saved checks or objective (an ok status with a failing check or a
    non-finite objective); a result saved without any computed check loads as ``unverified``. With ``problem=``,
    the declared variables must be in the file with the declared shapes.
    """
    json_path, npz_path = result_paths(path)
    if problem is not None:
        check_problem(problem, "load_result(problem=)", ("variables",), "a fm.Problem (whose variables the file must "
                                                                       "hold)")
    for p in (json_path, npz_path):
        if not p.exists():
            raise ResultFileError(f"{p} does not exist; a saved result is a .json file and a .npz file side by side")
        if not p.is_file():
            raise ResultFileError(f"{p} is not a file; a saved result is a .json file and a .npz file side by side")
    try:
        with open(json_path) as f:
            doc = json.load(f)
    except RecursionError:
        raise ResultFileError(f"{json_path} nests lists or tables too deeply to be a saved result; the file is "
                              f"corrupt") from None
    except ValueError as exc:        # invalid JSON, text that is not UTF-8, an integer of thousands of digits
        raise ResultFileError(f"{json_path} is not valid JSON ({exc}); the file is corrupt") from None
    except OSError as exc:
        raise ResultFileError(f"{json_path} could not be read: {exc.strerror or exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResultFileError(f"{json_path} was not written by fairmodel (no format tag {FORMAT!r})")
    if doc.get("schema") != FILE_SCHEMA:
        raise ResultFileError(f"{json_path} has schema {display.short(repr(doc.get('schema')))}; this fairmodel "
                              f"reads schema {FILE_SCHEMA} (earlier files: load them with the fairmodel that saved "
                              f"them, or re-run the solve)")
    if nesting_depth(doc, MAX_NESTING) > MAX_NESTING:
        raise ResultFileError(f"{json_path} nests lists or tables more than {MAX_NESTING} deep; a saved result does "
                              f"not: the file is corrupt")
    if not isinstance(doc.get("digest"), str) or not isinstance(doc.get("id"), str):
        raise ResultFileError(f"{json_path} has no {'digest' if not isinstance(doc.get('digest'), str) else 'id'}: "
                              f"every saved result carries both, so the file was edited or not saved by "
                              f"Result.save; re-run the solve or restore the file")
    try:
        with np.load(npz_path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except ValueError as exc:
        raise ResultFileError(f"{npz_path} holds object arrays or is corrupt ({exc}); fairmodel never loads "
                              f"pickled data") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ResultFileError(f"{npz_path} could not be read ({exc or type(exc).__name__}); the file is corrupt or "
                              f"empty") from None
    npz_id = arrays.pop(ID_KEY, None)
    if npz_id is None or str(npz_id) != doc["id"]:
        raise ResultFileError(f"{json_path} and {npz_path} come from different saves (their ids differ); "
                              f"the pair was mixed, e.g. by an interrupted or concurrent save")
    try:
        fields = _restore(doc, arrays)
        fields = {k: v for k, v in fields.items() if k not in ("format", "schema", "id", "digest")}
        validate_fields(fields, str(json_path), STATUSES)
        history = _history_records(fields.pop("history"))
        result = Result(history=history, **fields)
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultFileError(f"{json_path} is incomplete or inconsistent with {npz_path}: {exc}") from None
    _check_status(result, str(json_path))
    digest = doc.pop("digest")
    if digest != _digest(doc, arrays):
        raise ResultFileError(f"{json_path} or {npz_path} was changed after it was saved (the fields and arrays do "
                              f"not match the digest in {json_path}); re-run the solve or restore the file")
    if problem is not None:
        _check_declared(result, problem, str(json_path))
    return result


def _check_status(result: Result, where: str) -> None:
    """Refuse checks whose verdict does not follow from their numbers and an ok status that the checks contradict;
    a result with no computed check (saved by an older version) becomes ``unverified``."""
    for c in result.checks:
        if c["passed"] != bool(c["value"] <= c.get("tolerance", math.nan)):
            raise ResultFileError(f"{where}: the check {c['name']!r} says passed={c['passed']} but its value "
                                  f"{c['value']:.3g} and tolerance {c.get('tolerance', math.nan):.3g} say otherwise; "
                                  f"the file was edited")
    if result.status not in OK_STATUSES:
        return
    if not math.isfinite(result.objective):
        raise ResultFileError(f"{where}: the status {result.status!r} says ok, but the objective is "
                              f"{result.objective}; a judged ok result has a finite objective: the file was edited")
    failed = [c for c in result.checks if c["value"] == c["value"] and not c["passed"]]
    if failed:
        raise ResultFileError(f"{where}: the status {result.status!r} says ok, but the saved checks failed ("
                              + "; ".join(f"{c['name']} = {c['value']:.3g} > {c['tolerance']:.3g}" for c in failed)
                              + "); the file was edited")
    if not any(c["value"] == c["value"] for c in result.checks):
        result.message = (f"saved as {result.status!r} without any computed check of the judge; "
                          f"{result.message}").rstrip("; ")
        result.status = "unverified"


def _check_declared(result: Result, problem, where: str) -> None:
    for w in problem.variables():
        if getattr(w, "shape", None) is None:
            continue
        if w.name not in result.variables:
            raise ResultFileError(f"{where} has no variable {w.name!r} of the problem; it holds "
                                  f"{sorted(result.variables)}: it is a result of another problem")
        shape = np.shape(result.variables[w.name])
        if shape != tuple(w.shape):
            raise ResultFileError(f"{where}: the variable {w.name!r} has shape {shape}; the problem declares "
                                  f"{tuple(w.shape)}: it is a result of another problem")


def _digest(doc: dict, arrays: dict) -> str:
    """SHA-256 of the JSON fields (``doc`` without its digest, keys sorted) and of the arrays (names, dtypes, shapes
    and bytes, in name order): detects an edited JSON or NPZ file."""
    h = hashlib.sha256(json.dumps(doc, sort_keys=True, allow_nan=True).encode())
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(f"{key}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _base(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise ResultFileError(f"the path of a result must be a str or a pathlib.Path (the name used to save it); got "
                              f"{type(path).__name__}")
    p = Path(os.fspath(path))
    if p.is_dir():
        raise ResultFileError(f"{p} is a directory; name the result inside it, e.g. {p / 'result'} (saved as "
                              f"result.json and result.npz)")
    return p.with_suffix("") if p.suffix in (".json", ".npz") else p


def _seed_value(seed):
    if seed is None or isinstance(seed, (int, np.integer)):
        return None if seed is None else int(seed)
    return None  # a Generator cannot be recorded as a number


def _jsonable(obj, arrays: dict | None, key: str = ""):
    """JSON-ready copy of ``obj``: arrays become ``{"__array__": key}`` references stored in ``arrays``
    (or plain lists when ``arrays`` is None), numpy scalars become Python numbers, and non-finite floats
    become ``{"__float__": "nan"}``."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v, arrays, f"{key}/{k}" if key else str(k)) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        if arrays is None:
            return _jsonable(obj.tolist(), None, key)
        arrays[key] = obj
        return {"__array__": key}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v, arrays, f"{key}/{i}") for i, v in enumerate(obj)]
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else {"__float__": repr(v)}
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _restore(obj, arrays: dict):
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return arrays[obj["__array__"]]
        if set(obj) == {"__float__"}:
            return float(obj["__float__"])
        return {k: _restore(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_restore(v, arrays) for v in obj]
    return obj


def _history_columns(history: list) -> dict:
    keys: list[str] = []
    for rec in history:
        keys += [k for k in rec if k not in keys]
    return {k: np.array([_num(rec.get(k)) for rec in history], dtype=float) for k in keys}


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _history_records(columns: dict) -> list:
    if not columns:
        return []
    n = len(next(iter(columns.values())))
    return [{k: float(v[i]) for k, v in columns.items() if not np.isnan(v[i])} for i in range(n)]
