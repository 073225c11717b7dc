"""Solvers on a design whose columns are in raw units (a census file's sampling weight of about 2e5 beside ages,
hours and indicators): curvatures from about 1e10 down to 1e-3, which an eigendecomposition of the unscaled matrix
resolves only to about 1e-16 of the largest."""
import warnings

import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact.newton import ball_qp_step, minimize_on_ball
from fairmodel.families.gdro import group_risks_of
from fairmodel.oracles.losses import LinearModelLoss, Logistic
from fairmodel.oracles.metric import Coordinates
from fairmodel.stochastic.aleg import metric_radius_scale

from .conftest import solved_in_a_second_run


def raw_design(n, seed=0):
    """Columns in the units of a census file: a sampling weight (about 2e5), ages, weekly hours, a category of
    eight values (one-hot, the rarest 1 %) and +-1 labels from a logistic model of the standardized columns; three
    groups, one of 5 %."""
    rng = np.random.default_rng(seed)
    category = rng.choice(8, n, p=[0.4, 0.2, 0.15, 0.1, 0.08, 0.04, 0.02, 0.01])
    X = np.column_stack([rng.lognormal(12.0, 0.6, n), rng.uniform(17, 90, n), rng.integers(1, 99, n),
                         np.eye(8)[category]])
    Z = (X - X.mean(0)) / X.std(0)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(Z @ rng.normal(size=X.shape[1]) - 0.5))), 1.0, -1.0)
    with warnings.catch_warnings():      # the Dataset warns that the columns are badly scaled: the point here
        warnings.simplefilter("ignore")
        return fm.Dataset(X, y, rng.choice(3, n, p=[0.6, 0.35, 0.05]))


def test_projected_newton_certifies_weighted_fits_warm_started_as_the_dual_method_runs_them():
    """The group-DRO dual method's inner solves: min over the ball of sum_g q_g R_g for a sequence of q, each from the
    last answer. On the sphere the eigenbasis step erred in the flat directions by more than the step it took there,
    and two of these twelve solves stopped at a Frank-Wolfe gap up to 10x the tolerance (Newton's step no longer
    descended); the step refined in Jacobi-scaled coordinates certifies all twelve."""
    data = raw_design(4000)
    groups = data.groups.codes
    sizes = np.bincount(groups)
    rng = np.random.default_rng(0)
    theta = np.zeros(data.n_features + 1)
    for _ in range(12):
        q = rng.dirichlet(np.ones(3))
        loss = LinearModelLoss(Logistic(), data.X, data.y, intercept=True, sample_weight=q[groups] / sizes[groups])
        theta, value, gap = minimize_on_ball(loss.newton_oracle(), theta, 5.0, tol=1e-10)   # raises if not certified
        assert gap <= 1e-7 * max(1.0, value)


def test_the_metric_is_exact_in_every_direction_of_a_design_in_raw_units():
    """theta = M u gives u the metric P (M'PM = I) and the ball an axis-aligned ellipsoid (M'M diagonal). Factored
    from P's own eigendecomposition, P's eigenvalues below 1e-12 of the largest (the indicators' directions, beside
    the sampling weight's 4e10) were floored there and M'PM fell to 1e-3 in them."""
    data = raw_design(4000)
    Z = np.column_stack([data.X, np.ones(data.n_samples)])
    S = Z.T @ Z / data.n_samples
    P = S + np.diag(1e-3 * np.diag(S))
    c = Coordinates(P, 5.0)
    np.testing.assert_allclose(c.M.T @ P @ c.M, np.eye(P.shape[0]), atol=1e-8)
    np.testing.assert_allclose(c.M_inv @ c.M, np.eye(P.shape[0]), atol=1e-8)
    np.testing.assert_allclose(c.M.T @ c.M, np.diag(1 / c.d), atol=1e-12 * (1 / c.d).max())
    rng = np.random.default_rng(1)
    u = c.project(rng.normal(size=P.shape[0]) * 100)
    assert np.linalg.norm(c.to_theta(u)) <= 5.0 * (1 + 1e-12)


