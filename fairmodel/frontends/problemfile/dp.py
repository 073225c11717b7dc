"""Problem files of DP post-processing for regression (family ``dp_postprocessing``)."""
from __future__ import annotations

import numpy as np

from ...expressions.atoms.dp import dp_gap, expected_cost, squared_risk
from ...expressions.grid import GridPredictor
from ...families.dp_runs import dp_parameters
from ...problem import Minimize, Problem

KEYS = {
    "task": "regression (default: eta_hat = sklearn LinearRegression, squared risk) or classification (cost "
            "1 - P(Y = c | x) from LogisticRegression, the grid is the classes; Remark 2.2)",
    "train_fraction": "fraction of the rows that trains the base models (default 0.5, split stratified on S with "
                      "seed 0); the other rows are the unlabeled points",
    "L": "regression grid: 2L + 1 points (default floor(sqrt(N)) for N unlabeled points)",
    "B": "regression grid range [-B, B] (default 1); the target is min-max scaled to [-B, B]",
    "eps": "DP tolerance in [0, 1]: a number or one per group (default 0.01)",
    "pairwise": "false (default): eps bounds each group vs the population (U_s); true: eps bounds the largest "
                "pairwise gap between the groups (any number of groups)",
    "beta": "inverse entropic weight (default 0.5 sqrt(N) log2 N; 0 for the LP (3))",
    "p": "'calibrated' (default: mean of tau_hat on the unlabeled points) or 'train' (group frequencies of the "
         "training rows)",
}


def build(spec, t, data):
    try:
        from sklearn.linear_model import LinearRegression, LogisticRegression
    except ImportError:
        raise spec.error("[problem] family", "dp_postprocessing fits its base models with scikit-learn: "
                                             "pip install scikit-learn (the sklearn extra)") from None
    task = spec.get(t, "task", "[problem]", "str", default="regression", choices=["regression", "classification"])
    fraction = spec.get(t, "train_fraction", "[problem]", "number", default=0.5, positive=True)
    if data.y is None or not data.has_groups:
        raise spec.error("[data]", "dp_postprocessing needs a target and a sensitive attribute")
    if data.n_groups < 2:
        raise spec.error("[data] sensitive", f"demographic parity compares groups, but the sensitive attribute has one "
                                             f"group ({data.groups.names[0]!r}): the constraint would always hold. "
                                             f"Give a sensitive column with two or more groups")
    train, unl = data.split([fraction, 1.0 - fraction], seed=0)
    s_train = train.groups.codes          # codes, not names: intersectional names are tuples
    clf = LogisticRegression(max_iter=1000).fit(train.X, s_train)
    names = [train.groups.names[c] for c in clf.classes_]
    rule = dp_parameters("reference", n=unl.n_samples)
    beta = spec.get(t, "beta", "[problem]", "number", default=rule["beta"])
    if beta < 0:
        raise spec.error("[problem] beta", f"must be >= 0 (0: no entropic term, the LP (3)); got {beta!r}")
    p_rule = spec.get(t, "p", "[problem]", "str", default="calibrated", choices=["calibrated", "train"])
    p = "calibrated" if p_rule == "calibrated" else {name: float(np.mean(s_train == c))
                                                      for name, c in zip(names, clf.classes_)}
    tau = clf.predict_proba(unl.X)
    if task == "regression":
        B = spec.get(t, "B", "[problem]", "number", default=1.0, positive=True)
        lo, hi = float(data.y.min()), float(data.y.max())
        scale = (lambda v: B * (2.0 * (v - lo) / (hi - lo) - 1.0)) if hi > lo else (lambda v: 0.0 * v)
        reg = LinearRegression().fit(train.X, scale(train.y))
        post = GridPredictor(eta=reg.predict(unl.X), tau=tau, L=spec.get(t, "L", "[problem]", "int", default=rule["L"],
                                                                          positive=True),
                             B=B, p=p, groups=names)
        objective = squared_risk(post)
    else:
        classes = np.unique(train.y)
        if classes.size > 100 or np.any(classes != np.round(classes)):
            raise spec.error("[problem] task", f"classification needs a target of a few classes; "
                                               f"{data.target_name or 'the target'!r} has {classes.size} distinct "
                                               f"values{' (not integers)' if np.any(classes != np.round(classes)) else ''}"
                                               f": use task = \"regression\" for a continuous target")
        clf_y = LogisticRegression(max_iter=1000).fit(train.X, train.y)
        post = GridPredictor(cost=1.0 - clf_y.predict_proba(unl.X), tau=tau, grid=clf_y.classes_, p=p,
                             groups=names)
        objective = expected_cost(post)
    eps = spec.get(t, "eps", "[problem]", "list" if isinstance(t.get("eps"), list) else "number", default=0.01)
    pairwise = spec.get(t, "pairwise", "[problem]", "bool", default=False)
    return Problem(Minimize(objective), [dp_gap(post, pairwise=pairwise) <= eps],
                   entropy=0.0 if beta == 0 else 1.0 / beta)


DESCRIPTION = ("DP post-processing: min risk of a randomized grid prediction s.t. U_s(pi, l) <= eps_s, from base "
               "models fitted on a training split")
FAMILIES = {"dp_postprocessing": (build, KEYS, DESCRIPTION)}
