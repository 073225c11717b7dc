"""Bad inputs, round 4: nesting, huge numbers, tampered result files, problem-file DSL and TOML oddities and the
model-space method's failures each give a fairmodel error that names the input and the fix, or a correct result;
never a raw exception, a hang or a silent wrong answer. Each case is small and runs in well under a second."""
import json
import os
import re
import time

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.errors import (DataError, FairmodelError, InfeasibleError, ModelError, OptionError, ResultFileError,
                             SolverError)
from fairmodel.frontends.problemfile import ProblemFileError

from .conftest import toy_classification


@pytest.fixture(scope="module")
def toy():
    data, w = toy_classification(120)
    return data, w, fm.mean(fm.logistic_loss(data.score(w), data.y)), fm.mean(data.score(w))


def _nest(atom, depth, e):
    for _ in range(depth):
        e = atom(e)
    return e


# -- nesting: linear work, and a limit with its own message ---------------------------------------------------------
@pytest.mark.parametrize("atom, inner", [(fm.abs, lambda s, l: s - 0.3), (fm.pos, lambda s, l: l - 0.5),
                                         (lambda e: fm.max(e, 0.1), lambda s, l: l)])
def test_twelve_nested_atoms_compile_in_milliseconds_and_equal_one(toy, atom, inner):
    """|(|x|)| = |x| and pos(pos(x)) = pos(x): 12 levels give the optimum of one level (the curvature of each
    node is computed once, so the DCP rule's repeated questions stay linear in the depth)."""
    _, _, l, s = toy
    start = time.perf_counter()
    deep = fm.Problem(fm.Minimize(l + _nest(atom, 12, inner(s, l))))
    assert time.perf_counter() - start < 0.5
    one = fm.Problem(fm.Minimize(l + _nest(atom, 1, inner(s, l))))
    assert deep.solve().objective == pytest.approx(one.solve().objective, abs=1e-6)


@pytest.mark.parametrize("build", [lambda s: _nest(lambda e: -e, 500, s), lambda s: _nest(fm.abs, 500, s),
                                   lambda s: _nest(lambda e: 1.0 * e, 500, s), lambda s: _nest(lambda e: s - e, 300, s),
                                   lambda s: _nest(lambda e: fm.max(e, s), 200, s)])
def test_deep_nesting_in_python_is_refused_with_the_limit(toy, build):
    _, _, l, s = toy
    with pytest.raises(ModelError, match=r"nests \d+ levels deep .* at most 100"):
        fm.Problem(fm.Minimize(l + build(s)))


def test_a_sum_built_term_by_term_is_one_level(toy):
    _, _, l, s = toy
    total = l
    for k in range(300):
        total = total + 0.001 * s
    assert len(total.args) == 301
    res = fm.Problem(fm.Minimize(total)).solve()
    assert res.ok and res.objective == pytest.approx(fm.Problem(fm.Minimize(l + 0.3 * s)).solve().objective, abs=1e-6)


# -- problem files ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def csv_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(int)
    g = np.where(rng.random(80) < 0.5, "a", "b")
    (d / "d.csv").write_text("x1,x2,y,sex\n" + "".join(f"{a},{b},{t},{s}\n" for (a, b), t, s in zip(X, y, g)))
    return d


def _file(d, objective="mean(loss)", constraint="none", extra="", constraints=None, name="p.toml", bound=None):
    text = (f"[data]\ncsv = 'd.csv'\ntarget = 'y'\nsensitive = 'sex'\n[model]\nradius = 2.0\n{extra}\n[problem]\n"
            f"family = 'composition'\nconstraint = '{constraint}'\nobjective = '''{objective}'''\n")
    text += f"bound = {bound}\n" if bound is not None else ""
    if constraints:
        text += "[problem.constraints]\n" + "".join(f"{k} = '''{v}'''\n" for k, v in constraints.items())
    (d / name).write_text(text)
    return d / name


def test_twelve_nested_abs_in_a_problem_file_solve_at_once(csv_dir):
    start = time.perf_counter()
    res = fm.load_problem(_file(csv_dir, "mean(loss) + " + "abs(" * 12 + "mean(score) - 0.2" + ")" * 12)).solve()
    one = fm.load_problem(_file(csv_dir, "mean(loss) + abs(mean(score) - 0.2)", name="q.toml")).solve()
    assert time.perf_counter() - start < 5 and res.ok and res.objective == pytest.approx(one.objective, abs=1e-6)


