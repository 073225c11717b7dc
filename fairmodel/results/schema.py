"""The documented schema of a saved result, checked field by field when a result is loaded.

A result file that was edited by hand or by a faulty tool (an objective ``"abc"``, a status that does not
exist, a history whose columns differ in length, text where arrays belong) is refused with the field named,
rather than loaded into a :class:`fairmodel.results.result.Result` that would fail later or mislead.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import ResultFileError

BACKENDS = ("exact", "stochastic")
OPTIONAL = ("checks", "name")    # fields that results saved by earlier versions do not have


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _is_numeric_array(v) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.kind in "biuf"


def _tree(v, leaf) -> bool:
    """``v`` is a leaf, or a list / a dict with text keys of trees."""
    if leaf(v):
        return True
    if isinstance(v, list):
        return all(_tree(x, leaf) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _tree(x, leaf) for k, x in v.items())
    return False


def _numeric_tree(v) -> bool:
    """Numbers and numeric arrays, in lists and tables (variables and certificates)."""
    return _tree(v, lambda x: _is_number(x) or isinstance(x, bool) or _is_numeric_array(x))


def _plain_tree(v) -> bool:
    """Numbers, text, booleans, None and numeric arrays, in lists and tables (metrics, solver details)."""
    return _tree(v, lambda x: x is None or isinstance(x, (str, bool)) or _is_number(x) or _is_numeric_array(x))


def _constraint(v) -> bool:
    return isinstance(v, dict) and all(_is_number(v.get(k)) for k in ("value", "bound", "violation"))


CHECK = "a check {name: text, value: number, tolerance: number, passed: true or false}"


def _check(v) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("name"), str) and _is_number(v.get("value"))
            and _is_number(v.get("tolerance")) and isinstance(v.get("passed"), bool))


def _history(v) -> bool:
    if not isinstance(v, dict) or not all(isinstance(c, np.ndarray) and c.ndim == 1 and c.dtype.kind == "f"
                                          for c in v.values()):
        return False
    return len({len(c) for c in v.values()}) <= 1


def validate_fields(fields: dict, where: str, statuses) -> None:
    """Raise :class:`ResultFileError` naming the first field of ``fields`` that breaks the schema."""
    rules = {
        "status": (lambda v: v in statuses, f"one of {', '.join(statuses)}"),
        "objective": (_is_number, "a number"),
        "variables": (lambda v: isinstance(v, dict) and _numeric_tree(v), "a table of numeric arrays"),
        "constraints": (lambda v: isinstance(v, dict) and all(map(_constraint, v.values())),
                        "a table of {value, bound, violation} numbers"),
        "metrics": (lambda v: isinstance(v, dict) and _plain_tree(v), "a table of numbers, text and arrays"),
        "certificate": (lambda v: isinstance(v, dict) and _numeric_tree(v), "a table of numbers"),
        "history": (_history, "columns of floats of one length"),
        "timings": (lambda v: isinstance(v, dict) and all(map(_is_number, v.values())), "a table of seconds"),
        "solver": (lambda v: isinstance(v, dict) and _plain_tree(v), "a table"),
        "seed": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "an integer or null"),
        "backend": (lambda v: v in BACKENDS, f"one of {', '.join(BACKENDS)}"),
        "method": (lambda v: isinstance(v, str), "text"),
        "family": (lambda v: isinstance(v, str), "text"),
        "message": (lambda v: isinstance(v, str), "text"),
        "problem": (lambda v: isinstance(v, str), "text"),
        "checks": (lambda v: isinstance(v, list) and all(map(_check, v)), "a list of checks"),
        "name": (lambda v: isinstance(v, str), "text"),
    }
    missing = [k for k in rules if k not in fields and k not in OPTIONAL]
    unknown = [k for k in fields if k not in rules]
    if missing or unknown:
        raise ResultFileError(f"{where}: " + (f"missing fields {', '.join(missing)}" if missing else
                                              f"unknown fields {', '.join(unknown)}") + " (not a fairmodel result)")
    for key, value in fields.items():
        valid, expected = rules[key]
        if not valid(value):
            raise ResultFileError(f"{where}: field {key!r} must be {expected}; found {_shown(key, value)}")


def _shown(key: str, value) -> str:
    """The wrong value of a field: a number or a text itself, the first wrong check of a list of checks, else its
    type."""
    if isinstance(value, list) and key == "checks":
        i = next(i for i, c in enumerate(value) if not _check(c))
        return f"entry {i}, {repr(value[i])[:120]}, which is not {CHECK}"
    return repr(value)[:80] if not isinstance(value, (dict, list, np.ndarray)) else type(value).__name__