def test_group_dro_on_a_design_in_raw_units_is_certified_by_both_backends():
    """Before: the exact dual method's inner solve failed (Frank-Wolfe gap 2e-5) and ALEG stopped failing fast at 76x
    its gap tolerance (its metric floored the indicators' directions)."""
    data = raw_design(4000)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    report = fm.crosscheck(prob, seed=0, exact_options={"method": "dual"})
    assert report.ok and report.stochastic.status == "converged", report.to_markdown()


def test_ball_qp_step_on_the_sphere_is_accurate_in_every_coordinate_of_raw_units():
    """A census-like design's weighted second moment (curvatures of a logistic fit near separation) and a ball QP
    whose solution is known from its KKT conditions (theta* on the sphere, b = (H + mu I) theta*): the KKT residual in
    Jacobi-scaled units is at rounding level (8e-18), not at the eigenbasis answer's 3e-13."""
    rng = np.random.default_rng(0)
    n = 2000
    category = np.eye(6)[rng.choice(6, n, p=[.5, .2, .15, .1, .049, .001])]
    X = np.column_stack([rng.lognormal(12.0, 0.6, n), rng.uniform(17, 90, n), category])
    c = rng.uniform(1e-6, 0.25, n) ** 2                                 # a logistic loss's p(1-p) near a separating fit
    H = X.T @ (c[:, None] * X) / n
    theta_star = rng.normal(size=H.shape[0]) / np.sqrt(np.diag(H))      # every coordinate on its own scale
    theta_star *= 5.0 / np.linalg.norm(theta_star)
    mu = 1e-3
    b = H @ theta_star + mu * theta_star                                 # KKT of the sphere with multiplier mu
    theta = ball_qp_step(H, b, 5.0)
    D = np.sqrt(np.diag(H))
    err = np.linalg.norm((H @ theta + mu * theta - b) / D) / np.linalg.norm(b / D)
    assert err <= 1e-14      # the eigenbasis answer: 3e-13 (Newton's Frank-Wolfe gap stayed 10x its tolerance)


def test_ball_qp_step_keeps_the_minimum_norm_solution_of_a_singular_system_in_raw_units():
    """An indicator column and its double (H singular along 2 e_2 - e_6) beside raw-unit columns: the scaled re-solve
    gives the minimum-norm solution in theta (its component along the null direction dropped), which decides whether
    the free minimizer lies inside a ball."""
    rng = np.random.default_rng(1)
    n = 2000
    ind = np.eye(4)[rng.choice(4, n)]
    X = np.column_stack([rng.lognormal(12.0, 0.6, n), rng.uniform(17, 90, n), ind, 2.0 * ind[:, 0]])
    H = X.T @ X / n
    v = np.zeros(H.shape[0]); v[2], v[6] = 2.0, -1.0           # H v = 0: column 6 is twice column 2
    v /= np.linalg.norm(v)
    x0 = rng.normal(size=H.shape[0]) / np.sqrt(np.diag(H))
    b = H @ x0
    expected = x0 - (x0 @ v) * v
    theta = ball_qp_step(H, b, None)
    np.testing.assert_allclose(theta, expected, rtol=1e-6, atol=1e-9 * np.abs(expected).max())


def test_mero_on_a_design_in_raw_units_is_certified_by_the_stochastic_method():
    """Before the metric's scaled factor, two-stage ALEG stopped failing fast at 74x its gap tolerance here."""
    data = raw_design(4000)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    result = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks)))).solve(backend="stochastic", seed=0)
    assert result.status == "converged", result.message


