"""The library's BLAS/OpenMP thread choice: one thread inside solves and the judge unless the user says otherwise,
the caller's setting restored afterwards, and clear errors on a bad setting."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import fairmodel as fm
from fairmodel.utilities import threads as _threads


def _blas_threads():
    return max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")


def test_limited_inside_and_restored_after(monkeypatch):
    monkeypatch.delenv(_threads.ENV, raising=False)
    with threadpool_limits(limits=2):
        before = _blas_threads()
        seen = []
        with _threads.limited_threads():
            seen.append(_blas_threads())
            with _threads.limited_threads():          # nested: no change, no error
                seen.append(_blas_threads())
        assert seen == [1, 1]
        assert _blas_threads() == before


def test_solve_and_judge_run_with_one_thread(monkeypatch):
    monkeypatch.delenv(_threads.ENV, raising=False)
    data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=20, seed=0)
    w = fm.Weights(3, radius=2.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    family, seen = prob.family, []
    for name in ("solve_exact", "evaluate"):
        original = getattr(family, name)

        def spy(*args, _original=original, **kwargs):
            seen.append(_blas_threads())
            return _original(*args, **kwargs)
        monkeypatch.setattr(family, name, spy)
    with threadpool_limits(limits=2):
        prob.solve(backend="exact")
        prob.evaluate(w=np.zeros(3))
        assert _blas_threads() == 2
    assert seen == [1, 1, 1]
    with threadpool_limits(limits=2), fm.thread_limit("inherit"):
        seen.clear()
        prob.solve(backend="exact")
    assert seen == [2, 2]


def test_user_override(monkeypatch):
    monkeypatch.setenv(_threads.ENV, "inherit")
    assert fm.threads() == "inherit"
    with threadpool_limits(limits=2), _threads.limited_threads():
        assert _blas_threads() == 2                    # left as the process has it
    monkeypatch.setenv(_threads.ENV, "2")
    assert fm.threads() == 2
    with fm.thread_limit(1):
        assert fm.threads() == 1
    assert fm.threads() == 2
    fm.set_threads(1)
    try:
        assert fm.threads() == 1
    finally:
        fm.set_threads(None)
    assert fm.threads() == 2


@pytest.mark.parametrize("bad", ["many", "0", 0, -1, 1.5, True])
def test_bad_setting_is_refused(monkeypatch, bad):
    with pytest.raises(fm.OptionError, match="positive integer"):
        fm.set_threads(bad)
    monkeypatch.setenv(_threads.ENV, str(bad))
    if str(bad) not in ("True",):
        with pytest.raises(fm.OptionError, match="FAIRMODEL_THREADS"):
            fm.threads()
