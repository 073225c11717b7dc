"""Failing fast: a stochastic run whose certificate stalls, or falls too slowly to pass before its cap, stops at a
checkpoint with the measured rate and the projected cost (families/stopping.py); a converging run is not stopped.
And the facts the default steps read: a loss kernel's smoothness as a function of the score bound."""
import math

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.families.base import Check
from fairmodel.families.stopping import FAIL_FAST_MARGIN, FAIL_FAST_NEAR, CertifiedStop, outlook
from fairmodel.oracles.losses import KERNELS, Exponential

from tests.test_stopping import _gdro

from .conftest import dp_law_quickstart


def _scripted(ratios, works, cap, tolerance=1e-3):
    """A CertifiedStop whose judge returns the certificate ratio x tolerance of the scripted sequence, checked at
    ``works``; returns (the stopper, the checkpoint index at which it gave up or None)."""
    values = iter(ratios)
    stop = CertifiedStop(None, lambda info: {}, cap=cap,
                         judge=lambda v: (None, [Check("gap", next(values) * tolerance, tolerance, "", "certificate")]))
    for k, work in enumerate(works):
        stop.check({}, work - 1, work)
        if stop.stop_now:
            return stop, k
    return stop, None


def test_the_projected_cost_is_computed_from_the_measured_rate():
    """r falls from 100 to 25 while the work grows 10 -> 40: p = log(100/25) / log(40/10) = 1 over the last doubling
    (20 -> 40: log(50/25) / log 2 = 1), and the checks pass at W r^(1/p) = 40 x 25 = 1000; halving as the work
    quadruples is p = 1/2 and a projection of 40 x 25^2 = 25,000."""
    fast = outlook([(10, 100.0), (20, 50.0), (40, 25.0)])
    assert fast.rate == pytest.approx(1.0) and fast.since == 20 and fast.projected == pytest.approx(1000.0)
    slow = outlook([(10, 100.0), (20, 100 / math.sqrt(2)), (40, 50.0)])
    assert slow.rate == pytest.approx(0.5) and slow.projected == pytest.approx(40 * 50.0 ** 2)
    # best so far: an unlucky checkpoint (80 at 40) does not count, a lucky one (30 at 20) does
    noisy = outlook([(10, 100.0), (20, 30.0), (40, 80.0), (50, 40.0)])
    assert noisy.ratio == 30.0 and noisy.since == 20 and noisy.rate == pytest.approx(0.0)
    assert math.isinf(noisy.projected) and noisy.stalled
    # no checkpoint at or before half the work yet: no rate
    assert outlook([(10, 100.0), (15, 50.0)]) is None


def test_an_accelerating_rate_is_projected_linearly_in_the_work():
    """log r falling linearly in the work (r = 1000 e^(-W/100)) has log-log rates that grow at every checkpoint: at
    100, 150 and 200 they are 0.72, 0.91 and 1.44 (each at least 1.25x the one before), so the projection extrapolates
    the last doubling's decrease of log r per unit of work and lands where the curve passes: W = 100 ln 1000 = 691. The
    power law would project 200 x 135^(1/1.44), about 6,000. One lucky checkpoint (one rate up, the next down) is not
    acceleration."""
    works = [50, 100, 150, 200]
    linear = outlook([(w, 1000 * math.exp(-w / 100)) for w in works])
    assert linear.previous_rate == pytest.approx(1 / math.log(3)) and linear.rate == pytest.approx(1 / math.log(2))
    assert linear.projected == pytest.approx(100 * math.log(1000), rel=1e-9)
    assert 200 * (1000 * math.exp(-2)) ** (1 / linear.rate) > 8 * linear.projected      # the power law's projection
    lucky = outlook([(50, 300.0), (100, 150.0), (150, 60.0), (200, 55.0)])
    assert lucky.previous_rate is None
    assert lucky.projected == pytest.approx(200 * 55.0 ** (1 / lucky.rate))


