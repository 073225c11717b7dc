"""The units of the gaps: ``fm.dp_gap(post, pairwise=True)`` bounds the largest pairwise gap between the groups'
prediction distributions (here two groups, K groups in tests/test_dp_pairwise.py; checked by brute force on the
exact LP's policy, and on the stochastic backend within its documented 20% of eps), the default stays "vs the
population", and the words appear in the notation, the metrics and fm.assess.

Identities hold to the LP's tolerance (1e-7, the family's own exact check); the stochastic backend's violation
tolerance is the family's (20% of eps plus 1e-6, Theorem 5.1 of Chzhen, Hebiri, Taturyan 2024)."""
import numpy as np
import pytest

import fairmodel as fm


def _post(n=150, seed=5, L=4):
    rng = np.random.default_rng(seed)
    tau = rng.dirichlet([2, 3], size=n)
    eta = rng.normal(size=n) + 1.5 * tau[:, 0]
    return fm.GridPredictor(eta=eta, tau=tau, L=L, B=3.0, clip=True), tau


def _pairwise(P, tau, p):
    """max_l |P(l | a) - P(l | b)| with P(l | s) = mean(P[:, l] tau_s) / p_s: the plug-in of eq. (15)."""
    cond = (P.T @ tau) / P.shape[0] / p
    return float(np.max(np.abs(cond[:, 0] - cond[:, 1])))


def test_pairwise_dp_gap_bounds_the_largest_pairwise_gap_exactly():
    post, tau = _post()
    eps = 0.05
    pair = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post, pairwise=True) <= eps])
    r = pair.solve(method="lp", solver="HIGHS")
    p = np.asarray(r.metrics["p"])
    gap = _pairwise(np.asarray(r.variables["P"]), tau, p)
    (name, record), = r.constraints.items()
    assert "largest pairwise" in name and r.ok
    assert record["value"] == pytest.approx(gap, abs=1e-9) and record["bound"] == pytest.approx(eps)
    assert gap <= eps + 1e-7
    assert gap >= eps - 1e-7                      # it binds: the unconstrained policy is less fair (below)
    # the default unit: each group vs the population, a weaker constraint at the same eps (a smaller risk)
    pop = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= eps]).solve(method="lp", solver="HIGHS")
    assert pop.ok and pop.metrics["dp_gap_comparison"] == "vs the population"
    assert pop.objective <= r.objective + 1e-9
    assert _pairwise(np.asarray(pop.variables["P"]), tau, p) > eps + 1e-3
    # the same constraint written per group: U_s <= (1 - p_s) eps
    per_group = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= eps * (1 - p)])
    assert per_group.solve(method="lp", solver="HIGHS").objective == pytest.approx(r.objective, abs=1e-8)


def test_pairwise_dp_gap_on_the_stochastic_backend():
    post, tau = _post(n=400, seed=2)
    eps = 0.05
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post, pairwise=True) <= eps], entropy=0.01)
    r = prob.solve(backend="stochastic", seed=0)
    (name, record), = r.constraints.items()
    assert r.ok and "largest pairwise" in name
    assert record["value"] <= 1.2 * eps + 1e-6


def test_pairwise_refuses_vector_eps():
    post, _ = _post()
    with pytest.raises(fm.ModelError, match="one number"):
        fm.dp_gap(post, pairwise=True) <= [0.1, 0.2]


def test_the_notation_names_the_comparison():
    post, _ = _post()
    assert "vs the population" in str(fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.1]))
    text = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post, pairwise=True) <= 0.1]).describe()
    assert "largest pairwise" in text


def test_the_pairwise_notation_compiles_in_latex():
    from tests.latex_check import check_latex

    post, _ = _post()
    check_latex(fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post, pairwise=True) <= 0.1])
                .describe(format="latex"))


def test_assess_names_the_comparison_of_its_rows():
    rng = np.random.default_rng(0)
    y, p, g = rng.integers(0, 2, 200), rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    a = fm.assess(y, y_pred=p, sensitive_features={"g": g}, metrics=["selection_rate"])
    rates = [p[g == k].mean() for k in (0, 1)]
    d = a.difference()
    assert d.name == "difference (largest pairwise)" and d["selection_rate"] == pytest.approx(abs(rates[0] - rates[1]))
    assert a.difference("to_overall").name == "difference (vs the population)"
    assert "difference (largest pairwise)" in str(a) and "ratio (smallest pairwise)" in a.to_markdown()