@pytest.mark.parametrize("objective, message", [
    ("mean(loss) + " + "abs(" * 150 + "mean(score)" + ")" * 150, r"nests \d+ levels deep"),
    ("mean(loss) + " + "pos(" * 60 + "mean(loss)" + ")" * 60, r"nests \d+ levels deep"),
    ("mean(loss) + " + "-" * 500 + "mean(score)", r"nests \d+ levels deep"),
    ("mean(loss) + " + "9" * 400 + " * mean(score)", r"integer .*400 digits.*too large"),
    ("mean(loss) + 1e300 * mean(score)", r"coefficient 1e\+300 .* beyond 1e\+12"),
    ("mean(loss) + mean(score) / 1e-300", r"coefficient .* beyond 1e\+12"),
    ("mean(loss) + 1e400 * mean(score)", "finite"),
    ("max(group_mean(loss, groups, where=y > 0, where=y < 1))", r"keyword where= is given twice"),
    ("max(y)", "does not depend on any variable"),
    ("mean(y)", "mean needs a per-sample expression"),
])
def test_bad_problem_file_expressions(csv_dir, objective, message):
    start = time.perf_counter()
    with pytest.raises(ProblemFileError, match=message):
        fm.load_problem(_file(csv_dir, objective)).solve()
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("extra, message", [
    ("x = " + "[" * 2000 + "]" * 2000, "nest"), ("x = " + "{a=" * 2000 + "1" + "}" * 2000, "nest"),
    ("x = " + "[" * 40 + "]" * 40, "nest more than 16 deep"),
])
def test_deeply_nested_toml_is_refused(csv_dir, extra, message):
    with pytest.raises(ProblemFileError, match=message):
        fm.load_problem(_file(csv_dir, extra=extra))


@pytest.mark.parametrize("bound, message", [("9" * 5000, "not valid TOML|digits"), ("9" * 400, "400 digits"),
                                            ("1" + "0" * 30, "64-bit"), ("nan", "finite"), ("inf", "finite"),
                                            ("-inf", "finite")])
def test_huge_or_non_finite_numbers_in_toml(csv_dir, bound, message):
    with pytest.raises(ProblemFileError, match=message):
        fm.load_problem(_file(csv_dir, constraint="demographic_parity", bound=bound)).solve()


def test_a_byte_order_mark_is_skipped(csv_dir):
    plain = _file(csv_dir)
    (csv_dir / "bom.toml").write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert fm.load_problem(csv_dir / "bom.toml").solve().objective == pytest.approx(
        fm.load_problem(plain).solve().objective, rel=1e-9)


@pytest.mark.parametrize("constraint", ["sum_squares(w) <= -1", "norm(w) <= -0.5", "abs(mean(score)) <= -1",
                                        "-1 >= sum_squares(w)"])
def test_a_nonnegative_side_under_a_negative_bound_is_infeasible(csv_dir, constraint):
    with pytest.raises(InfeasibleError, match="infeasible.*never negative"):
        fm.load_problem(_file(csv_dir, constraints={"c": constraint})).solve()


# -- the DSL in Python ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bound", [float("nan"), float("inf"), -float("inf"), 10 ** 400])
def test_a_non_finite_bound_names_the_constraint(toy, bound):
    data, w, _, _ = toy
    with pytest.raises(ModelError, match=r"bound of the constraint .*rampgap.* must be finite"):
        fm.selection_rate_gap(data.score(w), data, surrogate="ramp") <= bound


@pytest.mark.parametrize("make", [lambda s: 1e300 * s, lambda s: s * -1e13, lambda s: s / 1e-20,
                                  lambda s: 10 ** 400 * s, lambda s: 1e7 * (1e7 * s)])
def test_huge_coefficients_are_refused(toy, make):
    _, _, l, s = toy
    with pytest.raises(ModelError, match="coefficient|finite"):
        fm.Problem(fm.Minimize(l + make(s)))


def test_a_constant_objective_is_refused(toy):
    data = toy[0]
    with pytest.raises(ModelError, match="does not depend on any variable"):
        fm.Problem(fm.Minimize(fm.max(data.y)))


def test_infeasible_composition_with_the_model_space_method_is_infeasible(toy):
    data, w, _, _ = toy
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y))), [fm.max(risks) <= 0.05])
    for method in ("model_space", None):
        with pytest.raises(InfeasibleError):
            prob.solve(**({"method": method} if method else {}))


@pytest.mark.parametrize("radius", [2.0, 0.3])
def test_an_infeasible_composition_says_by_how_much(toy, radius):
    """The least largest group risk, min_w max_g R_g(w) over the ball, solved as an objective (an independent form),
    is what the phase-one program of the infeasibility message finds: the bound 0.01 below it needs 0.01 more. At
    radius 0.3 the ball binds (the least value there is higher), so the phase-one program must keep the domain."""
    data = toy[0]
    w = fm.Weights(3, radius=radius)
    loss = fm.logistic_loss(data.score(w), data.y)
    risks = fm.group_mean(loss, data.groups)
    least = fm.Problem(fm.Minimize(fm.max(risks))).solve(backend="exact").objective
    prob = fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(risks) <= least - 0.01])
    with pytest.raises(InfeasibleError) as err:
        prob.solve()
    text = str(err.value)
    found = re.search(r"must exceed their bounds is ([0-9.e-]+) \(where it is reached: c0: ([0-9.e-]+) against its "
                      r"bound ([0-9.e-]+)\)", text)
    assert found, text
    assert float(found.group(1)) == pytest.approx(0.01, rel=1e-3)          # printed to 3 digits
    assert float(found.group(2)) == pytest.approx(least, abs=1e-5)         # 6 significant digits, solver tolerance
    assert float(found.group(3)) == pytest.approx(least - 0.01, abs=1e-5)
    if radius == 0.3:       # the ball binds: the least value is above the one on the larger ball
        wide = fm.Weights(3, radius=2.0)
        wide_risks = fm.group_mean(fm.logistic_loss(data.score(wide), data.y), data.groups)
        assert least > fm.Problem(fm.Minimize(fm.max(wide_risks))).solve(backend="exact").objective + 0.01


