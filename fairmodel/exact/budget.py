"""Guards before the work: the memory (and time) an exact program will take, estimated from its sizes before
anything is allocated, compared with the memory this machine has available.

Each estimate is ``base + per_unit * units`` with ``units`` the size the program grows with (nonzeros of the
constraint matrix, exponential cones, ramp pieces) and the constants fitted to the peak resident memory measured
by ``benchmarks/guard_memory.py`` (a fresh process per size; the table is in docs/benchmarks.md, "Memory of the
exact programs"), rounded up. A program whose estimate exceeds the limit is refused with
:class:`~fairmodel.errors.ResourceLimitError` before it is built; the message states the estimate, how it was
computed, the limit, and the scalable alternative. The limit is half of the memory available now
(``MemAvailable`` of /proc/meminfo, else the physical memory from ``os.sysconf``); ``max_memory_gb=`` overrides it
(``float('inf')`` turns the guard off), for an expert who knows the machine has the memory.

A judge step that would not fit is refused the same way, and the judge reports that certificate as NaN (or leaves it
out) with a warning carrying the message, keeping the candidate; the group-DRO certificate instead switches to a
first-order method whose Frank-Wolfe gap certifies in O(n d) memory (:func:`fits`).
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass

from ..errors import OptionError, ResourceLimitError, SlowSolveWarning
from ..oracles.metric import DENSE_PARAMETERS  # noqa: F401  (the exact backend's name for it)

GiB = float(2 ** 30)
MiB = float(2 ** 20)
DEFAULT_FRACTION = 0.5   # of the available memory: the solver's own peaks and the caller's data need the rest

# Fitted constants: bytes and seconds per unit, from the peaks measured by benchmarks/guard_memory.py (Clarabel and
# HiGHS, cvxpy 1.x, 2 cores; docs/benchmarks.md "Memory of the exact programs"), rounded up by about 10%. Times
# varied up to 10x with the machine's load in the same measurements: they are stated, never used to refuse.
BASE_BYTES = 64 * MiB            # CVXPY's compilation and the solver's fixed workspace
DESIGN_BYTES = 240.0             # per entry of a dense design X in a CVXPY expression (X @ w is copied and
                                 # canonicalized: measured 220 B per entry from d = 10 to d = 100)
DP_LP_BYTES = 320.0              # per nonzero of the LP (3): n m (2K + 1) (measured 295 B, HiGHS interior point)
DP_LP_SECONDS = 1.0e-5
DP_ENTROPIC_BYTES = 600.0        # per unit n m (2K + 4) of the entropic program (4) (measured 551 B, Clarabel)
DP_ENTROPIC_SECONDS = 4.5e-5
GDRO_SAMPLE_BYTES = 6800.0       # per sample of the epigraph program (one exponential cone each; measured 6.1 KB)
GDRO_SECONDS = 4.0e-5            # per sample and feature (measured 3.5e-5 at d = 10, 4.2e-5 at d = 100)
STRATEGIC_SAMPLE_BYTES = 12600.0  # per sample of (E1) (two epigraph cones per y = +1 sample; measured 11.4 KB)
STRATEGIC_INNER_BYTES = 6800.0   # per sample of the inner minimum (E3) of the judge (measured 6.1 KB)
STRATEGIC_SECONDS = 3.5e-5       # per sample and feature (measured 3.1e-5 at p = 10)
PARTIAL_PIECE_BYTES = 6200.0     # per ramp piece (sample x level x side) of the subproblem (25) (measured 5.6 KB)
PARTIAL_SECONDS = 3.0e-4         # per ramp piece (measured at 32,000 pieces; grows faster than linearly)
WARN_SECONDS = 60.0              # an estimate above this is stated in a warning with the alternative


@dataclass(frozen=True)
class Estimate:
    """The predicted peak memory (bytes) and time (seconds, or None) of one program from its sizes."""

    what: str
    units: float
    formula: str
    bytes: float
    seconds: float | None = None

    def describe(self) -> str:
        time = "" if self.seconds is None else f", about {_duration(self.seconds)}"
        return f"about {_size(self.bytes)}{time} ({self.formula})"


def available_memory() -> float:
    """Bytes of memory available to a new allocation now: ``MemAvailable`` of /proc/meminfo, else the physical
    memory (``os.sysconf``)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def memory_limit(max_memory_gb: float | None = None) -> float:
    """The limit in bytes: ``max_memory_gb`` GiB if given (inf: no limit), else half the available memory."""
    if max_memory_gb is not None:
        if isinstance(max_memory_gb, bool) or not isinstance(max_memory_gb, (int, float)) \
                or math.isnan(max_memory_gb) or max_memory_gb <= 0:
            raise OptionError(f"max_memory_gb must be a positive number of GiB (inf turns the memory guard off); "
                              f"got {max_memory_gb!r}")
        return float(max_memory_gb) * GiB
    return DEFAULT_FRACTION * available_memory()


