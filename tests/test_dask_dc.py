"""The DC programs of He, Huang, Yao, Lin 2025 (ramp rate gaps; partial demographic parity, model (13); weak partial
parity, model (17)) on Dask-backed data: exact IDCA (the interior-point solver of (25) on a working set of hinges,
its other oracles passes over the chunks) gives the in-memory answer on the same rows and on rows replicated and
shuffled; the judge's numbers (true rates and gaps, DP^I, WDP^I, the Lemma C.1 certificate) are the in-memory
numbers; the client never reads the whole feature matrix; programs that need every row in memory are refused with
the method that runs; the per-chunk functions pickle (a process cluster)."""
import warnings

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.data.dask_dataset import DaskDataset
from fairmodel.data.passes import passes_of
from fairmodel.errors import OptionError, ResourceLimitError, UnsupportedProblemError
from fairmodel.families.partial_runs import objective_split
from tests.dask_helpers import as_dask_dataset

da = pytest.importorskip("dask.array")

N, CHUNK = 800, 300          # three chunks (300, 300, 200 rows)
EPS, KAPPA = 0.05, 0.1


@pytest.fixture(scope="module")
def arrays():
    data = fm.datasets.load_lawschool(target="bar1", sensitive="race").subsample(N, seed=0)
    return data.X, data.y, np.asarray(data.groups.names)[data.groups.codes]


def both(arrays, chunk=CHUNK):
    X, y, g = arrays
    return fm.Dataset(X, y, g), as_dask_dataset(X, y, g, chunk)


def problem(data, kind):
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    objective = fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w))
    constraint = {"selection": fm.selection_rate_gap(s, data, surrogate="ramp") <= EPS,
                  "eodds": fm.equalized_odds_gap(s, data, surrogate="ramp") <= EPS,
                  "pdp": fm.partial_dp(s, data.groups, band=(0.7, 1.0), levels=5) <= KAPPA,
                  "weak": fm.weak_partial_dp(s, data.groups, band=(0.7, 1.0)) <= KAPPA}[kind]
    return fm.Problem(objective, [constraint.named("c")])


def close(a, b, rel=1e-6):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b))) <= rel * max(1.0, float(np.max(np.abs(b))))


@pytest.fixture(scope="module")
def solved(arrays):
    """Exact IDCA on the same rows, in memory and on Dask, for the ramp selection-rate gap and partial DP, from w = 0
    (the default on Dask; in memory a ramp rate gap starts from the quadratic penalty's minimizer, found by L-BFGS,
    whose last digits depend on how the rows were summed)."""
    out = {}
    for kind in ("selection", "pdp"):
        mem, dd = both(arrays)
        runs = []
        for data in (mem, dd):
            prob = problem(data, kind)
            start = passes_of(data)
            res = prob.solve(backend="exact", start="zero")
            runs.append((prob, res, passes_of(data) - start))
        out[kind] = runs
    return out


@pytest.mark.parametrize("kind", ["selection", "pdp"])
def test_exact_idca_on_dask_is_the_in_memory_answer(solved, kind):
    (_, mem, _), (prob, dsk, passes) = solved[kind]
    assert dsk.solver["name"] == "idca+ipm" and dsk.status == mem.status == "converged" and dsk.ok
    assert dsk.metrics["outer_iterations"] == mem.metrics["outer_iterations"]
    assert abs(dsk.objective - mem.objective) <= 1e-6 * abs(mem.objective)
    for name in mem.variables:
        assert close(dsk.variables[name], mem.variables[name]), name
    assert dsk.max_violation <= 1e-9
    # the working set stays a fraction of the hinges (rows x constraints) and, where both runs chose it at the
    # anchor, is the in-memory run's, up to a hinge at a kink of a round's solution (its sign there is the solver's
    # last digits; the answer does not depend on it). At a central point of (25) the path-following phase's
    # comparisons can go either way in the last digits, and so can the point and its working set; not the answer
    pairs = [h["working_set_pairs"] for h in dsk.history[1:]]
    at_anchor = [not (h.get("centring_passes") or g.get("centring_passes"))
                 for h, g in zip(dsk.history[1:], mem.history[1:])]
    assert sum(at_anchor) >= len(pairs) // 2
    assert np.allclose(np.array(pairs)[at_anchor],
                       np.array([h["working_set_pairs"] for h in mem.history[1:]])[at_anchor], rtol=0.01, atol=2)
    assert max(pairs) < prob.family.hinge().pieces
    assert passes > dsk.metrics["outer_iterations"]          # every oracle is a pass over the chunks


