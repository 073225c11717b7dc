"""The working set of the interior-point solver of (25): solving with only the hinges near their kinks gives the
minimizer and certificate of the full subproblem (a relaxation whose replaced hinges are checked at the answer),
whatever the radius: a radius too small forces re-solves, never a different answer."""
import numpy as np
import pytest

from fairmodel.families.partial_program import hinge_program
from fairmodel.oracles.dc_ipm import solve_subproblem
from fairmodel.oracles.dc_working_set import solve_with_working_set
from fairmodel.stochastic.idca import certified_inner, idca
from tests.test_partial_ipm import MU, lawschool_problem, random_problem


def late_anchor(prog, hinge, outer=6):
    """An IDCA iterate after a few outer iterations (the situation the working set is for)."""
    out = idca(prog, prog.start(), certified_inner(prog, hinge, MU, working_set=False), outer=outer, mu=MU)
    return out["x"], out["history"][-1]["step"]


@pytest.mark.parametrize("make", [pytest.param(lambda: random_problem(500, 3, 4), id="random-500"),
                                  pytest.param(lambda: lawschool_problem(800), id="lawschool-800")])
@pytest.mark.parametrize("radius_factor", [1e-3, 0.3, 3.0])
def test_working_set_gives_the_full_minimizer_and_certificate(make, radius_factor):
    prog = make().family.program
    hinge = hinge_program(prog)
    anchor, step = late_anchor(prog, hinge)
    vals, S = prog.linearize(anchor)
    c = vals - S @ anchor
    x_full, lam_full, _, full = solve_subproblem(hinge.in_memory(), anchor, S, c, MU)
    x, lam, u, info = solve_with_working_set(hinge, anchor, S, c, MU, radius_factor * step)
    assert info["status"] == "optimal" and full["status"] == "optimal"
    # (25) is mu-strongly convex: both solvers certify gaps <= 1e-8, so ||x - x_full||^2 <= 4 gap / mu
    assert np.linalg.norm(x - x_full) <= 2 * np.sqrt(4 * max(info["gap"], full["gap"], 1e-14) / MU) + 1e-9
    assert abs(info["primal"] - full["primal"]) <= 1e-8
    assert info["gap"] <= 1e-8 and info["max_g"] <= 1e-9
    assert np.all((u.values >= 0) & (u.values <= 1)) and u.keys.size == info["working_set_pairs"]
    assert 0 < info["working_set"] <= 1 and info["working_set_rows"] <= info["working_set_pairs"]


def test_a_tiny_radius_is_repaired_by_re_solving():
    """With a radius far below the step most hinges that cross their kink were replaced: the sign check must
    catch them (a second round), else the relaxation's minimizer would be returned and be infeasible."""
    prog = lawschool_problem(800).family.program
    hinge = hinge_program(prog)
    anchor, step = late_anchor(prog, hinge)
    vals, S = prog.linearize(anchor)
    c = vals - S @ anchor
    x, lam, u, info = solve_with_working_set(hinge, anchor, S, c, MU, 1e-6 * step)
    assert info["rounds"] >= 2
    assert info["max_g"] <= 1e-9 and info["gap"] <= 1e-8


def test_every_subproblem_of_an_idca_run_matches_the_full_solve():
    """Along an IDCA run with the working set (radius from the previous step), each subproblem's answer equals
    the full interior-point solve at the same anchor. (Whole paths are not compared: the DC iteration maps
    differences within the certified tolerance through kinks of f_i-, so two exact paths drift apart.)"""
    prog = lawschool_problem(800).family.program
    hinge = hinge_program(prog)
    inner = certified_inner(prog, hinge, MU)
    full_program = hinge.in_memory()
    shares = []

    def checked(anchor, k):
        x, info = inner(anchor, k)
        vals, S = prog.linearize(anchor)
        x_full, _, _, full = solve_subproblem(full_program, anchor, S, vals - S @ anchor, MU)
        bound = np.sqrt(4 * max(info["subproblem_gap"], full["gap"], 1e-14) / MU)
        assert np.linalg.norm(x - x_full) <= 2 * bound + 1e-9
        assert abs(hinge.objective_value(x, anchor, MU) - full["primal"]) <= 1e-8
        shares.append(info["working_set"])
        return x, info
    idca(prog, prog.start(), checked, outer=12, mu=MU)
    assert shares[0] < 0.5 and min(shares[1:]) < 0.5      # the first: the hinges that cross their kink


