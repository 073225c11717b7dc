"""The default steps of SaddleProblem.solve converge on the simplest game: a 20-sample 3 x 3 matrix game solved
with values only (OGDA-RR, order 0) reaches a duality gap <= 0.05 at the default budget (1000 epochs; measured
0.023-0.05 over six random games and 1.5-2 s here), checked against the exact LP."""
import numpy as np
import pytest

import fairmodel as fm

GAME = np.random.default_rng(0).standard_normal((20, 3, 3))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_zeroth_order_defaults_reach_the_gap_on_the_matrix_game(seed):
    sp = fm.SaddleProblem.matrix_game(GAME)
    exact = sp.solve(method="exact")
    assert exact.certificate["duality_gap"] < 1e-7
    res = sp.solve(method="ogda-rr", order=0, seed=seed)
    gap = res.certificate["duality_gap"]
    assert res.ok and gap <= 0.05
    # max_y L(x, .) >= v* >= min_x L(., y) and L(x, y) lies between them: the value is within the gap of the LP's
    assert abs(res.objective - exact.objective) <= gap + 1e-12
    assert res.metrics["R0"] == pytest.approx(1.0)            # half the diameter of the two simplices (2)
    assert res.metrics["queries"] == 2 * 20 * 1000 - 1        # the run's queries (2nT - 1) ...
    assert res.metrics["step_probe_queries"] == 64              # ... and the probes that chose its steps


def test_first_order_defaults_are_tighter_still():
    sp = fm.SaddleProblem.matrix_game(GAME)
    res = sp.solve(method="ogda-rr", order=1, seed=0)
    assert res.certificate["duality_gap"] <= 0.01


def test_explicit_steps_and_the_theory_schedule_remain():
    sp = fm.SaddleProblem.matrix_game(GAME)
    res = sp.solve(method="ogda-rr", order=0, seed=0, epochs=5, eta0=0.05, R0=0.1, schedule="theory", output="average")
    assert res.metrics["eta0"] == 0.05 and res.metrics["R0"] == 0.1 and "G_estimate" not in res.metrics