def test_a_model_space_stall_gives_advice(toy):
    data = toy[0]
    w = fm.Weights(3, radius=1e-8)
    loss = fm.logistic_loss(data.score(w), data.y)
    prob = fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.7])
    try:
        res = prob.solve(method="model_space")
    except SolverError as exc:
        assert "radius" in str(exc) and "standardize" in str(exc) and "method='cvxpy'" in str(exc)
    else:
        assert res.ok
    assert prob.solve().ok           # the default falls back to the CVXPY program


def test_the_default_fallback_after_a_stall_solves_the_cvxpy_program_once(toy, monkeypatch):
    """The stall's feasibility probe solves the CVXPY program; the default's fallback right after reuses that solution
    instead of solving the same program again."""
    from fairmodel.exact import solvers
    data = toy[0]
    w = fm.Weights(3, radius=1e-8)
    loss = fm.logistic_loss(data.score(w), data.y)
    prob = fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.7])
    calls, solve = [], solvers.solve
    monkeypatch.setattr(solvers, "solve", lambda *a, **k: calls.append(1) or solve(*a, **k))
    res = prob.solve()
    assert res.ok and len(calls) == 1, (res.status, len(calls))


# -- result files -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory, toy):
    data, w, l, _ = toy
    res = fm.Problem(fm.Minimize(l), [fm.sum_squares(w) <= 1.0]).solve()
    assert res.ok
    base = tmp_path_factory.mktemp("res") / "r"
    res.save(base)
    return res, base


def _copy(saved, tmp_path, edit_doc=None, edit_arrays=None, raw=None):
    _, base = saved
    doc = json.loads(base.with_suffix(".json").read_text())
    if edit_doc:
        edit_doc(doc)
    (tmp_path / "t.json").write_text(raw if raw is not None else json.dumps(doc))
    with np.load(base.with_suffix(".npz")) as npz:
        arrays = {k: npz[k] for k in npz.files}
    if edit_arrays:
        edit_arrays(arrays)
    np.savez_compressed(tmp_path / "t.npz", **arrays)
    return tmp_path / "t"


def _set(key, value):
    return lambda doc: doc.__setitem__(key, value)


@pytest.mark.parametrize("edit, message", [
    (_set("objective", -123.0), "changed after it was saved"),
    (_set("objective", {"__float__": "nan"}), "objective is nan"),
    (_set("objective", {"__float__": "inf"}), "objective is inf"),
    (_set("message", "all good"), "changed after it was saved"),
    (_set("method", "cvxpy"), "changed after it was saved"),
    (_set("seed", 7), "changed after it was saved"),
    (_set("timings", {"solve": 0.0}), "changed after it was saved"),
    (lambda d: d["checks"][0].__setitem__("tolerance", "0.1"), r"entry 0, .* not a check .*tolerance: number"),
    (lambda d: d["checks"][0].__setitem__("tolerance", 1e9), "changed after it was saved"),
    (lambda d: d["checks"].append({"name": "x", "value": 0.0}), r"entry \d, .* not a check"),
    (lambda d: d.pop("digest"), "has no digest"),
    (lambda d: d.pop("id"), "has no id"),
    (_set("digest", 5), "has no digest"),
    (_set("schema", 1), "schema 1"),
    (_set("schema", 10 ** 100), "schema"),
])
def test_edited_result_fields_are_refused(saved, tmp_path, edit, message):
    with pytest.raises(ResultFileError, match=message):
        fm.load_result(_copy(saved, tmp_path, edit_doc=edit))


def test_arrays_changed_without_the_digest_are_refused(saved, tmp_path):
    def scale(arrays):
        key = next(k for k in arrays if k.startswith("variables/"))
        arrays[key] = arrays[key] * 100.0       # outside the radius
    with pytest.raises(ResultFileError, match="has no digest"):
        fm.load_result(_copy(saved, tmp_path, edit_doc=lambda d: d.pop("digest"), edit_arrays=scale))
    with pytest.raises(ResultFileError, match="changed after it was saved"):
        fm.load_result(_copy(saved, tmp_path, edit_arrays=scale))