def test_a_scripted_slow_run_stops_on_its_second_hopeless_projection_with_the_rate_in_the_message():
    """p = 1/2 from r = 100 at 10: projection 40 x 50^2 = 80 x 35.4^2 = 1e5 > 2 x cap 1000 at the third checkpoint
    and at the fourth: the run stops there (not at the third: the projection must exceed twice the cap at two
    checkpoints in a row), its message names the rate and the projected work."""
    works = [10, 20, 40, 80, 160]
    ratios = [100 * math.sqrt(10 / w) for w in works]
    stop, at = _scripted(ratios, works, cap=1000)
    assert at == 3 and not stop.passed
    assert stop.gave_up.rate == pytest.approx(0.5) and stop.gave_up.projected == pytest.approx(80 * ratios[3] ** 2)
    solution = fm.families.base.Solution(variables={}, status="converged")
    stop.finish(solution, cap="epochs=1000")
    assert solution.status == "completed"
    assert "rate of 0.5" in solution.message and "pass after about 1e+05 epochs" in solution.message
    assert solution.metrics["projected_work"] == pytest.approx(80 * ratios[3] ** 2)


def test_a_converging_run_is_not_stopped():
    """The Lagrangian gap / tolerance of the generic lowering at its checkpoints on group DRO with the hinge loss under
    equal opportunity (Adult by race, 6,000 rows; it passed at epoch 124 of its cap 400): a slow start (rate 0.79 from
    20 to 40 epochs, projecting 1,500 epochs) and then the linear convergence of the restarts. And a run at the rate 1/2
    that would pass within the margin over the cap (it is stopped when it would not)."""
    works = [10, 20, 30, 40, 50, 63, 79, 99]
    stop, at = _scripted([89.2, 30.5, 17.7, 20.7, 5.14, 3.26, 2.11, 1.41], works, cap=400)
    assert at is None and stop.points[-1] == (99.0, 1.41)
    borderline = [100 * (10 / w) ** 0.5 for w in works]           # passes at 1e5
    assert _scripted(borderline, works, cap=1.01e5 / FAIL_FAST_MARGIN)[1] is None
    assert _scripted(borderline, works, cap=0.9e5 / FAIL_FAST_MARGIN)[1] == 3


def test_a_noisy_certificate_near_its_tolerance_is_not_stopped_for_a_stall():
    """The duality gap / tolerance of strategic DRO on 300 synthetic points at its checkpoints (50-250 epochs, cap
    2,000): 1.17x at epoch 100, then worse after two warm restarts of the tail average; best so far it is flat (rate 0,
    a stall) but within FAIL_FAST_NEAR of passing, so the run goes on (it passes at epoch 489). The same trace three
    times farther from its tolerance is stopped at its fifth checkpoint."""
    works = [50, 100, 150, 200, 250]
    ratios = [2.44, 1.17, 1.63, 2.25, 2.29]
    stop, at = _scripted(ratios, works, cap=2000)
    assert at is None and stop.gave_up is None
    assert outlook(stop.points).stalled
    far, at = _scripted([3 * r for r in ratios], works, cap=2000)
    assert at == 4 and far.gave_up.stalled and far.gave_up.ratio > FAIL_FAST_NEAR


def test_a_restart_of_the_rate_forgets_the_checkpoints_and_the_hopeless_projection():
    """A method that changes its problem (IQRC doubling the SMD steps of a stage that made no progress) restarts the
    rate: a stalled trace that is hopeless at its third checkpoint is not stopped at its fourth after a restart; the
    stall measured afresh needs a doubling of the work since the restart and two hopeless projections in a row."""
    tolerance, ratios = 1e-3, iter([5.0] * 9)
    stop = CertifiedStop(None, lambda info: {}, cap=50,
                         judge=lambda v: (None, [Check("gap", next(ratios) * tolerance, tolerance, "", "certificate")]))
    for work in (1, 2, 3):
        stop.check({}, work - 1, work)
    assert stop.hopeless and stop.gave_up is None
    stop.restart_rate()
    for work in (4, 5, 6, 7, 8):
        stop.check({}, work - 1, work)
        assert stop.gave_up is None
    stop.check({}, 8, 9)
    assert stop.gave_up is not None and stop.gave_up.stalled and stop.gave_up.since == 4