@pytest.mark.parametrize("kind", ["selection", "eodds", "pdp", "weak"])
def test_the_judge_on_dask_gives_the_in_memory_numbers(arrays, kind):
    """Two candidates judged on both: random weights (scores spread, constraints violated) for the metrics, and an
    early IDCA iterate (feasible, not stationary) for the Lemma C.1 certificate."""
    mem, dd = both(arrays)
    theta = 0.3 * np.random.default_rng(1).standard_normal(mem.n_features + 1)
    candidates = [{"w": theta}]
    if kind != "weak":          # model (17) has no interior-point certificate (its CVXPY program needs the rows)
        candidates.append(problem(mem, kind).solve(backend="exact", stop="budget", outer=3, start="zero",
                                                   certificate=False).variables)
    for candidate in candidates:
        evals = []
        for data in (mem, dd):
            start = passes_of(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)     # weak pDP on chunks: the certificate is not computed
                evals.append((problem(data, kind).evaluate(candidate, certificate=True), passes_of(data) - start))
        (em, _), (ed, passes) = evals
        assert abs(ed.objective - em.objective) <= 1e-12
        assert set(ed.metrics) == set(em.metrics)
        for key, value in em.metrics.items():
            if isinstance(value, dict):
                assert value == pytest.approx(ed.metrics[key], abs=1e-12), key
            elif key.startswith(("c.true_", "c.gap", "accuracy")):
                assert ed.metrics[key] == value, key                     # counts of indicators: exact
            else:
                assert np.allclose(ed.metrics[key], value, atol=1e-12), key
        for name, rec in em.constraints.items():
            assert ed.constraints[name]["value"] == pytest.approx(rec["value"], abs=1e-12)
        if kind == "weak":       # no certificate on chunks: the CVXPY program of (25) needs every row (a warning)
            assert ed.certificate == {}
            continue
        assert ed.certificate.get("feasible") == em.certificate.get("feasible")
        if em.certificate.get("feasible"):
            for key in ("subproblem_step", "nearly_kkt_eps", "objective_decrease", "max_dual"):
                assert ed.certificate[key] == pytest.approx(em.certificate[key], rel=1e-6, abs=1e-9), key
            assert ed.certificate["subproblem_gap"] <= 1e-8 and ed.certificate["subproblem_step"] > 1e-3
        assert passes >= 3


def test_replicated_rows_give_the_answer_of_the_original_rows(arrays):
    """Rows repeated three times and shuffled: every mean and rate of the program is unchanged, so exact IDCA returns
    the answer of the original rows; a working set chosen at the anchor (the hinges near a kink there) grows
    threefold. (One chosen at a point of the central path is not compared: where Newton's method stops on the path
    depends on the rounding of the sums, and so does which hinges lie within the radius there.)"""
    X, y, g = (a[:400] for a in arrays)
    order = np.random.default_rng(5).permutation(3 * X.shape[0])
    rep = [np.concatenate([a] * 3)[order] for a in (X, y, g)]
    base = problem(fm.Dataset(X, y, g), "selection").solve(backend="exact", start="zero")
    big = problem(as_dask_dataset(*rep, chunk=350), "selection").solve(backend="exact")
    assert big.ok and base.ok
    assert abs(big.objective - base.objective) <= 1e-6 * abs(base.objective)
    assert close(big.variables["w"], base.variables["w"])
    at_anchor = [(a["working_set_pairs"], b["working_set_pairs"]) for a, b in zip(base.history[1:], big.history[1:])
                 if a["centring_passes"] == b["centring_passes"] == 0]
    assert len(at_anchor) >= 5 and max(a for a, _ in at_anchor) > 0
    assert all(b == 3 * a for a, b in at_anchor)


