"""The certified interior-point solver of the IDCA subproblem (25) (model (13)): agreement with the CVXPY program
(an independent formulation) to 1e-6 in objective and constraint values, the duality-gap certificate (small at
the answer, large or infeasible at a perturbed point, and a valid lower bound), and its use as the default
exact inner method of IDCA."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact.partial import Subproblem
from fairmodel.families.partial_program import hinge_program, subproblem_g
from fairmodel.data.passes import passes_of
from fairmodel.oracles.dc_ipm import duality_gap, solve_subproblem

MU = 0.1
TIGHT = {"max_step_fraction": 0.9, "tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11}


def random_problem(n, d, seed, levels=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    groups = (rng.random(n) < 0.35).astype(int)
    y = np.where(X[:, 0] + 0.8 * groups + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    data = fm.Dataset(X, y, groups)
    w = fm.Weights(d, intercept=True)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.6, 1.0), levels=levels) <= 0.15])


def lawschool_problem(n=1500):
    data = fm.with_group_interactions(fm.datasets.load_lawschool().subsample(n, seed=3))
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.70, 1.00)) <= 0.1])


def anchors(prog, hinge):
    """The default start (w = 0) and the next IDCA iterate (scores spread out, some constraints active)."""
    x0 = prog.start()
    vals, S = prog.linearize(x0)
    x1 = solve_subproblem(hinge, x0, S, vals - S @ x0, MU)[0]
    return [x0, x1]


@pytest.mark.parametrize("make", [
    pytest.param(lambda: random_problem(400, 3, 0), id="random-400"),
    pytest.param(lambda: random_problem(600, 5, 1, levels=8), id="random-600"),
    pytest.param(lambda: lawschool_problem(400), id="lawschool-400"),
    pytest.param(lambda: lawschool_problem(1500), id="lawschool-1500", marks=pytest.mark.slow)])
def test_ipm_agrees_with_the_cvxpy_program(make):
    prog = make().family.program
    hinge = hinge_program(prog).in_memory()      # every hinge in memory: the full program
    sub = Subproblem(prog, MU, newton_tol=1e-15)
    for anchor in anchors(prog, hinge):
        vals, S = prog.linearize(anchor)
        x, lam, u, info = solve_subproblem(hinge, anchor, S, vals - S @ anchor, MU)
        assert info["status"] == "optimal"
        x_cvx, lam_cvx, _ = sub.solve(anchor, **TIGHT)
        f_ipm, f_cvx = sub._true(x, anchor), sub._true(x_cvx, anchor)
        assert abs(f_ipm - f_cvx) <= 1e-6
        g_ipm, g_cvx = subproblem_g(prog, x, anchor, MU), subproblem_g(prog, x_cvx, anchor, MU)
        assert np.max(np.abs(g_ipm - g_cvx)) <= 1e-6
        assert g_ipm.max() <= 1e-9
        # the certificate holds against the independent solver: d <= optimum <= f(x_cvx) (+ its feasibility error)
        assert info["dual_bound"] <= f_cvx + 1e-9
        assert info["gap"] <= 1e-8


def test_certificate_small_at_the_answer_and_large_at_a_perturbed_point():
    prog = lawschool_problem(1000).family.program
    hinge = hinge_program(prog).in_memory()      # every hinge in memory: the full program
    anchor = anchors(prog, hinge)[1]
    vals, S = prog.linearize(anchor)
    c = vals - S @ anchor
    x, lam, u, info = solve_subproblem(hinge, anchor, S, c, MU)
    at = duality_gap(hinge, x, lam, u, anchor, S, c, MU)
    assert at["gap"] <= 1e-8 and at["max_g"] <= 1e-9 and at["complementarity"] <= 1e-8
    rng = np.random.default_rng(0)
    for _ in range(3):
        d = rng.standard_normal(x.size)
        x_bad = x + 1e-2 * d / np.linalg.norm(d)
        bad = duality_gap(hinge, x_bad, lam, u, anchor, S, c, MU)
        # a perturbed point is either infeasible for (25) or has a suboptimality gap of at least the strong
        # convexity bound (mu/2)||x_bad - x||^2 = 5e-6
        assert bad["max_g"] > 1e-6 or bad["gap"] >= 0.5 * MU * 1e-4 * 0.99
    # perturbed duals give a lower (worse) but still valid bound: the certificate is not a tautology
    worse = duality_gap(hinge, x, lam * 1.5, u, anchor, S, c, MU)
    assert worse["dual_bound"] <= at["dual_bound"] + 1e-12
    assert worse["gap"] > 1e-6


def test_ipm_is_the_default_exact_inner_method_and_cvxpy_stays_available():
    prob = random_problem(300, 3, 2)
    ipm = prob.solve(backend="exact", outer=3, certificate=True)
    assert ipm.solver["name"] == "idca+ipm"
    assert ipm.max_violation <= 1e-9
    assert ipm.certificate["subproblem_max_g"] <= 1e-9
    cvx = prob.solve(backend="exact", outer=1, inner="cvxpy", certificate=False)
    assert cvx.solver["name"].startswith("idca+")
    assert cvx.solver["name"] != "idca+ipm"
    ipm1 = prob.solve(backend="exact", outer=1, certificate=False)
    assert abs(ipm1.objective - cvx.objective) <= 1e-6          # the same first IDCA step
    with pytest.raises(fm.errors.OptionError, match="inner"):
        prob.solve(backend="exact", outer=1, inner="newton")
    with pytest.raises(fm.errors.OptionError, match="mu = 0"):
        prob.solve(backend="exact", outer=1, inner="ipm", mu=0.0)


def test_a_short_solve_is_optimal_only_when_its_certificate_proves_it():
    """A solve capped at 3 iterations (3 more from its own multipliers) is far from optimal: its status must say so
    (the certificate-based acceptance is not a pass for any stopped solve); a full solve's status 'optimal' carries a
    gap within tol."""
    prog = random_problem(400, 3, 0).family.program
    hinge = hinge_program(prog).in_memory()
    anchor = anchors(prog, hinge)[1]
    vals, S = prog.linearize(anchor)
    short = solve_subproblem(hinge, anchor, S, vals - S @ anchor, MU, max_iter=3)[3]
    assert short["status"] == "max_iter" and short["gap"] > 1e-6
    full = solve_subproblem(hinge, anchor, S, vals - S @ anchor, MU)[3]
    assert full["status"] == "optimal" and full["gap"] <= 1e-10 * max(1.0, abs(full["primal"]))


def test_a_solve_that_reaches_its_cap_runs_once_more_from_its_own_multipliers():
    """A solve capped at two thirds of the iterations a full one needs goes on from its own multipliers (moved
    back into the interior) with a budget of its own and ends optimal, its iterations counting both runs (a capped
    solve used to end there, and its caller fell back to the CVXPY program of (25) on all rows)."""
    prog = random_problem(400, 3, 0).family.program
    hinge = hinge_program(prog).in_memory()
    anchor = anchors(prog, hinge)[1]
    vals, S = prog.linearize(anchor)
    full = solve_subproblem(hinge, anchor, S, vals - S @ anchor, MU)
    cap = 2 * full[3]["iterations"] // 3
    capped = solve_subproblem(hinge, anchor, S, vals - S @ anchor, MU, max_iter=cap)
    assert capped[3]["status"] == "optimal" and cap < capped[3]["iterations"] <= 2 * cap
    np.testing.assert_allclose(capped[0], full[0], atol=1e-7)


def test_no_interior_point_stall_on_a_collinear_one_hot_design(monkeypatch):
    """Adult's one-hot columns with an intercept are exactly collinear: on this 600-row subsample, an IDCA
    interior-point solve stalled (complementarity at 1e-19 with residuals at 1e-7..1e-2) until its 200-iteration
    cap, and IDCA fell back to CVXPY. With the centering floor every solve ends optimal and none falls back."""
    import fairmodel.oracles.dc_ipm as dc_ipm
    statuses, solve = [], dc_ipm._solve

    def counting(*args):
        out = solve(*args)
        statuses.append(out[3]["status"])
        return out
    monkeypatch.setattr(dc_ipm, "_solve", counting)
    data = fm.datasets.load_adult(sensitive="sex").split([0.7, 0.3], seed=0)[0].subsample(600, seed=1)
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-4 * fm.sum_squares(w)),
                      [fm.selection_rate_gap(s, data, surrogate="ramp", width=0.5) <= 0.05])
    result = prob.solve(backend="exact")
    assert result.ok and "CVXPY" not in result.message
    assert statuses and set(statuses) == {"optimal"}


class EveryIterate:
    """F evaluated exactly at every interior-point iterate (no Newton model): the reference solve."""

    def __init__(self, objective):
        self.objective, self.calls = objective, 0

    def __call__(self, v):
        self.calls += 1
        return self.objective(v)

    def value(self, v):
        return self.objective.value(v)


def test_the_newton_model_reads_the_rows_a_few_times_and_gives_the_every_iterate_answer():
    """F enters the interior-point method through its Newton model, re-centred a few times a solve and at the answer:
    the answer and certificate equal those of the method evaluating F at every iterate, with far fewer evaluations."""
    prog = random_problem(600, 5, 1, levels=8).family.program
    hinge = hinge_program(prog).in_memory()
    for anchor in anchors(prog, hinge):
        vals, S = prog.linearize(anchor)
        c = vals - S @ anchor
        x, lam, u, info = solve_subproblem(hinge, anchor, S, c, MU)
        reference = EveryIterate(hinge.objective)
        hinge_ref = hinge_program(prog).in_memory()
        hinge_ref.objective = reference
        x_ref, _, _, info_ref = solve_subproblem(hinge_ref, anchor, S, c, MU)
        assert info["status"] == info_ref["status"] == "optimal"
        np.testing.assert_allclose(x, x_ref, rtol=0, atol=1e-8)
        assert info["gap"] <= 1e-10 and info["max_g"] <= 1e-9
        assert info["models"] <= 12 < info_ref["iterations"] <= reference.calls


def test_f_is_read_once_at_a_point_and_the_certificate_at_an_answer_reads_no_rows():
    """F's value, gradient and Hessian are kept at the last few points (IDCA asks again at its anchor every working-
    set round, and at each answer): at the answer, where the solve centred F's model last, they cost no pass, and
    the certificate's dual bound takes no Newton step there (the Lagrangian's gradient already makes it tight: equal
    to the bound after three forced Newton steps to 1e-12)."""
    prog = random_problem(600, 5, 1, levels=8).family.program
    hinge = hinge_program(prog).in_memory()
    F = hinge.objective
    data = F.losses[0][0].data
    x0 = prog.start()
    vals, S = prog.linearize(x0)
    c = vals - S @ x0
    x, lam, u, info = solve_subproblem(hinge, x0, S, c, MU)
    assert info["status"] == "optimal"
    before = passes_of(data)
    at_x = F(x)
    again = F(x)
    assert passes_of(data) == before
    at_x[1][:] = 0.0                                  # the caller's copy: the kept values do not change
    np.testing.assert_array_equal(F(x)[1], again[1])
    cert = duality_gap(hinge, x, lam, u, x0, S, c, MU, at_x=F(x))
    assert passes_of(data) == before
    forced = duality_gap(hinge, x, lam, u, x0, S, c, MU, at_x=F(x), newton_tol=0.0, max_newton=3)
    assert passes_of(data) > before
    assert abs(cert["dual_bound"] - forced["dual_bound"]) <= 1e-12 * max(1.0, abs(forced["primal"]))
    for k in range(F._kept.size):                     # as many other points push x out
        F(x + (k + 1) * 1e-3)
    before = passes_of(data)
    F(x)
    assert passes_of(data) == before + 1


def test_a_solve_centres_f_five_or_six_times(monkeypatch):
    """The Newton model is centred again when the residuals fall a hundredfold and to the square of their level
    (relative to the first): 5-6 centrings a solve on these programs with F's Hessian at every centring (7 with the
    hundredfold rule alone; a centring on an earlier Hessian within its drift converges more slowly: up to 8)."""
    from fairmodel.oracles.dc_ipm import SmoothObjective
    monkeypatch.setattr(SmoothObjective, "DRIFT", -1.0)
    prog = lawschool_problem(400).family.program
    hinge = hinge_program(prog).in_memory()
    for anchor in anchors(prog, hinge):
        vals, S = prog.linearize(anchor)
        info = solve_subproblem(hinge, anchor, S, vals - S @ anchor, MU)[3]
        assert info["status"] == "optimal" and info["models"] <= 6, info["models"]


def test_the_curvature_drift_bounds_the_change_of_the_hessian():
    """LossSums.curvature_drift(theta, c) bounds max_i |log phi''(z_i(theta)) - log phi''(z_i(c))| for the logistic
    loss (its third derivative is at most phi'' in size): the bound max ||x_i|| ||dw|| + |db| where it is within
    ``within``, else the largest score change itself; and the Hessian at theta lies between exp(-D) and exp(D) times
    the one at c (checked by the eigenvalues of H_c^(-1/2) H H_c^(-1/2), computed here from the rows)."""
    from fairmodel.oracles.losses import Hinge, LossSums, Logistic
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 4)) * np.array([1.0, 2.0, 0.5, 3.0])
    y = np.where(rng.random(300) < 0.4, 1.0, -1.0)
    data = fm.Dataset(X, y)
    loss = LossSums(Logistic, data, y, True, np.full(300, 1 / 300))
    design = np.hstack([X, np.ones((300, 1))])
    largest = np.sqrt((X * X).sum(axis=1)).max()

    def hessian(theta):
        p = 1 / (1 + np.exp(-y * (design @ theta)))
        return design.T @ (design * (p * (1 - p))[:, None]) / 300

    for _ in range(5):
        centre = rng.standard_normal(5)
        theta = centre + 0.1 * rng.standard_normal(5)
        dz = design @ (theta - centre)
        measured = loss.curvature_drift(theta, centre)
        assert measured == pytest.approx(np.abs(dz).max(), rel=1e-12)
        bound = loss.curvature_drift(theta, centre, within=np.inf)
        assert bound == pytest.approx(largest * np.linalg.norm((theta - centre)[:4]) + abs(theta[4] - centre[4]))
        assert bound >= measured
        inv = np.linalg.inv(np.linalg.cholesky(hessian(centre)))
        ratios = np.linalg.eigvalsh(inv @ hessian(theta) @ inv.T)
        assert np.exp(-measured) - 1e-12 <= ratios.min() and ratios.max() <= np.exp(measured) + 1e-12
    assert LossSums(Hinge, data, y, True, np.full(300, 1 / 300)).curvature_drift(theta, centre) == np.inf


def test_a_hessian_kept_within_its_drift_gives_the_same_answer_with_fewer_hessian_passes(monkeypatch):
    """The Newton models reuse a Hessian wherever the curvature drift from its centre is within DRIFT: the solves of
    (25) at the last two anchors of an IDCA run (its answer and the next step from it, close together as in the tail
    of a run) give the answers of the solves with a Hessian at every centring (1e-8, both optimal with their
    certificates) from fewer Hessian passes."""
    from fairmodel.oracles import losses
    from fairmodel.oracles.dc_ipm import SmoothObjective
    counted = {"hessians": 0}
    original = losses.LossSums.value_gradient_hessian

    def counting(self, theta):
        counted["hessians"] += 1
        return original(self, theta)

    monkeypatch.setattr(losses.LossSums, "value_gradient_hessian", counting)
    answers, default = {}, SmoothObjective.DRIFT
    for drift in (default, -1.0):
        monkeypatch.setattr(SmoothObjective, "DRIFT", drift)
        prob = lawschool_problem(400)
        answer = prob.solve(backend="exact", stop="budget", outer=30, start="zero")
        prog = prob.family.program
        hinge = hinge_program(prog).in_memory()
        last = prog.start(answer.variables)
        vals, S = prog.linearize(last)
        counted["hessians"], out = 0, []
        for anchor in (last, solve_subproblem(hinge, last, S, vals - S @ last, MU)[0]):
            vals, S = prog.linearize(anchor)
            x, lam, u, info = solve_subproblem(hinge, anchor, S, vals - S @ anchor, MU)
            assert info["status"] == "optimal" and info["gap"] <= 1e-10 and info["max_g"] <= 1e-9
            out.append(x)
        answers[drift] = (out, counted["hessians"])
    (kept, fewer), (every, more) = answers[default], answers[-1.0]
    for a, b in zip(kept, every):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-8)
    assert fewer < more