def test_a_starved_run_stops_early_with_the_stall_message_and_is_not_ok():
    """ALEG with steps 1e-6 leaves the duality gap where it started (251x its tolerance): the run stops at its fourth
    checkpoint (60 of its 600 epochs) saying that the certificate stalled; the judge's verdict is not ok."""
    prob = _gdro()
    res = prob.solve(backend="stochastic", seed=0, step_w=1e-6, step_q=1e-6)
    assert not res.ok and res.status == "inaccurate"
    assert res.metrics["epochs_run"] == 60 and res.metrics["certificate_rate"] < 0.05
    assert "stopped early after 60 epochs" in res.message and "the certificate stalled" in res.message
    assert "What to try" in res.message


def test_a_cap_far_beyond_need_on_a_plateau_stops_in_seconds_and_says_what_can():
    """The (30, 4, 3) matrix game of normal entries with the paper's zeroth-order OGDA-RR (one-point estimates, no
    variance reduction): their noise (sigma 8.2 against 1.8 for the gradients) leaves the duality gap on a plateau
    about 26x its tolerance; the run ran to its cap of 33,334 epochs (409 s, inaccurate) before the fail-fast rule, and
    now stops at its fourth checkpoint. With gradients the default passes."""
    A = np.random.default_rng(0).standard_normal((30, 4, 3))
    sp = fm.SaddleProblem.matrix_game(A)
    zeroth = sp.solve(method="ogda-rr", order=0, seed=0, variance_reduction=False, estimator="one-point")
    assert not zeroth.ok and zeroth.metrics["epochs_run"] == 1000
    assert "stopped early after 1000 epochs" in zeroth.message and "stalled" in zeroth.message
    assert "order=0 cannot reach this tolerance" in zeroth.message
    assert "order=1" in zeroth.message and "backend='exact'" in zeroth.message
    first = sp.solve(method="ogda-rr", order=1, seed=0)
    assert first.ok and first.status == "converged" and "certificate_rate" not in first.metrics


def test_every_loss_smoothness_bounds_its_second_derivative_on_the_ball():
    """smoothness(B, y_bound) bounds |phi''| for every score |z| <= B (central differences of phi' on a fine grid),
    and for the exponential loss it is that bound itself (e^B, attained at z = -y B): finite on every ball, so the
    steps that read it are finite too."""
    h = 1e-5
    for name, K in KERNELS.items():
        if name == "softmax" or not K.smooth():
            continue
        for B in (0.5, 2.0, 6.0):
            z = np.linspace(-B, B, 2001)
            for label in ((-1.0, 1.0) if K.binary else (-0.7, 0.0, 1.3)):
                y = np.full_like(z, label)
                second = (K.dphi(z + h, y) - K.dphi(z - h, y)) / (2 * h)
                assert np.max(np.abs(second)) <= K.smoothness(B, abs(label)) * (1 + 1e-6) + 1e-6, (name, B)
    for B in (0.5, 2.0, 6.0):
        z = np.linspace(-B, B, 2001)
        for label in (-1.0, 1.0):
            y = np.full_like(z, label)
            second = (Exponential.dphi(z + h, y) - Exponential.dphi(z - h, y)) / (2 * h)
            assert np.max(second) == pytest.approx(Exponential.smoothness(B, 1.0), rel=1e-6)
    assert math.isinf(KERNELS["hinge"].smoothness(1.0, 1.0)) and not KERNELS["hinge"].smooth()
    assert Exponential.smooth() and math.isinf(Exponential.smoothness(800.0, 1.0))