def test_the_client_gathers_only_working_set_rows(arrays, monkeypatch):
    """Exact IDCA and its judge on Dask never ask for the feature matrix; the rows they gather are those of the
    working sets (each subproblem's distinct rows once, and those of the solve that confirms the last step; early
    outer iterations, with long steps, may hold most rows, the later ones a few)."""
    _, dd = both(arrays)
    gathered = []
    real = DaskDataset.rows

    def rows(self, r, cancel=None):
        gathered.append(np.asarray(r).size)
        return real(self, r, cancel)

    def refuse(self, what):
        raise AssertionError(f"in_memory_X was asked for {what}")

    monkeypatch.setattr(DaskDataset, "rows", rows)
    monkeypatch.setattr(DaskDataset, "in_memory_X", refuse)
    # one IDCA run (its history): the runs of the true-rate continuation, if any, gather their own working sets
    res = problem(dd, "selection").solve(backend="exact", rate_steps=0)
    assert gathered and all(c["passed"] for c in res.checks if c["kind"] == "certificate")
    held = [h["working_set_rows"] + h.get("confirm_working_set_rows", 0) for h in res.history[1:]]
    assert sum(gathered) <= sum(held)
    assert res.history[-1]["working_set_rows"] < dd.n_samples / 20      # near the end: the rows near a kink


def test_a_working_set_that_does_not_fit_is_refused_naming_the_stochastic_method(arrays):
    _, dd = both(arrays)
    prob = problem(dd, "pdp")
    with pytest.raises(ResourceLimitError, match="working set.*backend='stochastic' with split='exact'"):
        prob.solve(backend="exact", max_memory_gb=1e-5)


def test_programs_holding_every_row_are_refused_on_chunks_with_the_method_that_runs(arrays):
    _, dd = both(arrays)
    with pytest.raises(UnsupportedProblemError, match="inner='ipm'"):
        problem(dd, "selection").solve(backend="exact", inner="cvxpy")
    with pytest.raises(UnsupportedProblemError, match="backend='stochastic'.*subsample"):
        problem(dd, "weak").solve(backend="exact")
    report = fm.crosscheck(problem(dd, "weak"), stochastic_options={"stop": "budget", "outer": 1, "inner": 5})
    assert report.exact.status == "failed" and "inner='ipm'" in report.exact.message