def test_the_model_space_method_certifies_rate_gap_bounds_in_raw_units():
    """The logistic loss under a bound on a rate gap (selection rate, equal opportunity, equalized odds): the
    interior-point method's Newton systems span curvatures 1e10 apart. Its merit (the Euclidean norm of the KKT
    residual, dominated by the sampling weight's coordinate) cut every step to 0.004-0.03, and Mehrotra's corrector
    ascended it; all nine of these runs ended stalled or inaccurate. Each must be certified (the judge's Lagrangian
    gap), and one answer must equal Clarabel's objective on the CVXPY program (an independent formulation; Clarabel
    reports it inaccurate on these units, yet its value agreed to 1e-10 in the runs measured)."""
    gaps = (fm.selection_rate_gap, fm.equal_opportunity_gap, fm.equalized_odds_gap)
    for seed in range(3):
        data = raw_design(2000, seed)
        w = fm.Weights(data.n_features, radius=5.0, intercept=True)
        s = data.score(w)
        for gap in gaps:
            prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))), [gap(s, data) <= 0.05])
            result = prob.solve(backend="exact", method="model_space")
            assert result.status == "optimal", (seed, gap.__name__, result.message)
            assert result.certificate["lagrangian_gap"] <= 1e-6
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = prob.solve(backend="exact", method="cvxpy", solver="CLARABEL")
        assert abs(result.objective - reference.objective) <= 1e-6 * max(1.0, abs(reference.objective))


def test_the_group_dro_dual_method_certifies_columns_scaled_from_1e_minus_6_to_1e6():
    """SLSQP's stopping test is on the dual value, flat to second order near q*: on 5,000 Adult rows by race with the
    columns scaled by 1e-6..1e6 its run stopped at a duality gap of 1.7e-5 (over the judge's 1e-5), the group with the
    largest risk weighted 4e-5. Runs again from its answer certify it: the duality gap is the largest group risk at
    the answer (recomputed here with NumPy) minus the dual value g(q), a lower bound on the optimum."""
    base = fm.datasets.load_adult(sensitive="race").subsample(5000, seed=0)
    scales = np.logspace(-6, 6, base.n_features)
    np.random.default_rng(0).shuffle(scales)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = fm.Dataset(base.X * scales, base.y, base.groups)
    w = fm.Weights(data.n_features, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    result = prob.solve(backend="exact", method="dual")
    assert result.status == "optimal", result.message
    theta, codes = result.variables[w.name], data.groups.codes
    margins = data.y * (data.X @ theta)
    largest = max(np.mean(np.logaddexp(0.0, -margins[codes == g])) for g in range(data.groups.n_groups))
    assert largest == pytest.approx(result.objective, rel=1e-10)
    assert 0.0 <= largest - result.certificate["lower_bound"] <= 1e-6


def bundled_frame(name: str):
    """A bundled CSV file as a new user reads it with pandas (rows with missing values dropped)."""
    pd = pytest.importorskip("pandas")
    import gzip
    import io
    from importlib import resources
    raw = resources.files("fairmodel").joinpath("_data").joinpath(f"{name}.csv.gz").read_bytes()
    return pd.read_csv(io.BytesIO(gzip.decompress(raw))).replace("?", np.nan).dropna().reset_index(drop=True)


def from_frame(df, target: str, sensitive: str, n: int, seed: int):
    with warnings.catch_warnings():      # the Dataset warns that the columns are badly scaled: the point here
        warnings.simplefilter("ignore")
        return fm.Dataset.from_frame(df, target=target, sensitive=sensitive).subsample(n, seed=seed)


def raw_adult(sensitive: str, n: int, seed: int):
    """Adult's CSV file: numeric columns in their own units, categories one-hot, income -> +-1; n rows."""
    df = bundled_frame("adult")
    df["income"] = np.where(df["income"] == ">50K", 1.0, -1.0)
    return from_frame(df, "income", sensitive, n, seed)


def test_the_metric_radius_scale_of_a_loss_that_is_not_smooth():
    """In the design metric the radius step is 0.5 D / (sup |phi'| sqrt(p)), D = min(radius sqrt(lambda_max(P)), 2 |y|)
    (the answer's root-mean-square score): a factor 0.5 D sqrt(p) of the hinge's curvature step 1 / p. None for a
    smooth loss, and none where the steps are Euclidean."""
    data = raw_design(3000)
    p = data.n_features + 1
    for radius in (1e-6, 0.3):
        w = fm.Weights(data.n_features, radius=radius, intercept=True)
        hinge = group_risks_of(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))
        top = np.linalg.eigvalsh(hinge.second_moment(full=True))[-1]
        expected = 0.5 * min(radius * np.sqrt(top), 2.0) * np.sqrt(p)
        assert metric_radius_scale(hinge) == (pytest.approx(expected, rel=1e-12) if expected > 2 else None)
        logistic = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
        assert metric_radius_scale(logistic) is None
    standardized = fm.datasets.load_adult(sensitive="sex").subsample(2000, seed=0)
    w = fm.Weights(standardized.n_features, radius=1.0)
    hinge = group_risks_of(fm.group_mean(fm.hinge_loss(standardized.score(w), standardized.y), standardized.groups))
    assert metric_radius_scale(hinge) is None