@pytest.mark.slow
def test_aleg_with_the_exponential_loss_on_adult_by_race_is_ok_with_the_defaults():
    """Group DRO of the exponential loss on Adult by race at radius 5: with the curvature of the hinge (1) ALEG's
    steps diverged (the snapshot's largest group risk 4e5 after 12 epochs) and the run ended inaccurate with the
    objective 0.70 against the optimum 0.597; with the exponential loss's smoothness on unit scores it passes."""
    data = fm.datasets.load_adult(sensitive="race")
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.exponential_loss(data.score(w), data.y), data.groups))))
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.status == "converged" and res.method == "aleg"
    assert res.objective == pytest.approx(0.5969, abs=2e-3)


def test_dp_rounds_that_cannot_pass_stop_early_on_the_sampled_points():
    """DP post-processing (Law School GPA by race, 2,000 unlabeled points, eps 0.01) with SGD3's regularization
    mu = 10: its bias leaves the constraint violation falling at the rate 0.23 per log of the sampled points, which
    projects about 9e8 points against the cap T = 1e8; the rounds stop after the fourth (340,000 points) instead of
    running to the cap, and the result is not ok."""
    prob, unlabeled, _ = dp_law_quickstart()
    res = prob.solve(backend="stochastic", seed=0, data=unlabeled, method="sgd3", mu=10.0)
    assert not res.ok and res.metrics["rounds"] == 4 and res.metrics["samples_used"] == 340000
    assert "stopped early after 3.4e+05 points sampled" in res.message and "T=100000000" in res.message
    assert res.metrics["projected_work"] > 2 * 1e8 and 0.1 < res.metrics["certificate_rate"] < 0.5


def test_mero_stage_one_is_not_stopped_by_the_projection():
    """A stage-1 run of two-stage MERO is judged against the exact group optimum, and its estimate enters stage 2's
    objective one for one: stopping it early saves nothing and leaves stage 2 a wrong offset. Fed the same poor
    candidate (w = 0, far above the group's optimum: a stall at rate 0) at works 10 .. 320, a stage-1 stopper keeps
    going, where a stopper with a cap gives up at its fourth checkpoint (the stall rule)."""
    prob = _gdro(n=600, m=3, d=4, mero=True)
    stopper = prob.family._stage1_stops(budget=10)[0](0)
    zero = np.zeros(prob.family.w.shape)
    for work in (10, 20, 40, 80, 160, 320):
        assert not stopper.check({"w": zero}, work - 1, work)
        assert not stopper.stop_now and not stopper.passed
    assert stopper.gave_up is None
    capped = CertifiedStop(None, lambda info: {}, cap=200,
                           judge=lambda v: (None, [Check("gap", 10.0, 1.0, "", "certificate")]))
    stops = [capped.check({}, w - 1, w) or capped.stop_now for w in (10, 20, 40, 80, 160, 320)]
    assert stops.index(True) == 3


def _stalling_gdro_problem(n=10_000, seed=1):
    """Group DRO under an equal-opportunity bound on ``n`` rows of four groups; at 10,000 rows (seed 1), with the
    default steps and the default split of the coupling bound, the generic lowering's Lagrangian gap stalls at 5-8x
    its tolerance."""
    data = fm.datasets.make_skewed_synthetic(n, seed=seed)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    m = fm.group_mean(s, data.groups, where=data.y > 0)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(s, data.y), data.groups))),
                      [fm.max(m) - fm.min(m) <= 0.05])


def test_a_stalled_generic_run_halves_its_steps_and_certifies(monkeypatch):
    """With the split of the coupling bound fixed (the restarts' primal weight off), the stalled run above is not ok
    without the halving (checked here); a restart after a checkpoint without progress halves the steps and the run
    certifies, its objective within the judge's tolerance of the exact one."""
    from fairmodel.families import convex
    monkeypatch.setattr(convex, "balanced_weight", lambda weight, *args: weight)
    prob = _stalling_gdro_problem()
    exact = prob.solve()
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.metrics["steps_halved"] >= 1 and res.metrics["primal_weight"] == 1.0, res.message
    assert res.objective - exact.objective <= res.certificate["lagrangian_gap"] + 1e-9
    monkeypatch.setattr(convex, "SHRINKS", 0)
    monkeypatch.setattr(convex, "LAST_RESORT_RAISES", 0)      # a larger bound, or larger batches, also rescue it
    monkeypatch.setattr(convex, "BATCH_DOUBLINGS", 0)
    assert not prob.solve(backend="stochastic", seed=0).ok


