"""Sweeps over a scalar parameter (a fairness budget, a cost, ...) and the frontier they trace.

``prob.sweep("kappa", [0.01, 0.02, 0.05])`` sets the :class:`fairmodel.expressions.Parameter` named
``kappa`` to each value in turn and solves; the exact backend reuses its compiled program where the
family supports it (the parameter is a scalar ``cp.Parameter``), the stochastic backend warm-starts from
the previous value's solution. ``fm.sweep(build, values)`` does the same for any function
``value -> Problem`` (for parameters that are not DSL parameters). A value whose solve fails, for any reason, is
recorded with its error and the sweep goes on; Ctrl-C ends the sweep with the finished values: they are never
lost.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from ..errors import ModelError, OptionError
from ..results.plotting import plot_frontier
from ..utilities.display import frontier_repr, rows_html, rows_markdown
from ..utilities.progress import Progress, logger
from ..utilities.validate import check_problem


@dataclass
class Frontier:
    """One record per swept value: the judged result (or the error), ready for a table or a plot."""

    param: str
    values: list
    results: list                      # Result or None (failed value)
    errors: dict = field(default_factory=dict)   # value index -> message
    backend: str = ""
    interrupted: bool = False                     # Ctrl-C ended the sweep: the values after the last are missing

    def rows(self) -> list[dict]:
        """Flat records: parameter value, status, objective, constraint values, scalar metrics, certificates."""
        out = []
        for i, (v, r) in enumerate(zip(self.values, self.results)):
            row = {self.param: v}
            if r is None:
                row.update(status="error", error=self.errors.get(i, ""))
            else:
                row.update(status=r.status, objective=r.objective, max_violation=r.max_violation,
                           time=r.timings.get("solve", math.nan))
                row.update({f"constraint:{k}": c["value"] for k, c in r.constraints.items()})
                row.update({f"metric:{k}": m for k, m in r.metrics.items() if isinstance(m, (int, float))})
                row.update({f"certificate:{k}": c for k, c in r.certificate.items() if isinstance(c, (int, float))})
            out.append(row)
        return out

    def column(self, key: str) -> list:
        return [row.get(key, math.nan) for row in self.rows()]

    def to_markdown(self) -> str:
        return rows_markdown(self.rows())

    def __repr__(self) -> str:
        return frontier_repr(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return rows_html(self.rows(), caption=f"sweep of {self.param}" + (" (interrupted)" if self.interrupted else ""))

    def to_dict(self) -> dict:
        return {"param": self.param, "backend": self.backend, "interrupted": self.interrupted, "rows": self.rows()}

    def plot(self, x: str | None = None, y: str = "objective", ax=None, label: str | None = None):
        """Plot column ``y`` against ``x`` (default: the swept parameter); returns the matplotlib Figure."""
        return plot_frontier(self, x=x or self.param, y=y, ax=ax, label=label)


def sweep(build, values, *, param: str = "value", backend: str = "exact", warm_start: bool = True,
          verbose: bool | None = None, options_for=None, **solve_options) -> Frontier:
    """Solve ``build(value)`` (a Problem) for every value; returns a :class:`Frontier`.

    ``options_for(value)``, if given, returns solve options of that value (they override ``solve_options``).
    A value that fails for any reason is recorded with its error and the sweep goes on. Ctrl-C ends the sweep:
    the value being solved is kept as ``interrupted`` (stochastic: its judged iterate) and the finished values
    are returned (``frontier.interrupted`` is True).
    """
    if not callable(build):
        raise OptionError(f"build must be a callable value -> Problem; got {type(build).__name__}")
    if options_for is not None and not callable(options_for):
        raise OptionError(f"options_for must be a callable value -> dict of solve options; got "
                          f"{type(options_for).__name__}")
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise ModelError(f"values must be a list (or array) of the values to sweep; got {values!r}")
    values = list(values)
    if not values:
        raise ModelError("sweep needs at least one value")
    results, errors, previous, interrupted = [], {}, None, False
    with Progress(len(values), f"sweep {param}", verbose) as bar:
        try:
            for i, v in enumerate(values):
                start = time.perf_counter()
                try:
                    prob = build(v)
                    check_problem(prob, f"fm.sweep: build({v!r})", ("solve",), "to return a fm.Problem")
                    options = {**solve_options, **(options_for(v) if options_for is not None else {})}
                    if warm_start and previous is not None and backend == "stochastic" and hasattr(prob, "family"):
                        options = {**prob.family.warm_start(previous), **options}
                    res = prob.solve(backend=backend, verbose=False, **options)
                    results.append(res)
                    # a finished result warm-starts the next value even when the judge did not accept it
                    previous = res if res.status not in ("diverged", "failed", "interrupted") else previous
                    interrupted = res.status == "interrupted"
                except KeyboardInterrupt:
                    results.append(None)
                    errors[i] = "interrupted (Ctrl-C)"
                    interrupted = True
                except Exception as exc:   # any failure of one value is recorded; the sweep goes on
                    logger.warning("sweep: %s = %r failed: %s: %s", param, v, type(exc).__name__, exc)
                    results.append(None)
                    errors[i] = f"{type(exc).__name__}: {exc}"
                bar.update(1, **{param: v, "s": round(time.perf_counter() - start, 2)})
                if interrupted:
                    break
        except KeyboardInterrupt:        # between two values: the finished ones are kept all the same
            interrupted = True
    if interrupted:
        logger.warning("sweep: interrupted after %d of %d value(s); the finished ones are kept", len(results),
                       len(values))
    done = len(results)
    return Frontier(param=param, values=values[:done], results=results, errors=errors, backend=backend,
                    interrupted=interrupted)
