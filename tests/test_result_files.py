"""Saved results cannot be lost or mixed: appended suffixes, no silent overwrite, atomic writes, one id per
save, and a schema check on load (each reproducer of a way a saved run used to be lost, mixed or misread)."""
import json

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.results import result as results_module


@pytest.fixture(scope="module")
def solved(request):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=120) > 0, 1.0, -1.0)
    data = fm.Dataset(X, y, groups=rng.integers(0, 2, 120))
    w = fm.Weights(3, radius=2.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    return prob.solve(), prob.solve(backend="stochastic", seed=0, epochs=2)


def test_suffix_is_appended_never_substituted(solved, tmp_path):
    exact, stochastic = solved
    a = exact.save(tmp_path / "run_eps0.01")
    b = stochastic.save(tmp_path / "run_eps0.05")
    assert [p.name for p in a] == ["run_eps0.01.json", "run_eps0.01.npz"]
    assert [p.name for p in b] == ["run_eps0.05.json", "run_eps0.05.npz"]
    assert fm.load_result(tmp_path / "run_eps0.01").backend == "exact"
    assert fm.load_result(tmp_path / "run_eps0.05.json").backend == "stochastic"


def test_existing_results_are_not_overwritten(solved, tmp_path):
    exact, stochastic = solved
    exact.save(tmp_path / "run")
    with pytest.raises(fm.ResultFileError, match="already exist.*overwrite=True"):
        stochastic.save(tmp_path / "run")
    assert fm.load_result(tmp_path / "run").backend == "exact"
    stochastic.save(tmp_path / "run", overwrite=True)
    assert fm.load_result(tmp_path / "run").backend == "stochastic"


def test_a_mixed_pair_is_refused(solved, tmp_path):
    exact, stochastic = solved
    exact.save(tmp_path / "a")
    stochastic.save(tmp_path / "b")
    (tmp_path / "a.npz").write_bytes((tmp_path / "b.npz").read_bytes())   # what an interrupted save used to leave
    with pytest.raises(fm.ResultFileError, match="different saves"):
        fm.load_result(tmp_path / "a")


def test_an_interrupted_write_leaves_the_old_result_intact(solved, tmp_path, monkeypatch):
    exact, stochastic = solved
    exact.save(tmp_path / "run")

    def boom(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(results_module.np, "savez_compressed", boom)
    with pytest.raises(KeyboardInterrupt):
        stochastic.save(tmp_path / "run", overwrite=True)
    assert fm.load_result(tmp_path / "run").backend == "exact"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "run.npz"]   # no temporary file left


@pytest.mark.parametrize("field, value, message", [
    ("objective", "abc", "objective"),
    ("status", "great", "status"),
    ("backend", "quantum", "backend"),
    ("seed", 1.5, "seed"),
    ("timings", {"solve": "fast"}, "timings"),
    ("constraints", {"c": {"value": 1.0}}, "constraints"),
    ("checks", [{"name": "x"}], "checks"),
])
def test_tampered_fields_are_refused(solved, tmp_path, field, value, message):
    solved[1].save(tmp_path / "run")
    doc = json.loads((tmp_path / "run.json").read_text())
    doc[field] = value
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(fm.ResultFileError, match=message):
        fm.load_result(tmp_path / "run")


def test_wrong_array_shapes_and_object_arrays_are_refused(solved, tmp_path):
    solved[1].save(tmp_path / "run")
    with np.load(tmp_path / "run.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    history_keys = [k for k in arrays if k.startswith("history/")]
    arrays[history_keys[0]] = arrays[history_keys[0]][:-1]             # one history column shorter
    np.savez_compressed(tmp_path / "run.npz", **arrays)
    with pytest.raises(fm.ResultFileError, match="history"):     # the schema names the field before the digest
        fm.load_result(tmp_path / "run")
    text = (tmp_path / "run.json").read_text()
    doc = json.loads(text)
    del doc["digest"]              # a file without a digest is never loaded
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(fm.ResultFileError, match="has no digest"):
        fm.load_result(tmp_path / "run")
    (tmp_path / "run.json").write_text(text)
    arrays = {k: (np.array([object()], dtype=object) if k.startswith("variables/") else v)
              for k, v in arrays.items()}
    np.savez_compressed(tmp_path / "run.npz", **arrays)
    with pytest.raises(fm.ResultFileError, match="object arrays"):
        fm.load_result(tmp_path / "run")
    arrays = {k: (np.array(["text"]) if k.startswith("variables/") else v) for k, v in arrays.items()}
    np.savez_compressed(tmp_path / "run.npz", **arrays)
    with pytest.raises(fm.ResultFileError, match="variables"):
        fm.load_result(tmp_path / "run")


def test_a_pair_without_an_id_or_with_half_an_id_is_refused(solved, tmp_path):
    solved[0].save(tmp_path / "run")
    doc = json.loads((tmp_path / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps({**doc, "id": "0" * 32}))
    with pytest.raises(fm.ResultFileError, match="different saves"):     # the NPZ has another id
        fm.load_result(tmp_path / "run")
    del doc["id"]
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(fm.ResultFileError, match="has no id"):
        fm.load_result(tmp_path / "run")


def test_an_edited_status_or_variable_is_refused(solved, tmp_path):
    """A status edited from inaccurate to completed, a check's verdict edited, a variable replaced by an array of
    another shape: each is refused, naming what does not match."""
    result = solved[1]
    result.save(tmp_path / "run")
    doc = json.loads((tmp_path / "run.json").read_text())
    failing = dict(doc["checks"][0], value=10.0 * doc["checks"][0]["tolerance"] + 1.0, passed=False)
    for status, checks, message in [("completed", [failing], "the saved checks failed"),
                                    (doc["status"], [dict(failing, passed=True)], "says passed=True")]:
        (tmp_path / "run.json").write_text(json.dumps({**doc, "status": status, "checks": checks}))
        with pytest.raises(fm.ResultFileError, match=message):
            fm.load_result(tmp_path / "run")
    (tmp_path / "run.json").write_text(json.dumps({**doc, "status": "completed", "checks": []}))
    with pytest.raises(fm.ResultFileError, match="changed after it was saved"):    # the digest covers the checks
        fm.load_result(tmp_path / "run")
    result.save(tmp_path / "run", overwrite=True)
    with np.load(tmp_path / "run.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    name = next(k for k in arrays if k.startswith("variables/"))
    arrays[name] = np.zeros((2, 2))
    np.savez_compressed(tmp_path / "run.npz", **arrays)
    with pytest.raises(fm.ResultFileError, match="changed after it was saved"):
        fm.load_result(tmp_path / "run")
    result.save(tmp_path / "other", overwrite=True)
    same, bigger = (fm.Problem(fm.Minimize(fm.sum_squares(fm.Weights(d, name="w")))) for d in (3, 4))
    with pytest.raises(fm.ResultFileError, match="declares"):
        fm.load_result(tmp_path / "other", problem=bigger)
    assert fm.load_result(tmp_path / "other", problem=same).ok == result.ok