def test_the_restarts_primal_weight_certifies_the_stalled_run_without_halving(monkeypatch):
    """The same run with the defaults: the restarts move the split toward w (its movement was the larger share) and it
    certifies without halving its steps; with the halving off it still does, and with the weight also off it does
    not (the test above)."""
    from fairmodel.families import convex
    prob = _stalling_gdro_problem()
    exact = prob.solve()
    monkeypatch.setattr(convex, "SHRINKS", 0)
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.metrics["primal_weight"] > 1.0, res.message
    assert res.objective - exact.objective <= res.certificate["lagrangian_gap"] + 1e-9


def test_the_steps_are_not_halved_where_the_primal_weight_moves_the_split():
    """A restart halves the steps only where the primal weight left the split as it was (w's step at its curvature
    cap: many parameters, where only the halving can slow w). On 3,000 rows (seed 26) the halving came on top of the
    weight: three halvings and the run stalled with the constraint violated 7x its tolerance until the fail-fast rule
    stopped it; with the weight alone it certifies."""
    prob = _stalling_gdro_problem(n=3000, seed=26)
    exact = prob.solve()
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.metrics["steps_halved"] == 0 and res.metrics["primal_weight"] != 1.0, res.message
    assert res.objective - exact.objective <= res.certificate["lagrangian_gap"] + 1e-9


def test_a_too_small_multiplier_bound_is_raised_before_the_fail_fast_rule_gives_up(monkeypatch):
    """A checkpoint at which the multiplier bound is found too small is never the one that stops the run: the rate
    that made the fail-fast rule give up there was measured under the smaller bound. Planted: the rule gives up at its
    first chance (the fourth checkpoint, epoch 40: no margin, no quarter-cap rule) and the bound is found too small
    from that checkpoint on; the run raises the bound there and goes on (the rate measured afresh), where it would
    have stopped with the bound never raised."""
    from fairmodel.families import convex, stopping
    monkeypatch.setattr(convex, "FAIL_FAST_EARLIEST", 0.0)
    monkeypatch.setattr(stopping, "FAIL_FAST_MARGIN", 0.0)
    monkeypatch.setattr(stopping, "FAIL_FAST_NEAR", 0.0)
    monkeypatch.setattr(convex.Convex, "_bound_too_small", staticmethod(lambda last, ys: last[3] >= 39))
    prob = _stalling_gdro_problem(2_000, seed=1)
    res = prob.solve(backend="stochastic", seed=0)
    assert res.metrics["bound_raised"] >= 1 and res.metrics["epochs_run"] > 40, res.message


def test_the_earliest_share_holds_the_fail_fast_rule_until_that_share_of_the_cap():
    """A stall (the same ratio 10x at every checkpoint) against a cap of 400: a stopper gives up at its fourth
    checkpoint (40 epochs); with ``earliest=0.25`` (the generic lowering's, whose restarts change the steps) not before
    100 epochs, at the first stalled checkpoint from there on."""
    def stops(**options):
        stopper = CertifiedStop(None, lambda info: {}, cap=400, **options,
                                judge=lambda v: (None, [Check("gap", 10.0, 1.0, "", "certificate")]))
        return [stopper.check({}, w - 1, w) or stopper.stop_now for w in (10, 20, 30, 40, 50, 62, 78, 97, 121, 151)]
    assert stops().index(True) == 3
    assert stops(earliest=0.25).index(True) == 8


def _five_group_mixture(n=6000, d=8, seed=618):
    """Five groups (shares 0.3 to 0.1), each with its own mean shift and its own linear boundary."""
    rng = np.random.default_rng(seed)
    g = rng.choice(5, size=n, p=[0.3, 0.25, 0.2, 0.15, 0.1])
    mu = rng.normal(size=(5, d))
    X = rng.normal(size=(n, d)) + mu[g]
    beta = rng.normal(size=d) / np.sqrt(d)
    betas = beta + 0.5 * rng.normal(size=(5, d)) / np.sqrt(d)
    signal = 1.5 * np.einsum("ij,ij->i", X - mu.mean(axis=0), betas[g])
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-np.clip(signal, -30, 30))), 1.0, -1.0)
    return fm.Dataset(X, y, np.array([f"g{k}" for k in g]))