@pytest.mark.parametrize("raw, message", [
    ('{"format": "fairmodel.result", "schema": 2, "x": ' + "[" * 5000 + "]" * 5000 + "}", "deep|nest"),
    ('{"format": "fairmodel.result", "schema": 2, "x": ' + "[" * 100 + "]" * 100 + "}", "more than 64 deep"),
    ('{"format": "fairmodel.result", "schema": 2, "objective": ' + "9" * 5000 + "}", "not valid JSON"),
    ('{"format": "fairmodel.result", "schema": ' + "9" * 3000 + "}", "schema"),
])
def test_corrupt_json_is_a_result_file_error(saved, tmp_path, raw, message):
    with pytest.raises(ResultFileError, match=message):
        fm.load_result(_copy(saved, tmp_path, raw=raw))


def test_an_unchanged_result_loads_as_it_was(saved):
    res, base = saved
    back = fm.load_result(base)
    assert back.ok and back.objective == res.objective and back.status == res.status


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="running as root, which writes into a read-only directory anyway; the monkeypatched write failure above covers the same error path")
def test_saving_into_a_read_only_directory(saved, tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(ResultFileError, match="cannot write .* choose a directory you can write to"):
            saved[0].save(d / "r")
    finally:
        d.chmod(0o700)


def test_a_write_error_while_saving_is_a_result_file_error(saved, tmp_path, monkeypatch):
    """The same path as a read-only directory or a full disk (for root, who may write anywhere)."""
    import fairmodel.utilities.outputs as outputs

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(outputs.tempfile, "mkdtemp", refuse)
    with pytest.raises(ResultFileError, match="Permission denied; choose a directory you can write to"):
        saved[0].save(tmp_path / "r")


def test_every_raised_error_is_a_fairmodel_error():
    assert issubclass(ProblemFileError, FairmodelError) and issubclass(ResultFileError, FairmodelError)


# -- the threshold post-processor: which score is thresholded, and the labels it is compared with ----------------------
@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 3))
    y3 = np.where(X[:, 0] + rng.normal(size=240) > 0.6, 2, np.where(X[:, 1] + rng.normal(size=240) > 0, 1, 0))
    g = np.where(rng.random(240) < 0.5, "f", "m")
    return X, y3, g


def _post(model, X, y, g, **kw):
    return fm.GroupThresholdPostProcessor(model, prefit=True, eps=0.05, **kw).fit(X, y, sensitive_features=g)


def _same_fit(a, b):
    assert a.result_.ok and b.result_.ok
    assert a.result_.metrics["accuracy"] == pytest.approx(b.result_.metrics["accuracy"], abs=1e-12)
    for ta, tb in zip(a.thresholds_, b.thresholds_):
        np.testing.assert_allclose(ta, tb, rtol=0, atol=1e-12)


@pytest.mark.parametrize("labels, method", [((0, 2), "predict_proba"), ((1, 2), "decision_function"),
                                            ((0, 1), "predict_proba")])
def test_a_multiclass_model_is_thresholded_on_the_positive_class(rows, labels, method):
    """Thresholding a 3-class model for positive class 2 uses its score of class 2: the same fit as the function of
    the features returning that column (the old code thresholded the column of class 1)."""
    from sklearn.linear_model import LogisticRegression
    X, y3, g = rows
    model = LogisticRegression().fit(X, y3)
    y = np.where(y3 == labels[1], labels[1], labels[0])
    column = list(model.classes_).index(labels[1])
    _same_fit(_post(model, X, y, g, predict_method=method),
              _post(lambda Z: getattr(model, method)(Z)[:, column], X, y, g))


def test_a_binary_model_whose_first_class_is_the_positive_label(rows):
    """A model fitted on 0/1 used for labels -1/0: the positive label 0 is the model's first class, so its score is
    P(0), and its decision value is negated."""
    from sklearn.linear_model import LogisticRegression
    X, y3, g = rows
    model = LogisticRegression().fit(X, (y3 == 2).astype(int))
    y = np.where(y3 == 2, -1, 0)
    _same_fit(_post(model, X, y, g), _post(lambda Z: model.predict_proba(Z)[:, 0], X, y, g))
    _same_fit(_post(model, X, y, g, predict_method="decision_function"),
              _post(lambda Z: -model.decision_function(Z), X, y, g))


def test_a_model_with_only_predict_thresholds_its_predictions(rows):
    from sklearn.tree import DecisionTreeClassifier
    X, y3, g = rows
    y = (y3 == 2).astype(int)
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)

    class OnlyPredict:
        def predict(self, Z):
            return tree.predict(Z)
    _same_fit(_post(OnlyPredict(), X, y, g), _post(lambda Z: (tree.predict(Z) == 1).astype(float), X, y, g))