def test_hinge_group_dro_on_raw_adult_certifies_in_a_second_run_with_the_metric_radius_step():
    """Raw Adult by race, 5,000 rows, radius 0.3, hinge loss: the steps are in the design metric, where the curvature
    step (1 / p) stalled at 14.5x the gap tolerance and the run stopped failing fast after 60 epochs; the second run,
    with the radius step measured in the metric (10x longer here), certifies, and the result says so."""
    data = raw_adult("race", 5000, seed=541)
    w = fm.Weights(data.n_features, radius=0.3, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))
    solved_in_a_second_run(prob, "radius step")


def test_the_model_space_method_certifies_an_equalized_odds_bound_on_raw_adult():
    """4,000 raw Adult rows by sex, logistic loss under an equalized-odds gap of 0.05: Mehrotra's corrector step
    ascended the merit from the second iteration on, and with the corrector alone the method stalled at iteration 38
    (no step reduced the KKT residual); the plain centred step it falls back to certifies in about 20 iterations."""
    data = raw_adult("sex", 4000, seed=113)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))), [fm.equalized_odds_gap(s, data) <= 0.05])
    result = prob.solve(backend="exact", method="model_space")
    assert result.status == "optimal", result.message
    assert result.certificate["lagrangian_gap"] <= 1e-6


def test_squared_group_dro_on_raw_law_school_certifies_in_a_second_run_in_the_design_metric():
    """Law School's CSV file with the LSAT score (11-48) as the target of the squared loss, groups race x gender,
    radius 3, 4,000 rows: the columns' ratios leave the steps Euclidean, the curvature step is 1.4e-4 (uncentered
    columns) and the run stopped failing fast at 29x its gap tolerance (it would have needed about 2,600 epochs);
    the minibatch step is within 1.5x of it, so the second run takes the steps in the design metric and certifies."""
    df = bundled_frame("lawschool").drop(columns=["bar1"])
    df["race_gender"] = np.where(df["race"] == 7, "white", "non-white") + "/" + df["gender"].astype(str)
    data = from_frame(df.drop(columns=["race", "gender"]), "lsat", "race_gender", 4000, seed=544)
    w = fm.Weights(data.n_features, radius=3.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.squared_loss(data.score(w), data.y), data.groups))))
    solved_in_a_second_run(prob, "design metric", longer=False)


def test_step_scale_refuses_what_is_not_a_positive_number():
    data = raw_design(500)
    w = fm.Weights(data.n_features, radius=1.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))
    for bad in (0.0, -1.0, float("nan"), float("inf"), True, "2", None):
        with pytest.raises(fm.OptionError, match="step_scale"):
            prob.solve(backend="stochastic", seed=0, step_scale=bad)


def test_the_second_runs_run_on_dask_backed_rows():
    """The second runs' rules read the design in passes (its second moment on a subsample, the rows' norms), so they
    run on chunked rows: the metric radius step (the hinge on raw Adult, as above) certifies on a Dask array of
    1,000-row chunks."""
    pytest.importorskip("dask.array")
    from .dask_helpers import as_dask_dataset
    data = raw_adult("race", 5000, seed=541)
    labels = np.asarray(data.groups.names, dtype=object)[data.groups.codes]
    with warnings.catch_warnings():      # the Dataset warns that the columns are badly scaled: the point here
        warnings.simplefilter("ignore")
        chunked = as_dask_dataset(np.asarray(data.X, dtype=float), data.y, labels, 1000)
    w = fm.Weights(chunked.n_features, radius=0.3, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(chunked.score(w), chunked.y), chunked.groups))))
    result = prob.solve(backend="stochastic", seed=0)
    assert result.status == "converged" and "radius step" in result.message, result.message