def _group_dro_under(gap, data, loss):
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(loss(s, data.y), data.groups))), [gap(s, data) <= 0.05])


def test_a_stalled_run_doubles_its_batch_and_raises_the_bound_once_before_giving_up(monkeypatch):
    """Group DRO with the squared loss (labels +-1) under equalized odds <= 0.05, 6,000 Adult rows grouped by age
    quartile. With the default rows per step the Lagrangian gap stalls near its tolerance: a restart after two
    checkpoints in a row without progress doubles the rows a step draws from every cell (without the doublings the
    run is not ok). Under the bound 1.56 the equalized-odds constraint then stays violated, and the fail-fast rule
    would stop the run (not ok, 'infeasible'); the last-resort raise of the bound (x4, once) lets it certify, its
    objective within the Lagrangian gap of the exact optimum (CVXPY)."""
    from fairmodel.families import convex
    adult = fm.datasets.load_adult(sensitive="sex")
    age = adult.X[:, adult.feature_names.index("age")]
    quartile = np.searchsorted(np.quantile(age, [0.25, 0.5, 0.75]), age, side="right")
    data = fm.Dataset(adult.X, adult.y, np.array([f"age{k}" for k in quartile])).subsample(6000, seed=718)
    prob = _group_dro_under(fm.equalized_odds_gap, data, fm.squared_loss)
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.metrics["batch_doubled"] >= 1 and res.metrics["bound_raised"] >= 1, res.message
    assert res.metrics["rows_per_step"] >= 2 * prob.solve(backend="stochastic", seed=0, epochs=10,
                                                          stop="budget").metrics["rows_per_step"]
    exact = prob.solve()
    assert abs(res.objective - exact.objective) <= res.certificate["lagrangian_gap"] + 1e-6
    monkeypatch.setattr(convex, "LAST_RESORT_RAISES", 0)
    stuck = prob.solve(backend="stochastic", seed=0)
    assert not stuck.ok and stuck.metrics["bound_raised"] < res.metrics["bound_raised"], stuck.message
    assert "cannot pass" in stuck.message
    monkeypatch.setattr(convex, "LAST_RESORT_RAISES", 1)
    monkeypatch.setattr(convex, "BATCH_DOUBLINGS", 0)
    assert not prob.solve(backend="stochastic", seed=0).ok


def test_a_run_far_from_its_tolerance_keeps_its_batch():
    """Bounded group loss with the hinge loss (mean hinge s.t. every group's mean hinge <= 0.5, the bound active) on
    6,000 Law School rows by race and gender, radius 2: its Lagrangian gap stays 20-40x its tolerance, jumping between
    checkpoints, before it passes. That is no noise floor near the tolerance, so the batch is not doubled: the rule
    doubles only after two checkpoints in a row without progress with the best within FLOOR_NEAR of passing. (When
    every failed checkpoint restarted a non-smooth run, this run doubled at 35x without that condition, its gap
    stayed there and the fail-fast rule stopped it.)"""
    from fairmodel.families import convex
    race = fm.datasets.load_lawschool(target="bar1", sensitive="race")
    gender = fm.datasets.load_lawschool(target="bar1", sensitive="gender")
    j = race.feature_names.index("gender")
    names = np.char.add(np.asarray(race.groups.names, dtype=str)[race.groups.codes],
                        np.asarray(gender.groups.names, dtype=str)[gender.groups.codes])
    data = fm.Dataset(np.delete(race.X, j, axis=1), race.y, names).subsample(6000, seed=716)
    w = fm.Weights(data.n_features, radius=2.0, intercept=True)
    s = data.score(w)
    hinge = fm.hinge_loss(s, data.y)
    prob = fm.Problem(fm.Minimize(fm.mean(hinge)), [fm.max(fm.group_mean(hinge, data.groups)) <= 0.5])
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.metrics["batch_doubled"] == 0, res.message
    # the rule itself: a stall at 35-38x its tolerance is no floor; at 2.9-3x it is; one stalled checkpoint is not
    far, near = [(10, 36.0), (20, 35.0), (30, 38.0), (40, 37.0)], [(10, 3.0), (20, 2.9), (30, 2.95), (40, 3.1)]
    assert not convex._at_a_floor(far) and convex._at_a_floor(near) and not convex._at_a_floor(near[:2])