class _Scores:
    """A prefit model with the given methods and (optionally) classes_."""

    def __init__(self, classes=None, **methods):
        if classes is not None:
            self.classes_ = np.asarray(classes)
        for name, f in methods.items():
            setattr(self, name, f)


def _p(Z):
    return 1.0 / (1.0 + np.exp(-Z[:, 0]))


@pytest.mark.parametrize("model, message", [
    (_Scores(predict_proba=lambda Z: _p(Z)[:, None]), r"predict_proba gave shape \(240, 1\) .*no classes_"),
    (_Scores(predict_proba=_p), r"predict_proba gave shape \(240,\)"),
    (_Scores([0, 1], predict_proba=lambda Z: np.c_[1 - _p(Z), _p(Z), _p(Z)]), r"shape \(240, 3\) .*classes \[0, 1\]"),
    (_Scores(predict_proba=lambda Z: np.c_[1 - _p(Z), np.where(Z[:, 1] > 2, np.nan, _p(Z))]), r"\d+ non-finite"),
    (_Scores(decision_function=lambda Z: Z[:, :2]), r"decision_function gave shape \(240, 2\) .*no classes_"),
    (_Scores(predict=lambda Z: np.where(Z[:, 0] > 0, "yes", "no")),
     r"predicts label\(s\) 'no', 'yes', which are not labels of y \(\[0, 1\]\)"),
    (_Scores(["no", "yes"], predict=lambda Z: np.where(Z[:, 0] > 0, "yes", "no")),
     r"classes \['no', 'yes'\] do not include the positive label 1 of y"),
    (_Scores([0, 1, 2], predict_proba=lambda Z: np.full((len(Z), 3), 1 / 3)), None),
    (_Scores([2, 3], predict_proba=lambda Z: np.c_[1 - _p(Z), _p(Z)]), r"classes \[2, 3\] do not include"),
    (_Scores(predict=lambda Z: Z[:, 0]), r"not labels of y .*a regressor's values"),
    (_Scores(predict=lambda Z: np.c_[Z[:, 0] > 0, Z[:, 0] > 0]), r"shape \(240, 2\); one predicted label per row"),
    (lambda Z: Z[:, :2], r"function of the features gave shape \(240, 2\); one score per row \(240\)"),
    (lambda Z: np.array(["a"] * len(Z)), r"dtype <U1 .*need numbers"),
    (lambda Z: None, r"shape \(\); one score per row"),
    (lambda Z: Z[:10, 0], r"shape \(10,\); one score per row \(240\)"),
    (lambda Z: np.r_[np.inf, Z[1:, 0]], r"1 non-finite score"),
])
def test_estimator_oddities_are_named(rows, model, message):
    X, y3, g = rows
    y = (y3 == 2).astype(int)
    if message is None:          # a 3-class model for labels 0/1: its column of class 1
        assert _post(model, X, y, g).result_.ok
        return
    start = time.perf_counter()
    with pytest.raises(DataError, match=message):
        _post(model, X, y, g)
    assert time.perf_counter() - start < 5


def test_groups_are_named_by_their_labels(rows):
    X, y3, g = rows
    y = (y3 == 2).astype(int)
    y[g == "m"] = 1                                   # group "m" has no negatives: its false-positive rate is undefined
    with pytest.raises(DataError, match=r"group 'm' has no negative rows"):
        _post(lambda Z: Z[:, 0], X, y, g)


@pytest.mark.parametrize("model, message", [
    (_Scores(predict_proba=lambda Z: _p(Z)[:, None]), r"predict_proba gave shape \(\d+, 1\)"),
    (_Scores(predict=lambda Z: np.where(Z[:, 0] > 0, 3, 4)), r"predicts label\(s\) 3, 4"),
])
def test_estimator_oddities_on_dask_rows(rows, model, message):
    da = pytest.importorskip("dask.array")
    X, y3, g = rows
    with pytest.raises(DataError, match=message):
        _post(model, da.from_array(X, chunks=80), (y3 == 2).astype(int), g)


# -- data files: one group, control characters, paths that are not files of known size, saddle-game tables -----------
def _csv(d, name, groups, extra_rows=""):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(len(groups), 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=len(groups)) > 0).astype(int)
    (d / name).write_text("x1,x2,y,sex\n" + "".join(f"{a},{b},{t},{s}\n" for (a, b), t, s in zip(X, y, groups))
                          + extra_rows)
    return name


def _made(path, make):
    """Make ``path`` (a directory, a FIFO, a file) and return its name."""
    make(path)
    return path.name


def _csv_problem(d, csv, constraint="demographic_parity", family="composition"):
    text = (f"[data]\ncsv = '{csv}'\ntarget = 'y'\nsensitive = 'sex'\n[model]\nradius = 2.0\n[problem]\n"
            f"family = '{family}'\n")
    text += f"constraint = '{constraint}'\nobjective = 'mean(loss)'\n" if family == "composition" else ""
    (d / "c.toml").write_text(text)
    return d / "c.toml"