def test_mero_at_a_large_radius_on_raw_adult_is_certified_by_the_exact_method():
    """4,000 raw Adult rows by sex, logistic MERO at radius 50: projected Newton's steps along the sphere resolve a
    Frank-Wolfe gap of about 3e-7 there and then raise it again by rounding (6.9e-9, then 9.5e-6, 3.2e-5, 1.3e-4 for a
    group's optimum). The method returned its last iterate and failed (the group optima of MERO, so both backends
    failed); it returns the iterate of the smallest gap, and the dual method bounds an inner solve that stops short of
    its tolerance by its gap. The epigraph program (CVXPY) agrees, and so do the group optima by their own programs
    (projected Newton alone resolves them to 3e-7 or to 6e-5, as BLAS's kernels round)."""
    data = raw_adult("sex", 4000, seed=612)
    w = fm.Weights(data.n_features, radius=50.0, intercept=True)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))
    res = prob.solve(backend="exact", method="dual")
    assert res.ok and res.certificate["duality_gap_bound"] <= 1e-4 * max(1.0, res.objective), res.message
    epigraph = prob.solve(backend="exact", method="epigraph")
    assert res.objective == pytest.approx(epigraph.objective, abs=1e-5)
    # each group's optimum the result used, against its own CVXPY program (an independent formulation; 1e-6: the
    # exponential-cone solver's accuracy on raw units, the columns' scales spanning five orders of magnitude)
    theta = cp.Variable(data.n_features + 1)
    for g, name in enumerate(data.groups.names):
        rows = data.groups.codes == g
        scores = data.X[rows] @ theta[:-1] + theta[-1]
        program = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(data.y[rows], scores))) / rows.sum()),
                             [cp.norm(theta) <= 50.0])
        program.solve(solver="CLARABEL")
        assert res.metrics["group_optimal"][name] == pytest.approx(program.value, abs=1e-6 * max(1.0, program.value))


@pytest.mark.parametrize("tiny", [0.0, 1.33729182e-251])
def test_the_hinge_inner_minimum_on_raw_adult_is_bounded_tightly(tiny):
    """The judge's inner minimum of group DRO's gap for the hinge (the smoothed risks' minima and the tangent lines'
    Frank-Wolfe bound) on 5,000 raw Adult rows at radius 5, one group weighted 1 and the other 0 or 1e-251 (as an
    ALEG run's q): the bound is within 1e-5 of the weighted risk's minimum by the CVXPY program (an independent
    formulation). Before, projected Newton on the smoothing at mu = 0.01 stopped at its first step (Frank-Wolfe gap
    4e3): the ball problem's unconstrained solution lay inside the ball but had lost the part of b outside the
    Hessian's range (rank 20 of 103), so the model rose along it; with the weight 1e-251 the rows' curvatures of
    2e-313 made the Jacobi-scaled problem infinite. The judge's bound stayed 0.0057 above the minimum."""
    import cvxpy as cp
    from fairmodel.exact.gdro import cvxpy_weighted_risk, smoothed_weighted_erm
    data = raw_adult("sex", 5000, seed=601)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    risks = group_risks_of(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))
    q = np.array([tiny, 1.0])
    theta = cp.Variable(risks.shape)
    program = cp.Problem(cp.Minimize(cvxpy_weighted_risk(risks, theta, q)), [cp.norm(theta) <= 5.0])
    program.solve(solver="CLARABEL")
    _, value, bound, _ = smoothed_weighted_erm(risks, q)
    assert bound <= program.value + 1e-7 <= value + 2e-7       # rigorous: below the minimum, above by the solver's
    assert program.value - bound <= 1e-5


def test_jacobi_scaling_counts_a_subnormal_diagonal_as_zero():
    """A coordinate whose curvature is subnormal (2e-313) keeps the scale 1: its inverse square would overflow."""
    from fairmodel.oracles.metric import jacobi_scaled
    A = np.diag([1.8e10, 5e-127, 2.2e-313, 0.0])
    scaled, d = jacobi_scaled(A)
    assert np.all(np.isfinite(1.0 / d ** 2)) and d[2] == 1.0 and d[3] == 1.0
    np.testing.assert_allclose(np.diag(scaled)[:2], 1.0)
