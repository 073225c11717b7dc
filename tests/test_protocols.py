"""The oracle protocols of oracles/protocols.py are real: every object a stochastic algorithm is handed has each
member its protocol declares, with methods that accept the protocol's parameters by name (a renamed or dropped
member fails here), and no oracle holds a declared ``Weights``."""
import inspect

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.expressions.variables import Weights
from fairmodel.families.gdro import group_risks_of
from fairmodel.families.lagrangian import LagrangianOracle
from fairmodel.families.piecewise import saddle_form
from fairmodel.oracles import protocols as P
from fairmodel.oracles.strategic import WDRSC, WDRSCOracle
from fairmodel.stochastic.dp_postprocessing import Pool

from .conftest import make_instance


def _members(proto) -> tuple[set, dict]:
    fields = {n for klass in proto.__mro__ if klass.__module__ == P.__name__
              for n in getattr(klass, "__annotations__", {})}
    methods = {n: v for klass in proto.__mro__ if klass.__module__ == P.__name__
               for n, v in vars(klass).items() if inspect.isfunction(v) and not n.startswith("_")}
    return fields, methods


def _conformance(obj, proto) -> list[str]:
    """What ``obj`` lacks of ``proto``: missing attributes, missing methods, methods without a protocol parameter."""
    fields, methods = _members(proto)
    problems = [f"no attribute {n}" for n in sorted(fields) if not hasattr(obj, n)]
    for name, spec in methods.items():
        impl = getattr(obj, name, None)
        if not callable(impl):
            problems.append(f"no method {name}")
            continue
        want = [p for p in inspect.signature(spec).parameters if p != "self"]
        have = inspect.signature(impl).parameters
        if not any(p.kind == p.VAR_KEYWORD for p in have.values()):
            problems += [f"{name} lacks parameter {p}" for p in want if p not in have]
    return problems


def _lagrangian():
    rng = np.random.default_rng(0)
    data = fm.Dataset(rng.normal(size=(60, 3)), np.where(rng.random(60) < 0.5, -1.0, 1.0),
                      groups=rng.integers(0, 3, size=60))
    w = fm.Weights(3, radius=2.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    return LagrangianOracle(saddle_form(prob.canonical, w), w, bound=1.0)


def _auc():
    data = fm.datasets.make_auc_synthetic()
    s = data.score(fm.Weights(5, radius=3.0))
    fam = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra") <= 0.05]).family
    return fam.pairs, fam.model


def _dc():
    rng = np.random.default_rng(1)
    data = fm.Dataset(rng.normal(size=(80, 3)), np.where(rng.random(80) < 0.5, -1.0, 1.0),
                      groups=rng.integers(0, 2, size=80))
    s = data.score(fm.Weights(3, intercept=True))
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))),
                      [fm.partial_dp(s, data.groups, band=(0.7, 1.0), levels=4) <= 0.1]).family.program


def _saddle():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(10, 2)), np.where(rng.random(10) < 0.5, -1.0, 1.0)
    return WDRSCOracle(WDRSC(X, y, np.arange(10) < 5, 0.05, 0.1, 0.5))


CASES = {
    "GroupRiskOracle <- GroupRisks": (lambda: group_risks_of(make_instance()[2]), P.GroupRiskOracle),
    "PrimalDualOracle <- LagrangianOracle": (_lagrangian, P.PrimalDualOracle),
    "PairRiskOracle <- PairRisks": (lambda: _auc()[0], P.PairRiskOracle),
    "ScoreModel <- LinearModel": (lambda: _auc()[1], P.ScoreModel),
    "DCProgramOracle <- DCProgram": (_dc, P.DCProgramOracle),
    "DualBatchSource <- Pool": (lambda: Pool(np.zeros((4, 2)), np.zeros((4, 3))), P.DualBatchSource),
    "SaddleOracle <- WDRSCOracle": (_saddle, P.SaddleOracle),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_oracle_has_every_member_of_its_protocol(case):
    make, proto = CASES[case]
    assert _conformance(make(), proto) == []


def test_the_conformance_check_fails_on_a_missing_member_or_parameter():
    class Partial:
        shape, blocks, n_samples = (3,), [2], 10

        def project(self, v):       # the protocol's parameter is u
            return v

    problems = _conformance(Partial(), P.PrimalDualOracle)
    assert "no attribute rows_per_step" in problems and "no method snapshot" in problems
    assert "project lacks parameter u" in problems


@pytest.mark.parametrize("case", ["GroupRiskOracle <- GroupRisks", "PairRiskOracle <- PairRisks",
                                  "ScoreModel <- LinearModel", "DualBatchSource <- Pool"])
def test_the_stochastic_oracles_hold_no_declared_weights(case):
    """The algorithms read shapes, radii and names from plain attributes (docs/architecture.md); the score adapter
    keeps its weights for the front ends, but its protocol exposes only ``shape``."""
    obj = CASES[case][0]()
    fields, methods = _members(CASES[case][1])
    assert not any(isinstance(getattr(obj, n, None), Weights) for n in fields | set(methods))
    if case != "ScoreModel <- LinearModel":
        assert not any(isinstance(v, Weights) for v in vars(obj).values())