def test_judge_certificate_with_a_working_set_equals_the_full_solve():
    """The judge sizes the working set of its Lemma C.1 solve by the run's last outer step; the certificate
    must be the one of the full subproblem."""
    prob = lawschool_problem(800)
    res = prob.solve(backend="stochastic", outer=20, inner=100, certificate=True)
    family, x = prob.family, prob.family.program.start(res.variables)
    f = family.program.values(x)
    sized = family._certificate(x, f, certificate=True, last_step=res.history[-1]["step"])[0]
    full = family._certificate(x, f, certificate=True)[0]
    assert sized["subproblem_gap"] <= 1e-8 and full["subproblem_gap"] <= 1e-8
    assert abs(sized["subproblem_step"] - full["subproblem_step"]) <= 1e-5
    assert abs(sized["nearly_kkt_eps"] - full["nearly_kkt_eps"]) <= 1e-4 * max(1.0, full["nearly_kkt_eps"])
    assert res.certificate["subproblem_step"] == pytest.approx(sized["subproblem_step"], abs=1e-9)


def test_fresh_rows_by_mark_and_by_sorting_are_the_rows_not_yet_gathered(monkeypatch):
    """The working set's new rows (those of a scan's pairs not gathered before, sorted and distinct) are found by a
    boolean mark over all rows for large scans and by sorting for small ones: both must be np.setdiff1d's answer."""
    from fairmodel.oracles import dc_working_set as dws
    prog = lawschool_problem(800).family.program
    hinge = hinge_program(prog)
    anchor, step = late_anchor(prog, hinge, outer=3)
    ws = dws.WorkingSet(hinge)
    ws.add([avg.scan(anchor, [], 0.2 * step) for avg, _ in hinge.parts])     # some rows gathered already
    scans = [avg.scan(anchor, [], 3.0 * step) for avg, _ in hinge.parts]     # a wider scan: old and new rows
    expected = [np.setdiff1d(s["rows"], ids) for s, ids in zip(scans, ws.ids)]
    assert 0 < sum(e.size for e in expected) < sum(s["rows"].size for s in scans)
    for share in (0, 10 ** 9):          # every scan marked; every scan sorted
        monkeypatch.setattr(dws, "MARK_SHARE", share)
        got = ws.fresh_rows(scans)
        assert all(np.array_equal(g, e) for g, e in zip(got, expected))


def test_the_working_set_subgradient_from_kept_hinge_arguments_is_the_directional_derivative():
    """SSG on the working-set program takes f+_i's subgradient from the hinge arguments its value just computed
    (``plus_and_args``): it must equal the one computed afresh and the finite-difference slope of f+_i (piecewise
    linear: exact for a step that crosses no kink)."""
    from fairmodel.oracles.dc_working_set import WorkingSet
    prog = lawschool_problem(800).family.program
    hinge = hinge_program(prog)
    anchor, step = late_anchor(prog, hinge, outer=3)
    vals, S = prog.linearize(anchor)
    ws = WorkingSet(hinge)
    scans = [avg.scan(anchor, [], 5.0 * step) for avg, _ in hinge.parts]
    ws.add(scans)
    reduced = ws.program(S, vals - S @ anchor, scans)[0]
    rng = np.random.default_rng(0)
    v = anchor + 0.5 * step * rng.standard_normal(anchor.size) / np.sqrt(anchor.size)
    plus, args = reduced.plus_and_args(v)
    assert np.array_equal(plus, reduced.plus(v))
    direction = rng.standard_normal(anchor.size)
    for i in range(reduced.m):
        kept = reduced.plus_grad(v, i, args)
        assert np.allclose(kept, reduced.plus_grad(v, i), rtol=1e-12, atol=1e-15)
        h = 1e-7
        slope = (reduced.plus(v + h * direction)[i] - plus[i]) / h
        assert abs(slope - kept @ direction) <= 1e-6 * max(1.0, abs(slope))