def _ten_group_dro_under_equal_opportunity():
    """Group DRO with the hinge loss under equal opportunity <= 0.05 over ten groups (the smallest 4 % of 10,000
    synthetic rows, 20 standardized features), radius 2."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.make_classification(10000, 20, n_informative=10, n_redundant=5, flip_y=0.05, random_state=23)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    groups = np.random.default_rng(23).choice(10, 10000, p=np.array([20, 15, 12, 10, 10, 9, 8, 7, 5, 4]) / 100)
    data = fm.Dataset(X, np.where(y > 0, 1.0, -1.0), groups)
    w = fm.Weights(20, radius=2.0, intercept=True)
    s = data.score(w)
    risks = fm.group_mean(fm.hinge_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.05])


def test_a_run_driven_away_far_from_its_tolerance_doubles_its_batch():
    """Ten groups and 4 rows a cell: the run's Lagrangian gap went 190, 56, 33, 51, 219 ... times its tolerance (the
    iterates driven away from their average by the noise of the minibatches) and the fail-fast rule stopped it at 33x
    while the batch stayed at 4 rows a cell (seeds 0-2, 0 ok). Two checkpoints without progress whose second rises
    double the batch even far from the tolerance: the run is certified (measured: seeds 0-2 in 194-304 epochs)."""
    from fairmodel.families import convex
    res = _ten_group_dro_under_equal_opportunity().solve(backend="stochastic", seed=0)
    assert res.ok and res.metrics["batch_doubled"] >= 1, res.message
    rising = [(10, 190.0), (20, 56.0), (30, 33.0), (40, 51.0), (50, 219.0)]
    assert convex._at_a_floor(rising) and not convex._at_a_floor(rising[:4])
    assert not convex._at_a_floor(rising[:4] + [(50, 45.0)])        # no rise: far from passing, no floor


def test_the_fail_fast_rule_stops_an_unconstrained_generic_run_without_a_crash():
    """Group DRO plus a ridge term goes to the generic lowering and has no constraint: when the fail-fast rule stopped
    such a run (held-out: weighted group DRO, which the generic lowering took then), the multiplier-bound rule
    evaluated to the empty list of constraint pieces and the run crashed with a TypeError. It now ends not ok,
    saying why. The run is given a w-step far too small (1e-5), so that its certificate stalls whatever the default
    steps can do (with the defaults it now reaches its cap of 40 epochs at 9x its tolerance, still falling)."""
    rng = np.random.default_rng(1404)
    n, d = 400, 60
    g = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, d)) + 0.5 * g[:, None] * (np.arange(d) < 3)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(2 * X @ (rng.normal(size=d) / np.sqrt(d))))), 1.0, -1.0)
    data = fm.Dataset(X, y, np.array([f"g{k}" for k in g]))
    sw = np.random.default_rng(1405).lognormal(0.0, 0.75, n)
    w = fm.Weights(d, radius=3.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), y, sample_weight=sw),
                                                       data.groups)) + 1e-4 * fm.sum_squares(w)))
    res = prob.solve(backend="stochastic", seed=0, epochs=40, step_w=1e-5)
    assert prob.family.name == "convex"
    assert not res.ok and res.status == "inaccurate" and "stopped early" in res.message
    # the advice does not contradict the rule's own measurement
    assert "a larger cap (epochs=)" not in res.message and "not a larger cap" in res.message
