"""scikit-learn estimator for strategic classification robust to Wasserstein shifts (WDRSC, linear logistic)."""
from __future__ import annotations

import numpy as np

from .. import expressions as dsl
from ..data.dataset import Dataset
from ..expressions.atoms.strategic import strategic_score, wasserstein_worst_case
from ..oracles.strategic import strategic_mask
from ..problem import Minimize, Problem
from ..errors import OptionError
from ..utilities.validate import check_bool, check_number
from ._base import FairLinearClassifier, LogisticProbabilities, check_common, check_sample_weight, solve_problem


class StrategicRobustClassifier(LogisticProbabilities, FairLinearClassifier):
    """Linear logistic classifier minimizing the worst-case logistic loss over a type-1 Wasserstein ball around
    the data after the agents' strategic response (``wasserstein_worst_case`` of ``strategic_score``;
    Maheshwari et al.; see ``docs/minmax.md`` section 3).

    Agents labelled ``classes_[0]`` (coded -1) move their ``strategic_features`` by ``zeta * w`` (the best
    response to a quadratic cost); agents labelled ``classes_[1]`` (+1) do not move. The ambiguity set allows a
    transport of ``radius`` with cost ``||x - x'||_2 + label_cost |y - y'|`` (only +1 labels flip).

    Parameters
    ----------
    strategic_features : the features the agents can game: column names (X must then be a DataFrame with those
        columns), indices, or a boolean mask over the columns; ``None``: no strategic feature (plain Wasserstein
        DRO of the logistic loss).
    zeta : the agents' strategic power (>= 0).
    radius : the Wasserstein radius delta (> 0). Large radii make ``w = 0`` optimal (the model then predicts
        one class); ``docs/minmax.md`` shows where the problem is non-trivial.
    label_cost : kappa > 0 of the transport cost (flipping a label costs 2 kappa).
    center : fit on the features centered by their training means (``center_``). The model has no free
        intercept (the transport moves features only); since the transport cost and the agents' response are
        translation-equivariant, the centered model is the linear model with ``intercept_ = -coef_ @ center_``.
        ``False``: the score is ``X @ coef_`` (``intercept_ = 0``). Scale the features first (the transport
        cost is in feature units), e.g. with ``StandardScaler`` in a ``Pipeline``.
    backend, method : ``"exact"`` (default; the convex exponential-cone program (E1), faster than the
        stochastic path at every size measured) or ``"stochastic"`` (method "ogda-rr" by default; also
        "ogda-wr", "sgda-rr", "sgda-wr"), the zeroth-order min-max method that only queries best responses.
    order : 0 (zeroth order in w) or 1 (exact gradients) for the stochastic backend; None (default): 0 with strategic
        features and zeta > 0, 1 without (no agent to query).
    random_state : seed of the stochastic backend.
    solver_options : dict of further options for ``Problem.solve`` (e.g. ``{"epochs": 500}``: the cap of the stochastic
        run, which stops when its duality gap passes the judge's tolerance; default cap 2000 epochs).

    ``fit(X, y, sensitive_features=None, sample_weight=None)``: the model has no sensitive attribute; passing one
    raises a ValueError rather than silently ignoring it. ``sample_weight`` centers the Wasserstein ball at the
    weighted empirical distribution (mass w_i / sum w on row i; integer weights are repeated rows) and centers the
    features by their weighted means. Fitted attributes: ``coef_``, ``intercept_``, ``center_``,
    ``strategic_mask_`` (boolean, per column), ``classes_``, ``result_`` (the judged :class:`fairmodel.Result`:
    ``result_.objective`` is the worst-case risk, ``result_.metrics`` holds the accuracy after the agents'
    response and the worst-case accuracy). ``predict_proba`` is the logistic link of ``decision_function`` on
    the features as given (before any strategic response); the robust fit shrinks w, so it is conservative, not
    calibrated.
    """

    def __init__(self, strategic_features=None, zeta=0.05, radius=0.1, label_cost=0.5, center=True,
                 backend="exact", method=None, order=None, random_state=None, solver_options=None):
        self.strategic_features = strategic_features
        self.zeta = zeta
        self.radius = radius
        self.label_cost = label_cost
        self.center = center
        self.backend = backend
        self.method = method
        self.order = order
        self.random_state = random_state
        self.solver_options = solver_options

    def _check_params(self):
        check_number(self.zeta, "zeta", low=0.0)
        check_number(self.radius, "radius", low=0.0, strict=True)
        check_number(self.label_cost, "label_cost", low=0.0, strict=True)
        check_bool(self.center, "center")
        check_common(self)
        if self.order is not None and (isinstance(self.order, bool) or self.order not in (0, 1)):
            raise OptionError(f"order must be 0 (zeroth order), 1 (first order) or None (0 with strategic agents, 1 "
                              f"without); got {self.order!r}")

    def _mask(self, n_features: int) -> np.ndarray:
        features = self.strategic_features
        if isinstance(features, (str, bytes)) or features is not None and not hasattr(features, "__iter__"):
            features = [features]            # one column (checked with the others by strategic_mask)
        names = getattr(self, "feature_names_in_", None)
        if features is not None and not isinstance(features, np.ndarray):
            features = list(features)
            if any(isinstance(f, str) for f in features) and names is None:
                raise OptionError(f"strategic_features names columns {features}, but X has no column names; fit "
                                  f"on a DataFrame or give column indices")
        names = [f"x{j}" for j in range(n_features)] if names is None else [str(c) for c in names]
        try:
            return strategic_mask(features, names, n_features)
        except ValueError as exc:
            raise OptionError(f"strategic_features: {exc}") from None

    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        if sensitive_features is not None:
            raise ValueError("StrategicRobustClassifier has no sensitive attribute (it is robust to strategic and "
                             "Wasserstein shifts, not constrained by group): fit it without sensitive_features")
        self._check_params()
        data = self._validate_fit(X, y, None)
        sw = check_sample_weight(sample_weight, data.n_samples)
        self.strategic_mask_ = self._mask(data.n_features)
        self.center_ = np.average(data.X, axis=0, weights=sw) if self.center else np.zeros(data.n_features)
        data = Dataset(data.X - self.center_, data.y)
        w = dsl.Weights(data.n_features)
        score = strategic_score(data, w, strategic_features=self.strategic_mask_, zeta=self.zeta)
        risk = wasserstein_worst_case(dsl.logistic_loss(score, data.y, sample_weight=sw), radius=self.radius,
                                         label_cost=self.label_cost)
        extra = {"order": int(self.order)} if self.backend == "stochastic" and self.order is not None else {}
        result = solve_problem(self, Problem(Minimize(risk)), self.backend, self.method, **extra)
        self._store(result, w)
        self.intercept_ = np.array([-float(self.center_ @ self.coef_[0])])
        return self