def fits(estimate: Estimate, max_memory_gb: float | None = None) -> bool:
    return estimate.bytes <= memory_limit(max_memory_gb)


def refusal(estimate: Estimate, alternative: str, max_memory_gb: float | None = None,
            option: str = "max_memory_gb=") -> str:
    """The message of a refusal: what, the estimate and its formula, the limit, the alternative, the override
    (``option``: where the caller passes ``max_memory_gb``)."""
    limit = memory_limit(max_memory_gb)
    source = (f"the limit max_memory_gb={max_memory_gb:g}" if max_memory_gb is not None else
              f"half the memory available on this machine ({_size(limit)} of {_size(available_memory())})")
    return (f"{estimate.what} would need {estimate.describe()}, more than {source}. {alternative}. Or pass "
            f"{option} (GiB; inf turns this guard off) if the machine has the memory")


def check(estimate: Estimate, alternative: str, max_memory_gb: float | None = None,
          option: str = "max_memory_gb=") -> Estimate:
    """Raise :class:`ResourceLimitError` (with the estimate and the alternative) when the estimate does not fit;
    warn when the time estimate exceeds :data:`WARN_SECONDS`."""
    if not fits(estimate, max_memory_gb):
        raise ResourceLimitError(refusal(estimate, alternative, max_memory_gb, option), estimate=estimate.bytes)
    if estimate.seconds is not None and estimate.seconds > WARN_SECONDS:
        warnings.warn(f"{estimate.what} may take {_duration(estimate.seconds)} (estimate: {estimate.describe()}); "
                      f"{alternative[0].lower() + alternative[1:]}", SlowSolveWarning, stacklevel=4)
    return estimate


# -- the estimates -----------------------------------------------------------------------------------------------
def dp_primal(n: int, m: int, K: int, entropic: bool, what: str | None = None) -> Estimate:
    """The LP (3) / entropic program (4) of DP post-processing in the policy P (n x m), or their CVXPY duals:
    n m (2K + 1) nonzeros (P in the 2 m K moment rows and the n row sums), plus n m exponential cones for (4)."""
    if entropic:
        units = float(n) * m * (2 * K + 4)
        return Estimate(what or "the entropic DP program (4)", units,
                        f"{DP_ENTROPIC_BYTES:g} B per unit of n m (2K + 4) = {units:,.0f} with n = {n:,}, m = {m}, K = {K}",
                        BASE_BYTES + DP_ENTROPIC_BYTES * units, DP_ENTROPIC_SECONDS * units)
    units = float(n) * m * (2 * K + 1)
    return Estimate(what or "the DP LP (3)", units, f"{DP_LP_BYTES:g} B per nonzero of n m (2K + 1) = {units:,.0f} "
                    f"with n = {n:,}, m = {m}, K = {K}", BASE_BYTES + DP_LP_BYTES * units, DP_LP_SECONDS * units)


def gdro_epigraph(n: int, d: int, what: str = "the group-DRO epigraph program") -> Estimate:
    """The group-DRO epigraph program (or a weighted ERM in CVXPY): one exponential cone per sample (logistic)
    and the n x d design inside the expression X @ w."""
    return Estimate(what, float(n), f"({GDRO_SAMPLE_BYTES:g} B + {DESIGN_BYTES:g} B x d) per sample, n = {n:,}, "
                    f"d = {d}", BASE_BYTES + (GDRO_SAMPLE_BYTES + DESIGN_BYTES * d) * n,
                    GDRO_SECONDS * n * max(d, 10))


def strategic(n: int, p: int, judge: bool = False) -> Estimate:
    """The strategic-DRO program (E1), or (``judge``) the inner minimum (E3) of its duality gap."""
    per = STRATEGIC_INNER_BYTES if judge else STRATEGIC_SAMPLE_BYTES
    what = "the inner minimum (E3) of the strategic-DRO duality gap" if judge else "the strategic-DRO program (E1)"
    return Estimate(what, float(n), f"({per:g} B + {DESIGN_BYTES:g} B x p) per sample, n = {n:,}, p = {p}",
                    BASE_BYTES + (per + DESIGN_BYTES * p) * n, STRATEGIC_SECONDS * n * max(p, 10))


