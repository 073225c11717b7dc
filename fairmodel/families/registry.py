"""The reductions and how a problem picks one.

Every reduction class is listed in ``REDUCTIONS`` (by :func:`register`). :func:`recognize` asks each one, in
order of ``priority`` (the specialised paper families first, the generic convex lowering last; ties by
name, so the order never depends on import order), whether it accepts the canonical problem; the first that
does builds its program. The others that accept are kept: ``describe()`` lists them, and a method that only
another accepting reduction offers (e.g. the generic ``primal_dual`` lowering on a group-DRO problem) is
solved by that one.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError, UnsupportedProblemError

REDUCTIONS: list = []


def register(cls):
    """Class decorator: make a reduction available to :func:`recognize`."""
    if cls not in REDUCTIONS:
        REDUCTIONS.append(cls)
    return cls


def ordered() -> list:
    return sorted(REDUCTIONS, key=lambda c: (c.priority, c.name))


@dataclass
class Recognition:
    """The outcome of recognition: the accepting reductions in order (with their structures) and why each
    other reduction declined."""

    accepted: list          # [(reduction class, structure)], best first
    declined: list          # [(reduction class, reason)]

    def explain(self) -> list[str]:
        lines = []
        for i, (cls, _) in enumerate(self.accepted):
            lines.append(f"  {cls.title}: accepts" + (" (chosen: it comes first in the order of priority)" if i == 0
                                                     else ""))
        lines += [f"  {cls.title}: declines: {reason}" for cls, reason in self.declined]
        return lines


def recognize(problem) -> Recognition:
    """Which reductions accept ``problem`` (canonicalized), or an error naming the expression and the rules."""
    accepted, declined = [], []
    for cls in ordered():
        verdict = cls.accepts(problem)
        if isinstance(verdict, str):
            declined.append((cls, verdict))
        else:
            accepted.append((cls, verdict))
    if not accepted:
        raise UnsupportedProblemError(
            "no backend supports this problem:\n" + _indent(str(problem)) + "\nwhat each family accepts:\n"
            + "\n".join(f"- {cls.title}: {reason}" for cls, reason in declined))
    return Recognition(accepted, declined)


def by_name(name: str):
    for cls in REDUCTIONS:
        if cls.name == name:
            return cls
    raise OptionError(f"unknown family {name!r}; known families are {', '.join(c.name for c in ordered())}")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
