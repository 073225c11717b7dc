"""AUC between subsets and AUC-based fairness metrics (Definitions 1-2 and Appendix A of
Yao, Lin, Yang, AISTATS 2023): properties, invariances and input checks."""
import doctest

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fairmodel as fm
from fairmodel.errors import DataError, ModelError
from fairmodel.metrics import auc as M


def reference_auc(h, S, T, t=0.5):
    """O(n^2) double loop of Definition 1 (pairs i = j included)."""
    total = 0.0
    for i in np.flatnonzero(S):
        for j in np.flatnonzero(T):
            total += (h[i] > h[j]) + t * (h[i] == h[j])
    return total / (S.sum() * T.sum())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=2, max_size=25), st.integers(0, 2 ** 31 - 1),
       st.sampled_from([0.0, 0.5, 1.0]))
def test_rank_auc_matches_double_loop_with_ties_and_overlap(values, seed, t):
    h = np.array(values, dtype=float)  # few distinct values: many ties
    rng = np.random.default_rng(seed)
    S, T = rng.random(h.size) < 0.6, rng.random(h.size) < 0.6
    S[0], T[-1] = True, True
    assert M.auc_between(h, S, T, ties=t) == pytest.approx(reference_auc(h, S, T, t), abs=1e-12)


def test_auc_identities_with_half_ties():
    rng = np.random.default_rng(1)
    h = np.round(rng.normal(size=200), 1)
    S, T = rng.random(200) < 0.3, rng.random(200) < 0.5
    assert M.auc_between(h, S, T) + M.auc_between(h, T, S) == pytest.approx(1.0, abs=1e-12)
    everyone = np.ones(200, dtype=bool)
    assert M.auc_between(h, everyone, everyone) == pytest.approx(0.5, abs=1e-15)
    # strict ">" (t = 0) gives at most 1/2 - 1/(2n) on (all, all)
    assert M.auc_between(h, everyone, everyone, ties=0.0) <= 0.5 - 1 / 400 + 1e-15


def toy(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, 1, -1)
    g = np.where(rng.random(n) < 0.35, 1, -1)
    h = rng.normal(size=n) + 0.8 * (y > 0) + 0.3 * (g > 0)
    return h, y, g


@pytest.mark.parametrize("kind", list(M.PRESETS))
def test_presets_match_the_table_of_appendix_a(kind):
    h, y, g = toy()
    s = M.auc_sets(y, g, kind)
    masks = dict(zip(M.SET_NAMES, s.masks))
    for name, (lab, grp) in zip(M.SET_NAMES[2:], M.PRESETS[kind]):
        expected = np.ones(h.size, dtype=bool)
        if lab is not None:
            expected &= y == lab
        if grp is not None:
            expected &= g == grp
        np.testing.assert_array_equal(masks[name], expected)
    value = M.auc_fairness(h, y, g, kind)
    ref = abs(reference_auc(h, masks["G1"], masks["G1'"]) - reference_auc(h, masks["G2"], masks["G2'"]))
    assert value == pytest.approx(ref, abs=1e-12)
    assert 0.0 <= value <= 1.0


def test_metric_properties_of_spec_oracle_10_and_11():
    h, y, g = toy(seed=3)
    # constant score: group-AUC metric 0
    assert M.auc_fairness(np.zeros_like(h), y, g, "group") == 0.0
    for kind in ("inter", "intra", "bpsn_bnsp", "group"):  # h -> -h leaves these metrics unchanged
        assert M.auc_fairness(-h, y, g, kind) == pytest.approx(M.auc_fairness(h, y, g, kind), abs=1e-12)
    assert M.auc_score(-h, y) == pytest.approx(1 - M.auc_score(h, y), abs=1e-12)
    for kind in M.PRESETS:  # adding a constant (a bias) changes no AUC and no metric
        assert M.auc_fairness(h + 3.7, y, g, kind) == pytest.approx(M.auc_fairness(h, y, g, kind), abs=1e-12)


