"""Baselines of the AUC-fairness experiments (App. E.2 of Yao, Lin, Yang, AISTATS 2023).

* :func:`rescoring_grid` / :func:`choose_rescoring`: post-processing of Kallus & Zhou (2019): the scores of
  the protected group (gamma = +1) become omega1 h + omega2, with omega1 on a grid of [0, 5] (step 0.05) and
  omega2 on a grid of [-3, 3] (step 0.1), tuned on validation data to satisfy the original constraint (2).
  The paper does not apply it to the intra-group preset (its tuning needs the labels).
* :func:`correlation_penalty`: Beutel et al. (2019): the square-surrogate AUC loss plus lam |corr(h, gamma)|,
  by minibatch SGD (the paper applies it to the group-AUC preset only).
* :func:`proxy_lagrangian`: a Lagrangian method on (2) after Cotter et al. (2019): the model player takes
  SGD steps on the surrogate Lagrangian, the multiplier player takes projected gradient-ascent steps on the
  ORIGINAL (indicator) constraints (2) estimated on the minibatch. Simplification, stated: Cotter et al.'s
  multiplier player minimizes swap regret over a simplex; here it is the plain projected ascent.

Each SGD baseline returns the iterates every ``record_every`` steps so that the model selection of App. E.3
(:func:`fairmodel.metrics.auc.select_by_validation`) can pick among them.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import DataError, OptionError
from ..expressions.atoms.auc import Surrogate
from ..expressions.models import score_model
from ..metrics.auc import auc_sets, sets_terms, signed_groups, signed_labels
from ..oracles.pairs import PairRisks
from ..utilities.progress import Progress
from ..utilities.validate import as_generator, check_int

OMEGA1 = np.round(np.arange(0.0, 5.0 + 1e-9, 0.05), 10)
OMEGA2 = np.round(np.arange(-3.0, 3.0 + 1e-9, 0.1), 10)


# ---------------------------------------------------------------------------------------------------
# Post-processing
# ---------------------------------------------------------------------------------------------------
def rescore(scores, gamma, omega1: float, omega2: float) -> np.ndarray:
    """omega1 h + omega2 on the protected rows (gamma = +1), h elsewhere."""
    h = np.asarray(scores, dtype=float)
    return np.where(np.asarray(gamma) > 0, omega1 * h + omega2, h)


def rescoring_grid(scores, y, groups, kind: str = "group", *, protected=None, positive=None, omega1=None,
                   omega2=None, verbose=None) -> dict:
    """Validation AUC and fairness gap (1) of every rescoring (omega1, omega2) of the grid (Kallus & Zhou)."""
    h = np.asarray(scores, dtype=float)
    s = auc_sets(y, groups, kind, protected=protected, positive=positive, n=h.size)
    gamma, _ = signed_groups(groups, h.size, protected, s.kind)
    w1 = OMEGA1 if omega1 is None else np.asarray(omega1, dtype=float)
    w2 = OMEGA2 if omega2 is None else np.asarray(omega2, dtype=float)
    auc, gap = np.empty((w1.size, w2.size)), np.empty((w1.size, w2.size))
    with Progress(w1.size, "rescoring grid", verbose) as bar:
        for i, a in enumerate(w1):
            for j, b in enumerate(w2):
                t = sets_terms(rescore(h, gamma, a, b), s)
                auc[i, j], gap[i, j] = t["auc"], t["gap"]
            bar.update(1)
    return {"omega1": w1, "omega2": w2, "auc": auc, "gap": gap, "kind": s.kind, "protected": s.protected}


def choose_rescoring(grid: dict, kappa: float) -> dict:
    """The (omega1, omega2) of the grid with the best validation AUC among those with gap <= kappa (or the
    smallest gap when none is feasible)."""
    feasible = grid["gap"] <= kappa
    if feasible.any():
        flat = np.where(feasible, grid["auc"], -np.inf).argmax()
    else:
        flat = grid["gap"].argmin()
    i, j = np.unravel_index(flat, grid["auc"].shape)
    return {"omega1": float(grid["omega1"][i]), "omega2": float(grid["omega2"][j]), "feasible": bool(feasible.any()),
            "auc": float(grid["auc"][i, j]), "gap": float(grid["gap"][i, j])}


# ---------------------------------------------------------------------------------------------------
# SGD baselines
# ---------------------------------------------------------------------------------------------------
def _sgd(score, grad_fn, *, steps, batch_size, eta, seed, record_every, x0, verbose, desc):
    """Projected minibatch SGD with eta_t = eta / sqrt(t + 1); returns the iterates every ``record_every``."""
    model = score_model(score)
    steps, batch_size = check_int(steps, "steps"), check_int(batch_size, "batch_size")
    record_every = check_int(record_every, "record_every")
    X = model.X
    if eta == "auto":  # the curvature scale of the square surrogate, as the SMD default (bregman_smd.StepRule)
        eta = 1.0 / (2.0 * 0.5 * float(np.einsum("ij,ij->", X, X)) / X.shape[0])
    if not (isinstance(eta, (int, float)) and math.isfinite(eta) and eta > 0):
        raise OptionError(f"eta must be a positive number or 'auto'; got {eta!r}")
    rng = as_generator(seed)
    theta = model.initial(rng) if x0 is None else model.w.check_value(x0, "x0").copy()
    iterates, state = [theta.copy()], {}
    with Progress(steps, desc, verbose) as bar:
        for t in range(steps):
            rows = rng.integers(0, X.shape[0], size=batch_size)
            h, cache = model.forward(theta, X[rows])
            dh = grad_fn(h, rows, state)
            if dh is not None:
                theta = model.w.project(theta - eta / math.sqrt(t + 1) * model.backward(theta, cache, dh))
            if (t + 1) % record_every == 0:
                if not np.all(np.isfinite(theta)):
                    raise OptionError(f"{desc} diverged at step {t}; use a smaller eta")
                iterates.append(theta.copy())
            bar.update(1)
    return {"iterates": iterates, "theta": theta, "state": state}


def _surrogate_pairs(loss_masks, c1, c2) -> PairRisks:
    s = Surrogate(c1, c2)
    return PairRisks(loss_masks, [0], [1], [0], s.c1, s.c2, s.q)


def correlation_penalty(score, data, lam: float, *, protected=None, c1=0.5, c2=1.0, steps: int = 2000,
                        batch_size: int = 100, eta="auto", record_every: int = 100, seed=None, x0=None,
                        verbose=None) -> dict:
    """SGD on L(D+, D-) + lam |corr(h, gamma)| (Beutel et al. 2019a), batch estimates of both terms.

    The gradient of the Pearson correlation on a batch: d corr / dh_j = (g_j - g_bar) / (B s_h s_g)
    - corr (h_j - h_bar) / (B s_h^2).
    """
    if not (np.isfinite(lam) and lam >= 0):
        raise OptionError(f"lam must be a non-negative number; got {lam!r}")
    zeta = signed_labels(data.y)
    gamma, _ = signed_groups(data.groups, zeta.size, protected, "group")
    pairs = _surrogate_pairs(np.vstack([zeta > 0, zeta < 0]), c1, c2)

    def grad(h, rows, state):
        batch = pairs.take(rows)
        if np.any(batch.sizes == 0):
            return None
        dh = batch.grad_h(h, np.ones(1))
        g = gamma[rows]
        sh, sg = h.std(), g.std()
        if lam > 0 and sh > 0 and sg > 0:
            B = h.size
            corr = np.mean((h - h.mean()) * (g - g.mean())) / (sh * sg)
            dcorr = (g - g.mean()) / (B * sh * sg) - corr * (h - h.mean()) / (B * sh ** 2)
            dh = dh + lam * np.sign(corr) * dcorr
        return dh

    return _sgd(score, grad, steps=steps, batch_size=batch_size, eta=eta, seed=seed, record_every=record_every,
                x0=x0, verbose=verbose, desc="correlation penalty")


def proxy_lagrangian(score, data, kind: str, kappa: float, *, protected=None, c1=0.5, c2=1.0, steps: int = 2000,
                     batch_size: int = 100, eta="auto", eta_lambda: float = 1.0, record_every: int = 100, seed=None,
                     x0=None, verbose=None) -> dict:
    """Lagrangian baseline on (2): SGD in the model on L(D+, D-) + sum_k lambda_k (proxy constraint k), and
    projected ascent lambda_k <- max(0, lambda_k + eta_lambda g_k / sqrt(t + 1)) with g_k the batch estimate
    of the ORIGINAL constraint (2) (AUC differences with indicators). The proxies are the square-surrogate
    constraints f1 - 1 - kappa and f2 - 1 - kappa of (6). Returns the iterates and the multipliers."""
    if not (np.isfinite(kappa) and kappa >= 0):
        raise OptionError(f"kappa must be a non-negative number; got {kappa!r}")
    if not (np.isfinite(eta_lambda) and eta_lambda > 0):
        raise OptionError(f"eta_lambda must be a positive number; got {eta_lambda!r}")
    s = auc_sets(data.y, data.groups, kind, protected=protected)
    s.require_nonempty("proxy_lagrangian")
    sur = Surrogate(c1, c2)
    pairs = PairRisks(s.masks, [0, 3, 4, 5, 2], [1, 2, 5, 4, 3], [0, 1, 1, 2, 2], sur.c1, sur.c2, sur.q)
    lam = np.zeros(2)

    def grad(h, rows, state):
        batch = pairs.take(rows)
        if np.any(batch.sizes == 0):
            return None
        t = state.setdefault("t", 0)
        state["t"] = t + 1
        terms = sets_terms(h, s.take(rows))
        viol = np.array([terms["signed_gap"] - kappa, -terms["signed_gap"] - kappa])
        weights = np.concatenate([[1.0], lam])[batch.block]
        dh = batch.grad_h(h, weights)
        lam[:] = np.maximum(0.0, lam + eta_lambda / math.sqrt(t + 1) * viol)
        state.setdefault("lambda", []).append(lam.copy())
        return dh

    if np.any(s.masks.sum(axis=1) < 2):
        raise DataError("proxy_lagrangian needs at least two points in every set")
    return _sgd(score, grad, steps=steps, batch_size=batch_size, eta=eta, seed=seed, record_every=record_every,
                x0=x0, verbose=verbose, desc="proxy-Lagrangian")