@pytest.mark.parametrize("constraint", ["demographic_parity", "equal_opportunity", "equalized_odds", "covariance",
                                        "auc_gap"])
def test_a_group_comparison_with_one_group_is_refused(tmp_path, constraint):
    """With one group every comparison of groups holds trivially: the constraint is refused, as the gap atoms do."""
    path = _csv_problem(tmp_path, _csv(tmp_path, "one.csv", ["a"] * 60), constraint)
    with pytest.raises(ProblemFileError, match=rf"{constraint} compares groups, but .* one group \('a'\)"):
        fm.load_problem(path)


def test_dp_post_processing_with_one_group_is_refused(tmp_path):
    path = _csv_problem(tmp_path, _csv(tmp_path, "one.csv", ["a"] * 60), family="dp_postprocessing")
    with pytest.raises(ProblemFileError, match=r"demographic parity compares groups, .* one group \('a'\)"):
        fm.load_problem(path)


def test_a_group_constraint_on_one_group_is_still_allowed(tmp_path):
    """Bounded group loss is meaningful for one group: that group's risk is bounded (the mean risk here)."""
    path = _csv_problem(tmp_path, _csv(tmp_path, "one.csv", ["a"] * 60), "group_loss")
    text = path.read_text().replace("constraint = 'group_loss'", "constraint = 'group_loss'\nbound = 0.6")
    path.write_text(text)
    res = fm.load_problem(path).solve()
    assert res.ok and res.constraints["group_loss"]["value"] <= 0.6 + 1e-6


@pytest.mark.parametrize("label", ['"a\nb"', '"a\rb"', '"a\tb"', '"a\x01b"'])
def test_a_control_character_in_a_group_label_is_refused(tmp_path, label):
    path = _csv_problem(tmp_path, _csv(tmp_path, "nl.csv", [label, "c"] * 30))
    with pytest.raises(ProblemFileError, match=r"group label 'a\\[nrtx01]+b' holds a control character"):
        fm.load_problem(path)


@pytest.mark.parametrize("labels", [["a\nb", "c"], [("x", "a\tb"), ("x", "c")]])
def test_a_control_character_in_a_group_label_in_python(labels):
    with pytest.raises(DataError, match="holds a control character"):
        fm.Groups(np.array(labels * 3, dtype=object) if isinstance(labels[0], str) else labels * 3)


@pytest.mark.parametrize("make, message", [
    (lambda d: "/dev/zero", "is not a regular file"),
    (lambda d: "/dev/null", "is not a regular file"),
    (lambda d: _made(d / "dir.csv", os.mkdir), "is a directory"),
    (lambda d: _made(d / "fifo.csv", os.mkfifo), "is not a regular file"),
    (lambda d: "missing.csv", "cannot read the CSV file .*No such file"),
    (lambda d: _made(d / "empty.csv", lambda p: p.write_text("")), "has no data rows"),
    (lambda d: _made(d / "header.csv", lambda p: p.write_text("x1,x2,y,sex\n")), "has no data rows"),
    (lambda d: _made(d / "blank.csv", lambda p: p.write_text("x1,x2,y,sex\n\n\n")), "has no data rows"),
])
def test_data_paths_that_are_not_csv_files(tmp_path, make, message):
    start = time.perf_counter()
    with pytest.raises(ProblemFileError, match=message):
        fm.load_problem(_csv_problem(tmp_path, make(tmp_path))).solve()
    assert time.perf_counter() - start < 5


def test_a_csv_larger_than_the_cap_is_refused_before_reading(tmp_path, monkeypatch):
    import fairmodel.frontends.problemfile.spec as spec
    name = _csv(tmp_path, "d.csv", ["a", "b"] * 30)
    monkeypatch.setattr(spec, "MAX_CSV_BYTES", 100)
    with pytest.raises(ProblemFileError, match=r"has \d[\d,]* bytes, more than the 100 read at most .*a sample of"):
        fm.load_problem(_csv_problem(tmp_path, name))


@pytest.mark.parametrize("make, message", [
    (lambda d: "/dev/zero", "not a regular file"), (lambda d: _made(d / "p.toml", os.mkdir), "is a directory"),
    (lambda d: _made(d / "f.toml", os.mkfifo), "not a regular file"),
])
def test_problem_paths_that_are_not_files(tmp_path, make, message):
    with pytest.raises(ProblemFileError, match=message):
        fm.load_problem(tmp_path / make(tmp_path))


def _saddle(d, body):
    (d / "s.toml").write_text("[problem]\nfamily = 'saddle'\n" + body + "\n")
    return d / "s.toml"


