"""Long statistical and end-to-end checks of DP post-processing (run with ``pytest -m slow``)."""
import numpy as np
import pytest

from fairmodel.oracles.dp_dual import DualProblem, canonical, gradient_mapping, sigma2
from fairmodel.families.dp_runs import dp_parameters
from fairmodel.stochastic.dp_postprocessing import DualRun, Pool, make_optimizer

pytestmark = pytest.mark.slow


def test_theory_preset_gradient_mapping_rate():
    """Eq. (29): under the 'theory' preset (beta = T/(8 log2 T), L = sqrt(T), mu = 2 sigma^2/beta),
    E||G_alpha(z_hat)||^2 = O~(1/T), an upper bound. The mean over 4 seeds must decrease from T = 2^11 to 2^13 to
    2^15 with a fitted log-log slope of at most -0.8 (the rate -1, with slack for the log2^3..log2^5 factors of
    Thm C.2). Measured: -2.7 on this instance, faster than the bound."""
    rng = np.random.default_rng(0)
    n, K = 400, 2
    tau = rng.dirichlet([2, 5], size=n)
    p = tau.mean(axis=0)
    T_hat = 1.0 - tau / p
    eta = np.clip(0.8 * (tau[:, 0] - p[0]) + 0.2 * rng.normal(size=n), -1, 1)
    Ts, values = [2 ** 11, 2 ** 13, 2 ** 15], []
    for T in Ts:
        rule = dp_parameters("theory", T=T)
        grid = np.arange(-rule["L"], rule["L"] + 1) / rule["L"]
        dual = DualProblem((eta[:, None] - grid) ** 2, T_hat, np.full(K, 0.01), rule["beta"])
        M = 2 * rule["beta"] * sigma2(p)
        mu = M / rule["beta"] ** 2
        out = []
        for seed in range(4):
            opt, info = make_optimizer("sgd3", dual.zeros(), M=M, mu=mu, steps=T)
            run = DualRun(opt, dual.beta, dual.eps, 1).run(Pool(dual.T, dual.R).batches(
                "resample", 1, T, np.random.default_rng(seed)))
            z = canonical(run.output)
            out.append(np.sum(gradient_mapping(z, dual.grad(z), info["alpha"]) ** 2))
        values.append(np.mean(out))
    slope = np.polyfit(np.log(Ts), np.log(values), 1)[0]
    assert values[0] > values[1] > values[2] and slope <= -0.8, (slope, values)


@pytest.mark.parametrize("name,i,risk,spread,U0,U0_spread", [
    ("communities", 512, 0.0423, 0.005, 0.0754, 0.027),   # Figure 2
    ("adult", 512, 0.0178, 0.0012, 0.0227, 0.027),
])
def test_reproduction_matches_the_published_numbers(name, i, risk, spread, U0, U0_spread):
    """The reference-code variant over 10 splits lands within the paper's spread at the tightest
    eps (Law School does not: see docs/dp_postprocessing.md, 'Reproduction')."""
    from fairmodel.estimators.dp_reproduction import run_split, summarize
    runs = [run_split(name, k, eps_exponents=[i], variant="reference") for k in range(10)]
    row = summarize(name, runs)[-1]
    assert abs(row["risk"] - risk) <= spread
    assert abs(row["U0"] - U0) <= U0_spread


def test_communities_at_two_to_minus_8_meets_the_constraint_and_the_exact_optimum():
    """Communities and Crime, split 0, eps = 2^-8, the protocol of the paper (Section 6, App. G). The stochastic
    backend run to the judge's checks is ok (its judged violation on the unlabeled points within 20% of eps + 1e-6),
    and on the test points its risk and U_0 are close to the exact optimum's: risk within 0.002, five times the
    judge's accuracy on the unlabeled points brought to the [0, 1] scale (2% of |risk| + |entropy term| ~ 1.6e-3 on
    [-1, 1], a quarter of it on [0, 1]), the test points being other points than the judged ones; U_0 within
    0.2 eps m = 0.045, what the judge's tolerance lets the KS distance grow on the m = 57 grid points
    (KS <= sum_l U_0(pi, l)). Measured: 0.0004 and 0.004. The authors' computation (variant='reference', one run of
    the paper's T = 15,000) is not ok there: it exceeds eps on the unlabeled points beyond the tolerance (measured
    violation 3.4e-3, tolerance 7.8e-4), as in the side-by-side with the authors' code."""
    from fairmodel.estimators.dp_reproduction import run_split
    stoch = run_split("communities", 0, eps_exponents=[8], variant="reference", stop="checks", T=10 ** 8)["eps"][0]
    exact = run_split("communities", 0, eps_exponents=[8], backend="exact")["eps"][0]
    authors = run_split("communities", 0, eps_exponents=[8], variant="reference")["eps"][0]
    assert stoch["ok"] and stoch["violation"] <= stoch["tolerance"] and exact["ok"]
    assert abs(stoch["risk"] - exact["risk"]) <= 0.002
    assert abs(stoch["U"]["non-white"] - exact["U"]["non-white"]) <= 0.2 * 2.0 ** -8 * 57
    assert not authors["ok"] and authors["violation"] > authors["tolerance"]
