"""Weighted losses in partial fairness keep the certified interior-point path: its first IDCA step agrees with
the CVXPY program's (an independent formulation) and integer weights equal repeated rows."""
import numpy as np

import fairmodel as fm


def problem(data, sample_weight=None):
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    loss = fm.logistic_loss(s, data.y, sample_weight=sample_weight)
    return fm.Problem(fm.Minimize(fm.mean(loss) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.70, 1.00)) <= 0.1])


def base(n=300):
    return fm.with_group_interactions(fm.datasets.load_lawschool().subsample(n, seed=5))


def test_weighted_loss_uses_the_interior_point_solver_and_agrees_with_cvxpy():
    data = base()
    sw = np.random.default_rng(0).uniform(0.2, 3.0, data.n_samples)
    prob = problem(data, sw)
    assert not isinstance(prob.family.hinge(), str)          # the weighted mean is a smooth objective
    # the first IDCA step (later steps pass differences within the solvers' tolerances through kinks of f_i-)
    ipm = prob.solve(backend="exact", outer=1, certificate=False)
    cvx = prob.solve(backend="exact", outer=1, inner="cvxpy", certificate=False)
    assert ipm.solver["name"] == "idca+ipm" and cvx.solver["name"] != "idca+ipm"
    assert abs(ipm.objective - cvx.objective) <= 1e-6
    # the weights matter: the unweighted problem's first step lands elsewhere
    plain = problem(data).solve(backend="exact", outer=1, certificate=False)
    assert abs(plain.objective - ipm.objective) > 1e-4


def test_smooth_objective_equals_the_weighted_mean_of_the_declaration():
    """The interior-point solver's objective (LinearModelLoss with the weights) against the DSL's own
    evaluation of the weighted mean (sum w l / sum w) and against integer weights as repeated rows."""
    data = base(200)
    counts = np.random.default_rng(1).integers(1, 4, data.n_samples).astype(float)
    prob = problem(data, counts)
    objective, layout = prob.family.hinge().objective, prob.family.program.layout
    repeated = data.take(np.repeat(np.arange(data.n_samples), counts.astype(int)))
    rng = np.random.default_rng(2)
    for _ in range(3):
        v = rng.standard_normal(layout.D)
        theta = v[layout.slices["w"]] if "w" in layout.slices else v[layout.slices[next(iter(layout.slices))]]
        scores = repeated.X @ theta[:-1] + theta[-1]
        brute = np.mean(np.logaddexp(0.0, -repeated.y * scores)) + 1e-3 * float(theta[:-1] @ theta[:-1])
        assert abs(objective(v)[0] - brute) <= 1e-10
        assert abs(prob.family.program.objective_value(v) - brute) <= 1e-10


def test_judged_accuracy_is_weighted_like_the_loss():
    data = base(200)
    sw = np.random.default_rng(3).uniform(0.0, 2.0, data.n_samples)
    prob = problem(data, sw)
    res = prob.solve(backend="exact", outer=2, certificate=False)
    theta = res.variables["w"]
    correct = np.where(data.X @ theta[:-1] + theta[-1] > 0, 1.0, -1.0) == data.y
    assert abs(res.metrics["accuracy"] - np.average(correct, weights=sw)) <= 1e-12
    assert abs(correct.mean() - np.average(correct, weights=sw)) > 1e-3      # the weights change it here