@pytest.mark.parametrize("body, message", [
    ("A = [[1, 2], [3]]", "rows of different lengths"), ("A = [[[1, 2], [3, 4]], [[1, 2]]]", "same shape"),
    ("A = [['a', 'b'], ['c', 'd']]", "entries must be finite numbers; got '[a-d]'"),
    ("A = [[1, 'b'], [2, 3]]", "got 'b'"), ("A = [[true, false], [false, true]]", "got True"),
    ("A = [[{a = 1}]]", r"got \{'a': 1\}"), ("A = [[nan, 1], [1, 1]]", "got nan"), ("A = [[inf, 1], [1, 1]]", "inf"),
    ("A = [1, 2]", "one payoff matrix"), ("A = []", "one payoff matrix"), ("A = [[], []]", "empty rows"),
    ("A = [[[[1]]]]", "one payoff matrix"), ("A = [[1, 2], [3, [4]]]", "one payoff matrix"),
    ("n = 100000000\nm = 100\nk = 100", r"1,000,000,000,000 entries .*more than the 10,000,000"),
    ("m = 1000000\nk = 1000000", r"entries .*choose fewer components n or smaller matrices"),
    ("game = 'quadratic'\nn = 100000000\nq = 100\nd = 100", r"n \(q d \+ q \+ m d \+ m\) .* entries"),
    ("seed = -1", r"seed: must be a non-negative integer \(a seed\); got -1"),
    ("seed = 1.5", "seed: must be a non-negative integer"), ("seed = true", "seed: must be a non-negative integer"),
])
def test_bad_saddle_problem_tables(tmp_path, body, message):
    start = time.perf_counter()
    with pytest.raises(ProblemFileError, match=message):
        fm.load_problem(_saddle(tmp_path, body))
    assert time.perf_counter() - start < 2


def test_a_saddle_matrix_from_a_file_is_the_game_written(tmp_path):
    """Integer and float entries give the matrix written: rock-paper-scissors has value 0 at the uniform point."""
    res = fm.load_problem(_saddle(tmp_path, "A = [[0, -1, 1.0], [1, 0, -1], [-1, 1, 0]]")).solve()
    assert res.ok and res.objective == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("table, message", [("[solve]\nseed = -3\n", r"\[solve\] seed: must be a non-negative"),
                                            ("[data]\nseed = -1\n", r"\[data\] seed: must be a non-negative")])
def test_negative_seeds_in_other_tables(csv_dir, table, message):
    text = _file(csv_dir).read_text()
    if table.startswith("[data]"):
        text = text.replace("[data]\n", table)
    else:
        text += table
    (csv_dir / "seed.toml").write_text(text)
    with pytest.raises(ProblemFileError, match=message):
        fm.load_problem(csv_dir / "seed.toml")


# -- more estimator oddities (the catalogue): the model's own failures and the labels, named ---------------------------
def _boom(Z):
    raise RuntimeError("boom")


@pytest.mark.parametrize("fit, error, message", [
    (lambda X, y, g: _post(_unfitted(), X, y, g), OptionError, r"prefit=True, but the LogisticRegression given is not"),
    (lambda X, y, g: _post(_Scores(predict_proba=_boom), X, y, g), DataError,
     r"predict_proba failed on the features given \(RuntimeError: boom\)"),
    (lambda X, y, g: _post(lambda Z: Z[:, 0] + 1j, X, y, g), DataError, r"dtype complex128 .*need numbers"),
    (lambda X, y, g: _post(lambda Z: np.where(Z[:, 0] > 1, np.inf, Z[:, 0]), X, y, g), DataError, "non-finite score"),
    (lambda X, y, g: _post(lambda Z: Z[:, 0], X, np.where(y == 1, np.nan, 0.0), g), DataError, "missing values in y"),
    (lambda X, y, g: _post(lambda Z: Z[:, 0], X, np.where(y == 1, np.inf, 0.0), g), DataError, "y: .*infinity"),
    (lambda X, y, g: _post(lambda Z: Z[:, 0], X, np.ones(len(y)), g), DataError, r"y has 1 class\(es\) \[1.0\]"),
    (lambda X, y, g: _post(lambda Z: Z[:, 0], X, y[:100], g), DataError, "y has 100 labels but X has 240 rows"),
    (lambda X, y, g: _post(lambda Z: Z[:, 0], X, X[:, 0], g), DataError, "y: Unknown label type: continuous"),
    (lambda X, y, g: fm.GroupThresholdPostProcessor().fit(np.where(X > 2, np.nan, X), y, sensitive_features=g),
     DataError, r"fitting the estimator LogisticRegression failed \(ValueError: Input X contains NaN"),
])
def test_model_failures_are_named(rows, fit, error, message):
    X, y3, g = rows
    with pytest.raises(error, match=message):
        fit(X, (y3 == 2).astype(int), g)


def _unfitted():
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression()


def test_predicting_with_features_of_another_width_is_named(rows):
    from sklearn.linear_model import LogisticRegression
    X, y3, g = rows
    y = (y3 == 2).astype(int)
    post = _post(LogisticRegression().fit(X, y), X, y, g)
    for call in (post.predict, post.predict_proba):
        with pytest.raises(DataError, match="failed on the features given .*X has 2 features"):
            call(X[:, :2], sensitive_features=g)


