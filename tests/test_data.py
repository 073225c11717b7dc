"""Dataset validation, group encoding, subsampling, splits, samplers and bundled loaders."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairmodel as fm
from fairmodel.data import Groups


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(fm.DataError, match="2-D"):
        fm.Dataset(np.zeros(5))
    with pytest.raises(fm.DataError, match="numeric"):
        fm.Dataset(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(fm.DataError, match="3 entries but X has 2 rows"):
        fm.Dataset(np.zeros((2, 2)), y=[1, 2, 3])
    with pytest.raises(fm.DataError, match="groups has 1 entries"):
        fm.Dataset(np.zeros((2, 2)), groups=["a"])
    with pytest.raises(fm.DataError, match="NaN or infinite"):
        fm.Dataset(np.array([[1.0, np.nan]]))
    with pytest.raises(fm.DataError, match="NaN or infinite"):
        fm.Dataset(np.ones((2, 1)), y=[1.0, np.inf])
    with pytest.raises(fm.DataError, match="no groups"):
        fm.Dataset(np.ones((2, 1))).groups


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "c"]),
                          st.tuples(st.sampled_from(["F", "M"]), st.integers(0, 2))), min_size=1, max_size=40))
def test_group_encoding_round_trips(labels):
    """Any hashable labels (mixed types too) encode to codes 0..m-1 whose names give back the labels."""
    g = Groups(labels)
    assert len(g) == len(labels)
    assert [g.names[c] for c in g.codes] == labels
    assert g.sizes.sum() == len(labels) and np.all(g.sizes > 0)
    assert sorted(np.concatenate(g.indices()).tolist()) == list(range(len(labels)))


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5), st.integers(5, 60), st.integers(0, 10 ** 6))
def test_subsample_is_stratified_and_seeded(m, n_sub, seed):
    rng = np.random.default_rng(0)
    groups = rng.integers(0, m, size=300)
    groups[:m] = np.arange(m)
    data = fm.Dataset(rng.normal(size=(300, 2)), rng.normal(size=300), groups=groups)
    if n_sub < m:
        with pytest.raises(fm.DataError):
            data.subsample(n_sub, seed=seed)
        return
    a, b = data.subsample(n_sub, seed=seed), data.subsample(n_sub, seed=seed)
    assert a.n_samples == n_sub and np.array_equal(a.X, b.X)
    assert np.all(a.group_sizes >= 1)
    expected = n_sub * data.group_sizes / 300
    assert np.all(np.abs(a.group_sizes - expected) <= 1 + 1e-9) or n_sub < 2 * m


def test_split_partitions_rows():
    data = fm.datasets.load_lawschool()
    parts = data.split([0.6, 0.2, 0.2], seed=1)
    assert sum(p.n_samples for p in parts) == data.n_samples
    for p in parts:
        assert np.allclose(p.group_sizes / p.n_samples, data.group_sizes / data.n_samples, atol=1e-3)
    with pytest.raises(fm.DataError, match="sum"):
        data.split([0.5, 0.6])


def test_samplers():
    data = fm.Dataset(np.arange(20.0).reshape(10, 2), np.ones(10), groups=[0] * 7 + [1] * 3)
    per_group = data.sampler("per_group", batch_size=4, seed=0).draw()
    assert per_group.X.shape == (8, 2) and np.array_equal(per_group.groups, [0] * 4 + [1] * 4)
    strat = data.sampler("stratified", batch_size=10, seed=0).draw()
    assert np.bincount(strat.groups).tolist() == [7, 3]
    uni = data.sampler("uniform", batch_size=5, seed=0).draw()
    assert uni.X.shape == (5, 2)
    assert np.array_equal(data.X[uni.rows], uni.X)
    other = data.sampler("per_group", batch_size=2, seed=0, groups=["x"] * 5 + ["y"] * 5).draw()
    assert np.array_equal(other.groups, [0, 0, 1, 1]) and np.all(other.rows[:2] < 5) and np.all(other.rows[2:] >= 5)
    with pytest.raises(fm.DataError, match="unknown sampler kind"):
        data.sampler("bogus")
    chunks = list(data.chunks(4))
    assert np.array_equal(np.vstack([c.X for c in chunks]), data.X)


def test_from_frame_one_hot_encodes():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"age": [20, 30, 40], "job": ["a", "b", "a"], "sex": ["F", "M", "F"], "y": [1, 0, 1]})
    data = fm.Dataset.from_frame(df, target="y", sensitive="sex")
    assert data.feature_names == ("age", "job=a", "job=b")
    assert data.X[:, 1].tolist() == [1, 0, 1]
    assert data.groups.names == ("F", "M")
    with pytest.raises(fm.DataError, match="not in the frame"):
        fm.Dataset.from_frame(df, target="nope")
    with pytest.raises(fm.DataError, match="missing values"):
        fm.Dataset.from_frame(df.assign(age=[1, None, 3]), target="y")


def test_bundled_loaders():
    adult = fm.datasets.load_adult(sensitive="race")
    assert adult.n_samples == 30162 and set(np.unique(adult.y)) == {-1.0, 1.0}
    assert adult.groups.names == ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White")
    assert not any(n.startswith("race=") for n in adult.feature_names)
    law = fm.datasets.load_lawschool()
    assert law.n_samples == 20800 and law.groups.names == ("non-white", "white")
    comm = fm.datasets.load_communities()
    assert comm.n_samples == 1984 and comm.n_features == 118 and np.all(comm.y > 0)
    with pytest.raises(fm.DataError, match="unknown target"):
        fm.datasets.load_adult(target="salary")


def test_skewed_synthetic_generator_has_its_shares_and_standardized_columns():
    """Group shares 70 / 20 / 7 / 3 % within 4 binomial standard deviations, standardized columns, the rare binary
    column at 2 % ones, reproducible by seed; too few rows is a DataError."""
    n = 20_000
    data = fm.datasets.make_skewed_synthetic(n, seed=5)
    assert np.array_equal(data.X, fm.datasets.make_skewed_synthetic(n, seed=5).X)
    shares = np.bincount(data.groups.codes, minlength=4) / n
    p = np.array([0.70, 0.20, 0.07, 0.03])
    assert np.all(np.abs(shares - p) <= 4 * np.sqrt(p * (1 - p) / n))
    np.testing.assert_allclose(data.X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(data.X.std(axis=0), 1.0, rtol=1e-12)
    assert len(np.unique(data.X[:, 7])) == 2 and abs(np.mean(data.X[:, 7] > 0) - 0.02) <= 4 * np.sqrt(0.02 * 0.98 / n)
    with pytest.raises(fm.DataError):
        fm.datasets.make_skewed_synthetic(3)


def test_gdro_synthetic_generator_follows_eq_33():
    """Labels are sign(x . w_i*) flipped with probability `flip` (binomial tolerance: 4 sd)."""
    data = fm.datasets.make_gdro_synthetic(m=2, d=10, n_per_group=4000, flip=[0.0, 0.2], seed=0)
    again = fm.datasets.make_gdro_synthetic(m=2, d=10, n_per_group=4000, flip=[0.0, 0.2], seed=0)
    assert np.array_equal(data.X, again.X)
    w = fm.Weights(10)
    # the flip-free group is linearly separable through the origin: ERM reaches near-zero 0-1 error
    g0 = data.take(np.flatnonzero(data.groups.codes == 0))
    sol = np.linalg.lstsq(g0.X, g0.y, rcond=None)[0]
    assert np.mean(np.sign(g0.X @ sol) == g0.y) > 0.9
    assert w.n_features == 10
