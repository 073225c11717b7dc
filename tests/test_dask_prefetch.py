"""The chunk sampler's prefetching: the same rows, in the same order, with and without it; the background thread
ends with the sampler (close, end of a solve, an interrupted solve, a cancelled gather)."""
import signal
import threading

import numpy as np
import pytest

import fairmodel as fm
from tests.dask_helpers import as_dask_dataset

da = pytest.importorskip("dask.array")

N, D, CHUNK = 2000, 4, 300


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(N, D))
    g = rng.choice(["a", "b", "c"], size=N, p=[0.6, 0.3, 0.1])
    y = np.sign(X @ rng.normal(size=D) + rng.normal(size=N))
    return as_dask_dataset(X, y, g, CHUNK), X


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "fairmodel-prefetch" and t.is_alive()]


@pytest.mark.parametrize("kind", ["per_group", "uniform"])
def test_prefetch_draws_the_same_rows_in_the_same_order(data, kind):
    """Requests of varying sizes (some larger than a buffer: the extension path), a shared generator used in
    between: every row, its features and its order agree with and without prefetching."""
    dd, X = data
    sizes = [3, 50, 7, 400, 1, 90, 90, 250, 5]
    runs = []
    for prefetch in (False, True):
        shared = np.random.default_rng(11)
        s = dd.sampler(kind, 4, seed=shared, buffer_bytes=8 * D * 3 * 60, prefetch=prefetch)   # 60 draws a group
        got = []
        for size in sizes:
            shared.normal(size=3)        # other users of the generator do not shift the sampler's stream
            b = s.draw(size)
            np.testing.assert_array_equal(b.X, X[b.rows])
            got.append(b.rows)
        s.close()
        runs.append((got, s.gathers))
    (a, ga), (b, gb) = runs
    assert ga == gb > 3
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not _prefetch_threads()


def test_prefetch_keeps_the_law_within_groups(data):
    """With prefetching the draws of a group are still uniform over its rows (a chi-square test at a fixed
    seed: 3 groups, 12,000 draws each; the 1e-6 quantile would fail only for a wrong law)."""
    from scipy import stats
    dd, _ = data
    s = dd.sampler("per_group", 1000, seed=3, buffer_bytes=8 * D * 3 * 2500)
    rows = np.concatenate([s.draw_rows().reshape(3, -1) for _ in range(12)], axis=1)
    s.close()
    for gi, members in enumerate(dd.groups.indices()):
        counts = np.bincount(rows[gi], minlength=N)[members]
        assert counts.sum() == 12000 and np.all(dd.groups.codes[rows[gi]] == gi)
        assert stats.chisquare(counts).pvalue > 1e-6


def test_aleg_identical_with_and_without_prefetch_and_no_thread_left(data):
    dd, _ = data
    w = fm.Weights(D, intercept=True, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(dd.score(w), dd.y), dd.groups))))
    on = prob.solve(backend="stochastic", seed=2, epochs=4, batch_size=8)
    off = prob.solve(backend="stochastic", seed=2, epochs=4, batch_size=8, prefetch=False)
    np.testing.assert_array_equal(on.variables["w"], off.variables["w"])
    np.testing.assert_array_equal(on.variables["q"], off.variables["q"])
    assert on.metrics["sampler_wait_s"] >= 0 and off.metrics["sampler_wait_s"] > 0
    assert not _prefetch_threads()
    prob.solve(backend="stochastic", method="smd", seed=2, epochs=2, batch_size=8)     # SMD closes its sampler too
    assert not _prefetch_threads()


def test_interrupted_solves_leave_no_thread(data):
    """Ctrl-C once: the solve stops at the end of the epoch and returns its iterate; an exception in the loop
    (a second Ctrl-C raises KeyboardInterrupt at once): the prefetch thread is joined either way."""
    dd, _ = data
    w = fm.Weights(D, intercept=True, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(dd.score(w), dd.y), dd.groups))))

    def ctrl_c(info):
        signal.raise_signal(signal.SIGINT)
    res = prob.solve(backend="stochastic", seed=0, epochs=5, batch_size=8, callback=ctrl_c)
    assert res.status == "interrupted" and not _prefetch_threads()

    def abort(info):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        prob.solve(backend="stochastic", seed=0, epochs=5, batch_size=8, callback=abort)
    assert not _prefetch_threads()


def test_close_cancels_a_gather_in_flight(data):
    dd, X = data
    cancel = threading.Event()
    cancel.set()
    assert dd.rows(np.arange(0, N, 7), cancel=cancel) is None      # stops before reading any chunk
    np.testing.assert_array_equal(dd.rows(np.arange(0, N, 7)), X[::7])
    with dd.sampler("per_group", 2, seed=0) as s:      # the first buffer is gathered from construction on
        assert s._pending is not None
    assert s._pending is None and not _prefetch_threads()
    s = dd.sampler("per_group", 2, seed=0)
    del s                                              # garbage collection cancels the gather; the thread ends
    for t in threading.enumerate():
        if t.name == "fairmodel-prefetch":
            t.join(timeout=30)
    assert not _prefetch_threads()