def test_symmetric_presets_do_not_depend_on_the_protected_group():
    h, y, g = toy(seed=4)
    names = np.where(g > 0, "Female", "Male")
    for kind in M.SYMMETRIC:
        a = M.auc_fairness(h, y, names, kind)                       # default: "Female" (first sorted)
        b = M.auc_fairness(h, y, names, kind, protected="Male")
        assert a == pytest.approx(b, abs=1e-12)
        assert a == pytest.approx(M.auc_fairness(h, y, g, kind), abs=1e-12)


def test_custom_sets_masks_and_predicates():
    h, y, g = toy(seed=5)
    preset = M.auc_fairness(h, y, g, "intra")
    masks = [(y > 0) & (g > 0), (y < 0) & (g > 0), (y > 0) & (g < 0), (y < 0) & (g < 0)]
    assert M.auc_fairness(h, y, g, sets=masks) == pytest.approx(preset, abs=1e-15)
    preds = [lambda z, c: (z > 0) & (c > 0), lambda z, c: (z < 0) & (c > 0),
             lambda z, c: (z > 0) & (c < 0), lambda z, c: (z < 0) & (c < 0)]
    assert M.auc_fairness(h, y, g, sets=preds) == pytest.approx(preset, abs=1e-15)
    with pytest.raises(ModelError, match="boolean mask"):
        M.auc_fairness(h, y, g, sets=[lambda z, c: z] * 4)
    with pytest.raises(ModelError, match="quadruple"):
        M.auc_fairness(h, y, g, sets=masks[:3])


def test_codings_need_an_explicit_mapping():
    h, y, g = toy(seed=6)
    y01, g01 = (y > 0).astype(int), (g > 0).astype(int)
    with pytest.raises(DataError, match="positive="):
        M.auc_fairness(h, y01, g, "intra")
    with pytest.raises(DataError, match="protected="):
        M.auc_fairness(h, y, g01, "intra")
    ref = M.auc_fairness(h, y, g, "pos_avg_eq")
    assert M.auc_fairness(h, y01, g01, "pos_avg_eq", positive=1, protected=1) == pytest.approx(ref, abs=1e-15)
    with pytest.raises(DataError, match="protected="):     # asymmetric preset, string groups
        M.auc_fairness(h, y, np.where(g > 0, "a", "b"), "bpsn_bnsp")
    with pytest.raises(DataError, match="two values"):
        M.auc_fairness(h, y, np.arange(h.size) % 3 + 5, "intra")
    with pytest.raises(ModelError, match="unknown AUC fairness preset"):
        M.auc_fairness(h, y, g, "demographic")
    with pytest.raises(ModelError, match="ties"):
        M.auc_score(h, y, ties=2)


def test_empty_set_is_named_with_all_sizes():
    h, y, g = toy(seed=7)
    y = np.where(g > 0, 1, y)   # no protected negatives: G1' of the intra preset is empty
    with pytest.raises(DataError, match=r"empty: G1' \(sizes: D\+ \d+, D- \d+, G1 \d+, G1' 0"):
        M.auc_fairness(h, y, g, "intra")


def test_dataset_groups_object_and_select_by_validation():
    data = fm.datasets.load_adult(sensitive="sex").subsample(2000, seed=0)
    h = data.X[:, 0]
    a = M.auc_fairness(h, data.y, data.groups, "intra")
    b = M.auc_fairness(h, data.y, np.asarray(data.groups.names, dtype=object)[data.groups.codes], "intra")
    assert a == b
    cands = [h, -h, np.zeros_like(h), data.X[:, 1]]
    out = M.select_by_validation(cands, data.y, data.groups, "group", kappa=1e-9)
    assert out["feasible"] and out["index"] == 2        # only the constant score has group gap 0
    out = M.select_by_validation(cands, data.y, data.groups, "group", kappa=1.0)
    assert out["index"] == int(np.argmax(out["auc"]))


def test_docstring_example():
    assert doctest.testmod(M).failed == 0
