"""The IDCA subproblem (25) solved from a point of its central path reached by passes: the Newton system is the
Jacobian of the path's equations (finite differences), the path's end is strictly feasible, and the working set
chosen there gives the minimizer of the full subproblem while holding a few percent of the hinges where the
anchor's working set holds most of them."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.families.partial_program import hinge_program
from fairmodel.oracles import dc_centred
from fairmodel.oracles.dc_centred import _Pass, follow_path, solve_from_centre, solve_hinge_subproblem
from fairmodel.oracles.dc_ipm import solve_subproblem
from fairmodel.stochastic.idca import certified_inner, idca, working_set_ssg_inner
from tests.test_dask_dc import arrays, both, problem  # noqa: F401  (fixture)
from tests.test_partial_ipm import MU, lawschool_problem, random_problem

MAKERS = [pytest.param(lambda: random_problem(300, 3, 1).family.program, id="partial-dp-thresholds"),
          pytest.param(lambda: lawschool_problem(800).family.program, id="partial-dp-lawschool"),
          pytest.param(lambda: problem(fm.datasets.load_lawschool(target="bar1", sensitive="race").subsample(
              600, seed=1), "eodds").family.program, id="ramp-equalized-odds")]


@pytest.fixture(autouse=True)
def share_only(monkeypatch):
    """These tests exercise the central path on small data: working sets are limited by SHARE alone (not
    raised to SMALL hinges, which would hold all of these data sets' hinges)."""
    monkeypatch.setattr(dc_centred, "SMALL", 0)


def test_a_small_working_set_is_solved_where_it_is(monkeypatch):
    """Up to SMALL hinges a working set wider than SHARE is solved at the anchor (no central path), to the same
    minimizer as through the centre."""
    prog = lawschool_problem(800).family.program
    hinge = hinge_program(prog)
    a, S, c = subproblem_at(prog, hinge, 0)
    x_c, _, _, centred = solve_hinge_subproblem(hinge, a, S, c, MU, np.inf)
    monkeypatch.setattr(dc_centred, "SMALL", hinge.pieces)
    x, _, _, info = solve_hinge_subproblem(hinge, a, S, c, MU, np.inf)
    assert centred["centring_passes"] > 0 and info["centring_passes"] == 0 and info["working_set"] == 1.0
    assert np.linalg.norm(x - x_c) <= 2 * np.sqrt(4 * max(info["gap"], centred["gap"], 1e-14) / MU) + 1e-9


def subproblem_at(prog, hinge, outer):
    anchor = prog.start() if outer == 0 else idca(prog, prog.start(), certified_inner(prog, hinge, MU),
                                                  outer=outer, mu=MU)["x"]
    vals, S = prog.linearize(anchor)
    return anchor, S, vals - S @ anchor


@pytest.mark.parametrize("make", MAKERS)
def test_the_newton_system_is_the_jacobian_of_the_path_equations(make):
    prog = make()
    hinge = hinge_program(prog)
    a, S, c = subproblem_at(prog, hinge, 0)
    rng = np.random.default_rng(0)
    x, lam, tau = a + 0.1 * rng.standard_normal(a.size), 0.5 + rng.random(hinge.m), 1e-2

    def at(x, lam, tau):
        return _Pass(hinge, hinge.objective(x), x, lam, tau, a, S, c, MU)

    def residual(x, lam, tau):
        p = at(x, lam, tau)
        return np.concatenate([p.r_v, p.r_l])

    here, h = at(x, lam, tau), 1e-6
    dx, dl = rng.standard_normal(a.size), rng.standard_normal(hinge.m)
    J = np.block([[here.H, here.B.T], [here.B, -np.diag(here.C)]])
    for d_x, d_l, d_t, expected in [(dx, 0 * dl, 0.0, J @ np.concatenate([dx, 0 * dl])),
                                    (0 * dx, dl, 0.0, J @ np.concatenate([0 * dx, dl])),
                                    (0 * dx, 0 * dl, 1.0, np.concatenate([here.dr_v, here.dr_l]))]:
        numeric = (residual(x + h * d_x, lam + h * d_l, tau + h * d_t * tau)
                   - residual(x - h * d_x, lam - h * d_l, tau - h * d_t * tau)) / (2 * h * (tau if d_t else 1.0))
        # central differences: error O(h^2 |third derivative|), far below 1e-5 of the entries at this tau
        assert np.allclose(numeric, expected, rtol=1e-5, atol=1e-6 * max(1.0, float(np.max(np.abs(expected)))))


@pytest.mark.parametrize("make", MAKERS)
def test_the_path_ends_centred_and_strictly_feasible(make):
    prog = make()
    hinge = hinge_program(prog)
    a, S, c = subproblem_at(prog, hinge, 0)
    x, lam, info = follow_path(hinge, a, S, c, MU)
    assert info["status"] == "centred" and info["passes"] <= 40
    d = x - a
    g = hinge.plus(x) - (S @ x + c) + 0.5 * MU * float(d @ d)
    # on the path G_i = -tau / lambda_i < 0 and g_i <= G_i (t > pos(y)); the end is within a Newton step of it
    assert np.all(g < 0) and np.all(lam > 0)


@pytest.mark.parametrize("outer", [0, 1, 3])
def test_the_working_set_at_the_centre_gives_the_full_minimizer_with_few_hinges(outer):
    prog = lawschool_problem(800).family.program
    hinge = hinge_program(prog)
    a, S, c = subproblem_at(prog, hinge, outer)
    x_full, _, _, full = solve_subproblem(hinge.in_memory(), a, S, c, MU)
    x, lam, u, info = solve_from_centre(hinge, a, S, c, MU)
    assert full["status"] == "optimal" and info["status"] == "optimal"
    assert info["gap"] <= 1e-8 and info["max_g"] <= 1e-9
    # (25) is mu-strongly convex: both certify gaps <= 1e-8, so ||x - x_full||^2 <= 4 gap / mu
    assert np.linalg.norm(x - x_full) <= 2 * np.sqrt(4 * max(info["gap"], full["gap"], 1e-14) / MU) + 1e-9
    assert info["working_set"] <= 0.05
    # the hinge change from the anchor, measured by its own pass, is the true one
    y_change = max(np.max(np.abs(b.y(x) - b.y(a))) for b in hinge.in_memory().blocks)
    assert info["hinge_change"] == pytest.approx(y_change, rel=1e-9, abs=1e-12)


def test_a_wide_working_set_at_the_anchor_is_replaced_by_the_centre(monkeypatch):
    """From w = 0 the step moves most scores across a kink: with every hinge in reach (radius inf) the anchor's
    working set would hold them all; the routed solve goes through the centre and holds a few percent."""
    prog = lawschool_problem(800).family.program
    hinge = hinge_program(prog)
    a, S, c = subproblem_at(prog, hinge, 0)
    x, _, _, info = solve_hinge_subproblem(hinge, a, S, c, MU, np.inf)
    assert info["centring_passes"] > 0 and info["working_set"] <= dc_centred.SHARE
    monkeypatch.setattr(dc_centred, "SHARE", 1.0)
    x_anchor, _, _, info_anchor = solve_hinge_subproblem(hinge, a, S, c, MU, np.inf)
    assert info_anchor["centring_passes"] == 0 and info_anchor["working_set"] == 1.0
    assert np.linalg.norm(x - x_anchor) <= 2 * np.sqrt(4 * max(info["gap"], info_anchor["gap"], 1e-14) / MU) + 1e-9


def test_on_dask_no_subproblem_holds_more_than_the_share(arrays):  # noqa: F811
    """Exact IDCA on chunked rows: no working set holds more than SHARE of the hinges (the early steps go through
    the centre, reached by passes; the first, a tie, is the central point itself), and the answer is the in-memory
    one (both from w = 0, the default on chunks)."""
    mem, dd = both(arrays)
    results = [problem(data, "selection").solve(backend="exact", rate_steps=0, start="zero") for data in (mem, dd)]
    history = results[1].history[1:]
    assert max(h["working_set"] for h in history) <= dc_centred.SHARE
    assert history[0]["central_step"] == 1 and any(h["centring_passes"] > 0 for h in history[1:])
    # the run stops on an exact step, whose solve of (25) certifies its answer (rate_steps=0: the true rates are
    # not tightened, so the status is the judge's verdict on them)
    assert history[-1]["central_step"] == 0
    assert all(c["passed"] for c in results[1].checks if c["kind"] == "certificate")
    w_mem, w_dask = (np.asarray(r.variables[next(iter(r.variables))]).ravel() for r in results)
    assert np.max(np.abs(w_mem - w_dask)) <= 1e-6 * max(1.0, float(np.max(np.abs(w_mem))))


def test_a_tie_returns_the_strictly_feasible_central_point_within_its_gap(arrays):  # noqa: F811
    """From w = 0 the ramp selection-rate subproblem moves the intercept alone: every score is equal at its
    minimizer and one family of hinges sits at its kink on every row, so the working set at the centre holds half
    the hinges. With ``central`` the central point is returned: strictly feasible for the full (25) and, by the
    strong convexity of (25), within sqrt(2 x its gap bound 3 m tau / mu) of the exact minimizer."""
    mem, _ = both(arrays)
    prog = problem(mem, "selection").family.program
    hinge = hinge_program(prog)
    a, S, c = subproblem_at(prog, hinge, 0)
    x_full, _, _, full = solve_subproblem(hinge.in_memory(), a, S, c, MU)
    exact = solve_hinge_subproblem(hinge, a, S, c, MU, 0.0)[3]
    assert exact["status"] == "optimal" and exact["working_set"] > dc_centred.SHARE     # the tie
    x, lam, u, info = solve_hinge_subproblem(hinge, a, S, c, MU, 0.0, central=True)
    assert info["status"] == "central" and u is None and np.all(lam > 0)
    assert info["working_set_rows"] <= dc_centred.SHARE * hinge.pieces    # gathered before the set grew past it
    d = x - a
    g = hinge.plus(x) - (S @ x + c) + 0.5 * MU * float(d @ d)
    assert np.all(g < 0) and info["max_g"] >= np.max(g)          # G_i bounds g_i from above
    assert np.linalg.norm(x - x_full) <= np.sqrt(2 * (info["gap"] + full["gap"]) / MU)
    assert np.linalg.norm(x - x_full) > 0                        # inexact: not the minimizer itself
    y_change = max(np.max(np.abs(b.y(x) - b.y(a))) for b in hinge.in_memory().blocks)
    assert info["hinge_change"] == pytest.approx(y_change, rel=1e-9, abs=1e-12)
    # the step is the central point itself, not where the path stopped: the same on the rows three times over (the
    # path's iterates differ there by about 1e-3), so an IDCA run is the same in memory and on replicated chunks
    X, y, g = arrays
    thrice = fm.Dataset(np.vstack([X] * 3), np.concatenate([y] * 3), np.concatenate([g] * 3))
    prog2 = problem(thrice, "selection").family.program
    hinge2 = hinge_program(prog2)
    a2, S2, c2 = subproblem_at(prog2, hinge2, 0)
    x2 = solve_hinge_subproblem(hinge2, a2, S2, c2, MU, 0.0, central=True)[0]
    assert np.max(np.abs(x2 - x)) <= 1e-9 * max(1.0, float(np.max(np.abs(x))))


def test_idca_never_stops_on_an_inexact_step():
    """A central step certifies nothing: a zero step marked central does not end the run (it would with an exact
    one, keep_anchor's step == 0 rule)."""
    prog = lawschool_problem(300).family.program
    x0 = prog.start()
    for central, status in [(1, "budget_exhausted"), (0, "converged")]:
        out = idca(prog, x0, lambda anchor, k: (anchor, {"central_step": central}), outer=3, mu=MU,
                   keep_anchor=True, rel_tol=1e-6)
        assert out["status"] == status


@pytest.mark.slow       # 15 s with -n auto; the default suite keeps under 10 minutes
def test_stochastic_idca_on_dask_holds_at_most_the_share(arrays):  # noqa: F811
    """IDCA + SSG (the curvature split, the default on chunks): its working sets too are chosen at the central point
    where the anchor's would hold more than SHARE of the hinges; the run still ends certified by the judge."""
    _, dd = both(arrays)
    prob = problem(dd, "selection")
    res = prob.solve(backend="stochastic", seed=0)
    pieces = prob.family.hinge().pieces
    assert res.ok and res.solver["split"] == "curvature"
    assert max(h["working_set_pairs"] for h in res.history[1:]) <= dc_centred.SHARE * pieces
    assert any(h.get("centring_passes", 0) > 0 for h in res.history[1:])


def test_stochastic_idca_takes_the_central_point_at_a_tie(arrays, monkeypatch):  # noqa: F811
    """IDCA + SSG: where the working set at the central point too would pass the share (a tie; here forced by a tiny
    share), the step is the central point itself, strictly feasible for the full (25) and below its anchor's
    objective, and SSG never runs on that set (none of its hinges is kept)."""
    monkeypatch.setattr(dc_centred, "SHARE", 1e-4)
    mem, _ = both(arrays)
    prog = problem(mem, "selection").family.program
    hinge = hinge_program(prog)
    x0 = prog.start()
    x, info = working_set_ssg_inner(prog, hinge, MU, 1e-2, 300)(x0, 0)
    assert info["inner_status"] == "central" and info["central_step"] == 1
    assert info["working_set_pairs"] == 0 and info["centring_passes"] > 0
    vals, S = prog.linearize(x0)
    c = vals - S @ x0
    assert np.all(hinge.g_values(x, x0, S, c, MU) < 0)
    assert hinge.objective_value(x, x0, MU) < hinge.objective_value(x0, x0, MU)