def partial_program(program) -> Estimate:
    """The IDCA subproblem (25): the ramp pieces of every partial-parity block and ramp rate gap (rows x families:
    n samples x P levels x 2 sides; 2 n for a weak block, 2 per row of a rate) and the design of every score."""
    pieces, entries = 0.0, 0.0
    for block in program.blocks:
        avg = getattr(block, "avg", None)
        if avg is not None:
            pieces += float(avg.pieces)
            entries += float(avg.sizes.sum()) * avg.d_w
    return Estimate("the partial-fairness subproblem (25)", pieces,
                    f"{PARTIAL_PIECE_BYTES:g} B per ramp piece (samples x levels x 2) = {pieces:,.0f} pieces + "
                    f"{DESIGN_BYTES:g} B per design entry", BASE_BYTES + PARTIAL_PIECE_BYTES * pieces
                    + DESIGN_BYTES * entries, PARTIAL_SECONDS * pieces)


def working_set(nbytes: float, pairs: int, d: int) -> Estimate:
    """The working set of the interior-point solver of (25) on chunked rows: the kept hinges' rows and the solver's
    arrays, 8 (d + 32) bytes per (row, constraint) pair (:data:`fairmodel.oracles.dc_working_set.PAIR_FLOATS`)."""
    return Estimate("the working set of hinges of the IDCA subproblem (25)", float(pairs),
                    f"8 B x (d + 32) per kept hinge, {pairs:,} hinges near their kinks, d = {d}", float(nbytes))


def newton(n: int, d: int) -> Estimate:
    """The projected Newton method of the group-DRO certificate: the weighted design (n x d, twice) and, in the
    row space when n < d, r x r Hessians with r = min(n, d) (three: H, its eigenvectors, a product)."""
    r = min(n, d)
    return Estimate("the projected Newton solve of the duality gap (eq. (13) of Yu et al. 2024)", float(n) * d,
                    f"8 B per entry of 3 n d + 4 r^2, n = {n:,}, d = {d:,}, r = min(n, d)", 8.0 * (3.0 * n * d + 4.0 * r * r))


MODEL_SPACE_SECONDS = 1.0e-9     # per unit n k^2 of one Hessian X' D X (k: nonzeros per row; measured 0.6e-9 on Adult
                                 # at n = 1e6 and 0.5e-9 on Law School at 2e4, 2 loaded cores), times two
MODEL_SPACE_ITERATIONS = 40      # interior-point iterations (measured 13-24 on the compositions of the docs)


def model_space(n: int, D: int, leaves: int, expressions: int, nonzeros: float | None = None) -> Estimate:
    """The model-space interior-point method of the generic convex reduction, whose oracles are passes over the rows:
    the model-space state (4 D^2 + the leaves' gradients), a chunk's working arrays (65,536 rows x (D + leaves +
    4 per expression), at most; on chunked data per worker thread), a cell code per row (at most 8 B; labels and data
    vectors are the declaration's, not counted), and for an in-memory design read as sparse (``nonzeros`` per row)
    its CSR copy (12 B per nonzero). Time: one Hessian pass per iteration, n k^2 with k = D, or the nonzeros per row
    plus the intercept."""
    k = D if nonzeros is None else nonzeros + 1.0
    chunk = 65_536.0 * (D + leaves + 4 * max(expressions, 1))
    design = 0.0 if nonzeros is None else 1.5 * n * nonzeros
    units = float(n) + chunk + design + 4.0 * D * D + leaves * D
    what = "dense" if nonzeros is None else f"sparse, {nonzeros:.1f} nonzeros per row"
    return Estimate("the model-space interior-point method", units,
                    f"a cell code per row (n = {n:,}) + a chunk's working arrays (65,536 x (D + leaves + 4 "
                    f"expressions)) + 4 D^2 + leaves x D, D = {D}, {leaves} leaves, {expressions} per-sample "
                    f"expressions; design {what}", 8.0 * units,
                    MODEL_SPACE_SECONDS * MODEL_SPACE_ITERATIONS * 2.0 * n * k * k)


def _size(b: float) -> str:
    if b >= 0.1 * GiB:
        return f"{b / GiB:.1f} GiB"
    return f"{b / MiB:.0f} MiB" if b >= 10 * MiB else f"{b / 1024:.0f} KiB"


def _duration(s: float) -> str:
    if s < 1:
        return "under 1 s"
    return f"{s:.0f} s" if s < 600 else f"{s / 60:.0f} min"