@pytest.mark.parametrize("kind", ["selection", "pdp", "weak"])
def test_the_linearization_is_a_minorant_whose_slopes_ignore_the_last_digits(arrays, kind):
    """IDCA's linearization (26) at an iterate whose subproblem left hinges at their kinks (within the solver's
    precision): an affine minorant of every f_i- (tight up to the hinges within 1e-7 of a kink), with the same
    slopes when the anchor moves by 1e-9 (solver precision, chunk sums or replicated rows change the last digits of an iterate)."""
    prob = problem(both(arrays)[0], kind)
    prog = prob.family.program
    x = prog.start(prob.solve(backend="exact", stop="budget", outer=2, certificate=False).variables)
    vals, S = prog.linearize(x)
    exact, _ = prog.minus(x)
    assert np.all(vals <= exact + 1e-15) and np.max(exact - vals) <= 1e-7
    rng = np.random.default_rng(0)
    for scale in (1e-6, 1e-2, 1.0):
        v = x + scale * rng.standard_normal(x.size)
        assert np.all(prog.minus(v)[0] >= vals + S @ (v - x) - 1e-12)
    nudged = prog.linearize(x + 1e-9 * rng.standard_normal(x.size))[1]
    np.testing.assert_allclose(nudged, S, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind, split", [("selection", "exact"), ("selection", "curvature"), ("weak", "exact")])
def test_stochastic_idca_on_dask_follows_the_in_memory_iterates(arrays, kind, split):
    """IDCA with switching-subgradient subproblems is deterministic: on Dask it takes the in-memory steps, with the
    objective in every subproblem (split='exact': every SSG step is a pass over the chunks) or by its quadratic
    majorant and the hinges of a working set (split='curvature', the default on chunks)."""
    runs = [problem(data, kind).solve(backend="stochastic", stop="budget", outer=3, inner=40, eps_decay=1.0,
                                      split=split, start="zero") for data in both(arrays)]
    assert all(r.solver["split"] == split for r in runs)
    assert runs[0].history[-1]["outer"] == runs[1].history[-1]["outer"] == 3
    assert close(runs[1].variables["w"], runs[0].variables["w"], rel=1e-9)
    assert runs[1].max_violation <= 1e-9          # IDCA iterates are feasible (SSG's margin, the majorization)


def test_the_split_of_the_objective_is_curvature_on_chunks_where_it_applies(arrays):
    mem, dd = both(arrays)
    assert objective_split(problem(dd, "selection").family, {}) == "curvature"
    assert objective_split(problem(mem, "selection").family, {}) == "exact"
    assert objective_split(problem(dd, "weak").family, {}) == "exact"      # model (17) has no hinge form
    with pytest.raises(OptionError, match="split='exact'"):
        problem(dd, "weak").solve(backend="stochastic", split="curvature")


@pytest.mark.slow       # 27 s with -n auto; the default suite keeps under 10 minutes
def test_crosscheck_on_dask(arrays, solved):
    """Both backends with their defaults on the same chunks: exact IDCA (the in-memory exact answer) and IDCA + SSG
    with the curvature split; the report passes."""
    _, dd = both(arrays)
    start = passes_of(dd)
    report = fm.crosscheck(problem(dd, "selection"), seed=0)
    (_, mem, _), _ = solved["selection"]
    assert report.ok, report.to_markdown()
    assert abs(report.exact.objective - mem.objective) <= 1e-6 * abs(mem.objective)
    assert report.stochastic.solver["split"] == "curvature"
    assert passes_of(dd) - start < 2000


@pytest.mark.slow       # 17 s with -n auto; the default suite keeps under 10 minutes
def test_idca_with_ssg_stops_on_the_judges_checks_whatever_the_ramp_pieces(arrays, monkeypatch):
    """The judge's solve of (25) at a stochastic result is sized by the run's last step and holds at most a share of
    the hinges or SMALL of them (chosen at the central point beyond it) under the working set's memory guard: so the
    certificate, and IDCA + SSG's stop on the checks, do not depend on the program's ramp pieces. (With a cap on the
    pieces, a run on 2e7 rows was a budget run of 300 outer iterations that could not stop when its checks passed.)"""
    from fairmodel.families import partial
    for cap in ("AUTO_CERTIFICATE_PIECES", "IPM_CERTIFICATE_PIECES", "WORKING_SET_PIECES"):
        monkeypatch.setattr(partial, cap, 10, raising=False)          # every program here is "large"
    _, dd = both(arrays)
    prob = problem(dd, "selection")
    family = prob.family
    assert family.certificate_available(last_step=0.1) and not family.certificate_available()
    result = prob.solve(backend="stochastic", seed=0)
    assert result.solver["stop"] == "checks" and result.ok, result.message
    assert result.certificate["relative_step"] <= family.step_tolerance
    assert result.metrics["outer_iterations"] < 300


@pytest.mark.slow
def test_process_cluster_runs_the_passes_and_gives_the_same_numbers(arrays, solved):
    """Two worker processes: the per-chunk functions (hinge sums, working-set scans, losses, judge counts) are
    pickled to the workers and return the threaded run's numbers: four exact IDCA steps of the ramp selection-rate
    gap, and the judge (with its Lemma C.1 solve of (25)) of the partial-DP answer."""
    distributed = pytest.importorskip("dask.distributed")
    mem = both(arrays)[0]
    (_, pdp, _), _ = solved["pdp"]
    steps = {"stop": "budget", "outer": 4, "certificate": False, "start": "zero"}
    ref = problem(mem, "selection").solve(backend="exact", **steps)
    ref_ev = problem(mem, "pdp").evaluate(pdp.variables, certificate=True)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster):
        dd = as_dask_dataset(*arrays, CHUNK)
        res = problem(dd, "selection").solve(backend="exact", **steps)
        ev = problem(dd, "pdp").evaluate(pdp.variables, certificate=True)
    assert abs(res.objective - ref.objective) <= 1e-9 * abs(ref.objective)
    assert close(res.variables["w"], ref.variables["w"], rel=1e-9)
    assert ev.metrics["c.gap"] == ref_ev.metrics["c.gap"] and ev.metrics["accuracy"] == ref_ev.metrics["accuracy"]
    assert ev.objective == pytest.approx(ref_ev.objective, rel=1e-12)
    assert ev.certificate["nearly_kkt_eps"] == pytest.approx(ref_ev.certificate["nearly_kkt_eps"], rel=1e-6)