def test_dask_rows_score_the_positive_class_and_name_model_failures(rows):
    """On chunked rows the same column is thresholded (the same fit as in memory), and the model's failures and an
    unfitted model are named as in memory."""
    da = pytest.importorskip("dask.array")
    from sklearn.linear_model import LogisticRegression
    X, y3, g = rows
    model = LogisticRegression().fit(X, y3)
    y = np.where(y3 == 2, 2, 0)
    Xd = da.from_array(X, chunks=80)
    _same_fit(_post(model, Xd, y, g), _post(model, X, y, g))
    _same_fit(_post(model, Xd, y, g), _post(lambda Z: model.predict_proba(Z)[:, 2], X, y, g))
    with pytest.raises(OptionError, match="not fitted"):
        _post(_unfitted(), Xd, y, g)
    post = _post(model, Xd, y, g)
    with pytest.raises(DataError, match="failed on the features given"):
        post.predict(Xd[:, :2], sensitive_features=g).compute()


# -- the options of a method: None where it means the default, a fairmodel error (before any work) elsewhere ---------
@pytest.fixture(scope="module")
def group_risks(toy):
    data, w, _, _ = toy
    return fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)


@pytest.mark.parametrize("mero", [False, True])
def test_batch_size_none_is_the_default_batch_of_group_dro(group_risks, mero):
    """``batch_size=None`` is the method's own batch size, as in the generic lowering (it raised a TypeError)."""
    objective = fm.max(group_risks - fm.group_optimal(group_risks)) if mero else fm.max(group_risks)
    prob = fm.Problem(fm.Minimize(objective))
    run = {"backend": "stochastic", "seed": 0, "epochs": 2, "stop": "budget"}
    np.testing.assert_array_equal(prob.solve(**run, batch_size=None).variables["w"], prob.solve(**run).variables["w"])


def test_mero_lists_and_takes_only_its_options(group_risks):
    """Two-stage MERO forwards its other options to stage 2: its valid options are named parameters, never the
    ``**stage2`` catch-all (listed as 'stage2' and passed on, it raised a TypeError inside ALEG)."""
    prob = fm.Problem(fm.Minimize(fm.max(group_risks - fm.group_optimal(group_risks))))
    with pytest.raises(OptionError) as info:
        prob.solve(backend="stochastic", seed=0, stage2={"epochs": 2})
    assert "'stage2'" in str(info.value) and "stage1," in str(info.value)


def test_a_step_schedule_of_none_is_named(group_risks):
    with pytest.raises(OptionError, match="unknown step schedule None; use 'constant', 'decreasing'"):
        fm.Problem(fm.Minimize(fm.max(group_risks))).solve(backend="stochastic", seed=0, step_schedule=None)


@pytest.mark.parametrize("option, value, message", [("margin", None, "margin must be True or False"),
                                                    ("allow_infeasible_start", "no", "allow_infeasible_start must be"),
                                                    ("keep", "worst", "keep must be 'first'")])
def test_idca_options_are_checked_before_any_run(toy, option, value, message):
    """IDCA's flags are bools (``bool(None)`` turned the margin off: a run of 113 s that ended unverified), and
    ``keep=`` is checked before the starts run (it was checked after them, 5-12 s of IDCA later)."""
    data, w, loss, _ = toy
    prob = fm.Problem(fm.Minimize(loss), [fm.partial_dp(data.score(w), data.groups, band=(0.3, 0.7)) <= 0.05])
    calls = []
    with pytest.raises(OptionError, match=message):
        prob.solve(backend="stochastic", seed=0, callback=lambda info: calls.append(info), **{option: value})
    assert calls == []


@pytest.mark.parametrize("option, value, message", [
    ("batch_size", 0, "batch_size must be a positive integer"), ("batch_size", "4", "batch_size must be"),
    ("max_time", -1, "max_time must be positive"), ("max_grad_evals", [1], "max_grad_evals must be"),
    ("budget", "x", "budget must be positive"), ("stage1", 40, "stage1 must be a dict")])
def test_shared_and_mero_options_of_the_wrong_kind_are_named(group_risks, option, value, message):
    """Wrong kinds raised ZeroDivisionError or TypeError inside ALEG, and a negative max_time ran to 'inaccurate'."""
    prob = fm.Problem(fm.Minimize(fm.max(group_risks - fm.group_optimal(group_risks))))
    with pytest.raises(OptionError, match=message):
        prob.solve(backend="stochastic", seed=0, **{option: value})


def test_the_initial_level_of_sfls_is_a_number(toy):
    data, w, _, _ = toy
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra") <= 0.1])
    with pytest.raises(OptionError, match="the initial level r0 must be a finite number; got 'x'"):
        prob.solve(backend="stochastic", seed=0, r0="x")
