"""A mutation campaign: plant one wrong number at a time in the numerics and check that the default test suite
catches it (run by hand, never collected by pytest: the file name does not start with ``test_``).

Each mutation is (id, file, exact source snippet, replacement, the test files that should catch it). The
campaign copies the repository to a temporary directory once (so the checkout is never modified), then for each
mutation writes the mutated file into the copy, runs ``pytest -x -q`` on the listed test files (default tests
only: the ``slow`` marker stays off) with a timeout, restores the file and records whether a test failed, and
which one. A mutation whose snippet is not found exactly once is reported as ``stale`` (the code moved: update
the snippet).

Usage (from the repository root)::

    .venv/bin/python tests/mutations.py                 # every mutation, its listed test files
    .venv/bin/python tests/mutations.py aleg-vr-sign    # some mutations by id (or by id prefix)
    .venv/bin/python tests/mutations.py --all-tests     # each mutation against the whole default suite (slow)
    .venv/bin/python tests/mutations.py --list          # the table of mutations
    .venv/bin/python tests/mutations.py --check         # only check that every snippet is found exactly once

The result table (id, caught / SURVIVED / timeout / stale, the first failing test, seconds) is printed and
written to ``mutations-report.md`` in the current directory. docs/testing.md lists the set and the last result.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 600          # seconds per mutation (a hang counts as caught, reported as "timeout")


@dataclass
class Mutation:
    id: str
    file: str            # relative to the repository root
    old: str             # exact snippet, found exactly once in the file
    new: str
    tests: tuple         # test files (or node ids) that should catch it
    what: str            # what the mutation breaks, in words


M = Mutation
MUTATIONS = [
    # -- stochastic estimates ------------------------------------------------------------------------------------
    M("lagrangian-vr-values", "fairmodel/families/lagrangian.py",
      "leaves[self.sample] += h_values[self.sample] - s_values[self.sample]",
      "leaves[self.sample] += h_values[self.sample]",
      ("tests/test_estimates.py", "tests/test_leaf_kernels.py"),
      "generic lowering: the variance-reduction correction of the leaf values dropped (estimates ~double)"),
    M("lagrangian-vr-grad", "fairmodel/families/lagrangian.py",
      "return snap.sample_grad + h_grad - s_grad + e_grad",
      "return snap.sample_grad + h_grad + s_grad + e_grad",
      ("tests/test_estimates.py", "tests/test_leaf_kernels.py"),
      "generic lowering: sign of the snapshot term of the gradient estimate"),
    M("compiled-vr-grad", "fairmodel/families/lagrangian.py",
      "v, coef = step.base.copy(), -step.snap_coef",
      "v, coef = step.base.copy(), step.snap_coef",
      ("tests/test_estimates.py", "tests/test_leaf_kernels.py"),
      "generic lowering, compiled leaves: sign of the snapshot term of the gradient estimate"),
    M("compiled-vr-values", "fairmodel/families/lagrangian.py",
      "self.base -= e @ V.T",
      "self.base += e @ V.T",
      ("tests/test_estimates.py", "tests/test_leaf_kernels.py"),
      "generic lowering, compiled leaves: the snapshot's minibatch estimates added to the block values"),
    M("compiled-score-slope", "fairmodel/expressions/score_forms.py",
      "f, df = z, 1.0",
      "f, df = z, 2.0",
      ("tests/test_estimates.py", "tests/test_leaf_kernels.py"),
      "compiled leaf evaluators: the derivative of a score term doubled"),
    M("lagrangian-batch-norm", "fairmodel/families/lagrangian.py",
      "self.W_batch = self.W_cell[:, self.batch_cells] / self.b",
      "self.W_batch = self.W_cell[:, self.batch_cells] / (self.b + 1)",
      ("tests/test_estimates.py", "tests/test_compositions.py"),
      "generic lowering: minibatch normalization off by one"),
    M("lagrangian-cell-weight", "fairmodel/families/lagrangian.py",
      "self.W_cell[k, inside] = self.cell_size[inside] / leaf.count",
      "self.W_cell[k, inside] = 1.0 / inside.sum()",
      ("tests/test_estimates.py", "tests/test_compositions.py"),
      "generic lowering: a leaf over several cells weighs them equally instead of by size"),
    M("aleg-vr-sign", "fairmodel/stochastic/aleg.py",
      "return Xb.T @ coef + g_s, -(diff + r_s)",
      "return Xb.T @ coef + g_s, -(diff - r_s)",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "ALEG: sign of the snapshot risks in the q-part of the estimator (22)"),
    M("aleg-vr-swap-q", "fairmodel/stochastic/aleg.py",
      "wq_s = np.repeat(snap_q / batch_size, batch_size)",
      "wq_s = np.repeat(q_half / batch_size, batch_size)",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "ALEG: the snapshot term of the w-part uses `q_half` instead of $q^s$ (swapped argument)"),
    M("aleg-vr-batch-norm", "fairmodel/stochastic/aleg.py",
      "diff = (risks.loss.phi(z_half, yb) - phi_s).reshape(m, batch_size).sum(axis=1) / batch_size",
      "diff = (risks.loss.phi(z_half, yb) - phi_s).reshape(m, batch_size).sum(axis=1) / (batch_size + 1)",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "ALEG: minibatch mean of the risk differences off by one"),
    M("smd-q-sign", "fairmodel/stochastic/smd.py",
      "logq = normalize_log(logq + gq0 * mult * losses)",
      "logq = normalize_log(logq - gq0 * mult * losses)",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "SMD: the q-step descends instead of ascending"),
    M("smd-batch-norm", "fairmodel/stochastic/smd.py",
      "coef = score_gradient(risks.loss, z, yb, q[batch_group] / batch_size)",
      "coef = score_gradient(risks.loss, z, yb, q[batch_group])",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "SMD: the w-gradient estimate is not divided by the batch size"),
    M("smd-offsets", "fairmodel/stochastic/smd.py",
      "losses = phi(z, yb).reshape(m, batch_size).mean(axis=1) - c",
      "losses = phi(z, yb).reshape(m, batch_size).mean(axis=1) + c",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "SMD: offsets added instead of subtracted (MERO, eq. (6))"),
    M("dp-grad-point-cost", "fairmodel/stochastic/dp_postprocessing.py",
      "        a = (z[0] - z[1]) @ t\n        a -= r\n",
      "        a = (z[0] - z[1]) @ t\n        a += r\n",
      ("tests/test_estimates.py", "tests/test_dp_math.py", "tests/test_dp_stochastic.py"),
      "DP stochastic gradient (11), one point: the cost enters the scores with the wrong sign"),
    M("dp-grad-point-V", "fairmodel/stochastic/dp_postprocessing.py",
      "        np.add(E, eps, out=out[0])\n        np.subtract(eps, E, out=out[1])\n        return out\n    D",
      "        np.add(E, eps, out=out[0])\n        np.add(eps, E, out=out[1])\n        return out\n    D",
      ("tests/test_estimates.py", "tests/test_dp_math.py", "tests/test_dp_stochastic.py"),
      "DP stochastic gradient (11), one point: the V-part is eps + E instead of eps - E"),
    M("dp-grad-batch-norm", "fairmodel/stochastic/dp_postprocessing.py",
      "(t / t.shape[0] if weights is None else weights[:, None] * t)",
      "(t / (t.shape[0] + 1) if weights is None else weights[:, None] * t)",
      ("tests/test_estimates.py", "tests/test_dp_math.py", "tests/test_dp_stochastic.py"),
      "DP stochastic gradient (11), minibatch: mean over b + 1 rows"),
    M("dp-grad-stacked-beta", "fairmodel/oracles/dp_dual.py",
      "    a *= beta\n    top = _max(a, axis=-1, keepdims=True)\n",
      "    top = _max(a, axis=-1, keepdims=True)\n",
      ("tests/test_estimates.py", "tests/test_dp_math.py", "tests/test_dp_stochastic.py"),
      "DP policy kernel (7) (every gradient (11), the dual, the predictor): the inverse temperature beta dropped"),
    M("acsa-gamma", "fairmodel/stochastic/acsa.py",
      "gamma = 4.0 * M / (t * (t + 1))",
      "gamma = 2.0 * M / (t * (t + 1))",
      ("tests/test_estimates.py", "tests/test_dp_stochastic.py"),
      "AC-SA: step parameter gamma_t halved"),
    M("sgd3-anchor", "fairmodel/stochastic/sgd3.py",
      "c, anchor = c + mu_j, anchor + mu_j * w_hat",
      "c, anchor = c + mu_j, anchor - mu_j * w_hat",
      ("tests/test_estimates.py", "tests/test_dp_stochastic.py"),
      "SGD3: the proximal anchor of a stage has the wrong sign"),
    M("auc-saddle-shift", "fairmodel/stochastic/bregman_smd.py",
      "u = self.block_sum2 @ (self.c1x * (m2 + ab * (abm0 - 2 * m1)) + self.lin * m1) + shift",
      "u = self.block_sum2 @ (self.c1x * (m2 + ab * (abm0 - 2 * m1)) + self.lin * m1) - shift",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py", "tests/test_weighted_auc.py"),
      "Bregman SMD: the level / kappa constants of F enter with the wrong sign"),
    M("auc-saddle-coef-norm", "fairmodel/stochastic/bregman_smd.py",
      "coef = (h * (W @ slope) + W @ offset) * H[0]",
      "coef = (h * (W @ slope) + W @ offset)",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py", "tests/test_weighted_auc.py"),
      "Bregman SMD: the score gradient is a batch sum, not a mean"),
    M("auc-saddle-freq", "fairmodel/stochastic/bregman_smd.py",
      "freq = pairs.set_weights / self.n",
      "freq = pairs.set_weights / (self.n - 1)",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py", "tests/test_weighted_auc.py"),
      "Bregman SMD: the set probabilities $p_G$ off by one (biased pair estimates)"),
    M("auc-smd-prox-bound", "fairmodel/stochastic/bregman_smd.py",
      "0.5 * rho_hat * prox_sum / tau_sum)",
      "rho_hat * prox_sum / tau_sum)",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py"),
      "IQRC's SMD: the proximal term of U(r) (33) doubled"),
    M("auc-smd-prox-step", "fairmodel/stochastic/bregman_smd.py",
      "x *= 1.0 / (1.0 + eta * rho_hat)",
      "x *= 1.0 / (1.0 + 2.0 * eta * rho_hat)",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py"),
      "IQRC's SMD: the proximal $x$-step (29) with $d_x = \\frac{\\rho}{2}\\lVert x - \\tilde x \\rVert^2$ has the wrong denominator"),
    M("auc-upper-bound", "fairmodel/stochastic/bregman_smd.py",
      "a = np.clip(v_avg / (2 * q), -I, I)",
      "a = np.clip(v_avg / q, -I, I)",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py"),
      "Lemma 4 upper bound U(r): the maximizing alpha off by a factor 2"),
    M("ssg-objective-step", "fairmodel/stochastic/ssg.py",
      "x = project(x - (e / nrm2) * g0)",
      "x = project(x - (e / np.sqrt(nrm2)) * g0)",
      ("tests/test_estimates.py", "tests/test_partial_idca.py"),
      "SSG: the objective step eps_t / ||g0'||^2 uses the norm instead of its square"),
    M("ssg-polyak-step", "fairmodel/stochastic/ssg.py",
      "x = project(x - (gval / nrm2) * gg)",
      "x = project(x - (0.5 * gval / nrm2) * gg)",
      ("tests/test_estimates.py", "tests/test_partial_idca.py"),
      "SSG: the Polyak step on the constraint halved"),
    M("ogda-one-point-scale", "fairmodel/stochastic/ogda_estimator.py",
      "return self._value(i, u, R * v) * (self.d_zo / R)",
      "return self._value(i, u, R * v) * (self.d_zo / (2.0 * R))",
      ("tests/test_estimates.py", "tests/test_minmax_estimator.py"),
      "OGDA zeroth-order estimator: the one-point factor d / R halved"),
    M("ogda-sign-flip", "fairmodel/stochastic/ogda_estimator.py",
      "return gx, yi, -gy",
      "return gx, yi, gy",
      ("tests/test_estimates.py", "tests/test_minmax_estimator.py"),
      "OGDA estimator: the y-block not negated (F = J grad L)"),
    M("iqrc-random-index", "fairmodel/stochastic/iqrc.py",
      "index = int(rng.integers(0, len(centers))) if output == \"random\" and not stopped else len(centers) - 1",
      "index = int(rng.integers(0, len(centers) - 1)) if output == \"random\" and not stopped else len(centers) - 1",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py"),
      "IQRC: the random output index R never takes its last value S (off by one)"),
    M("aleg-anchor", "fairmodel/stochastic/aleg.py",
      "anchor_w, anchor_logq = a * snap_w + (1.0 - a) * w, a * snap_lam + (1.0 - a) * logq",
      "anchor_w, anchor_logq = (1.0 - a) * snap_w + a * w, a * snap_lam + (1.0 - a) * logq",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "ALEG: the anchor of the w-steps weights the snapshot by 1 - alpha instead of alpha"),
    M("aleg-half-step", "fairmodel/stochastic/aleg.py",
      "w_half, logq_half = prox_step(risks, anchor_w, anchor_logq, g_s, -r_s, gw, gq, steps.metric)",
      "w_half, logq_half = prox_step(risks, anchor_w, anchor_logq, g_s, r_s, gw, gq, steps.metric)",
      ("tests/test_estimates.py", "tests/test_gdro_aleg.py"),
      "ALEG: the half step (19) descends in q"),
    M("primal-dual-y-step", "fairmodel/stochastic/primal_dual.py",
      "lam = simplices.normalize_log(anchor + gy_rows * simplices.join(v_y))",
      "lam = simplices.normalize_log(anchor - gy_rows * simplices.join(v_y))",
      ("tests/test_estimates.py", "tests/test_compositions.py"),
      "generic primal-dual method: the full y-step descends"),
    M("primal-dual-anchor", "fairmodel/stochastic/primal_dual.py",
      "anchor_w = snap_part_w + keep * w",
      "anchor_w = w",
      ("tests/test_estimates.py", "tests/test_compositions.py"),
      "generic primal-dual method: the snapshot left out of the w-anchor"),
    M("sfls-level", "fairmodel/stochastic/sfls.py",
      "r = r + U / (2.0 * theta)",
      "r = r + U / theta",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py"),
      "SFLS: the level moves by U / theta instead of U / (2 theta)"),
    M("sfls-eps-opt", "fairmodel/stochastic/sfls.py",
      "eps_opt = -U * eps / theta",
      "eps_opt = -U * eps",
      ("tests/test_estimates.py", "tests/test_auc_fairness_stochastic.py"),
      "SFLS: the halting tolerance of Proposition 1 without its 1 / theta"),
    M("sgd3-alpha", "fairmodel/stochastic/sgd3.py",
      "return 1.0 / (2.0 ** (sgd3_stages(M, mu, reference) + 2) * mu)",
      "return 1.0 / (2.0 ** (sgd3_stages(M, mu, reference) + 1) * mu)",
      ("tests/test_estimates.py", "tests/test_dp_stochastic.py"),
      "SGD3: the gradient-mapping parameter 1 / (2^(J+2) mu) with J + 1"),
    M("sgd-average", "fairmodel/stochastic/sgd3.py",
      "avg += tmp / (t - first + 1)",
      "avg += tmp / (t - first + 2)",
      ("tests/test_estimates.py", "tests/test_dp_stochastic.py"),
      "projected SGD: the running mean of the averaged iterates off by one"),
    M("dp-reference-beta", "fairmodel/families/dp_runs.py",
      "beta = 0.5 * math.sqrt(n) * math.log2(n)",
      "beta = 0.5 * math.sqrt(n) * math.log(n)",
      ("tests/test_estimates.py", "tests/test_dp_api.py"),
      "DP parameter rule of the experiments: beta with the natural log instead of log2"),
    # -- oracles ---------------------------------------------------------------------------------------------------
    M("logistic-hessian", "fairmodel/oracles/losses.py",
      "        p = expit(y * z)\n        return p * (1.0 - p)",
      "        p = expit(y * z)\n        return p * (1.0 - p) / 2",
      ("tests/test_new_losses.py", "tests/test_gdro_exact.py", "tests/test_estimates.py"),
      "logistic loss: second derivative halved (Newton still converges, slower)"),
    M("huber-gradient", "fairmodel/oracles/losses.py",
      "return 2.0 * np.clip(z - y, -cls.delta, cls.delta)",
      "return np.clip(z - y, -cls.delta, cls.delta)",
      ("tests/test_new_losses.py", "tests/test_compositions.py"),
      "Huber loss: derivative missing its factor 2"),
    M("squared-hinge-gradient", "fairmodel/oracles/losses.py",
      "return -2.0 * y * np.maximum(0.0, 1.0 - y * z)",
      "return -y * np.maximum(0.0, 1.0 - y * z)",
      ("tests/test_new_losses.py", "tests/test_compositions.py"),
      "squared hinge: derivative missing its factor 2"),
    M("newton-hessian-weights", "fairmodel/oracles/losses.py",
      "return value, grad, self.curvature(self.s * self.kernel.d2phi(z, self.y))",
      "return value, grad, self.curvature(self.kernel.d2phi(z, self.y))",
      ("tests/test_gdro_exact.py", "tests/test_estimates.py"),
      "LinearModelLoss: the Hessian ignores the sample weights"),
    M("group-risk-grad-norm", "fairmodel/oracles/group_risks.py",
      "weight = np.asarray(q, dtype=float) / self.sizes\n        kernel = _RiskPass(",
      "weight = np.asarray(q, dtype=float)\n        kernel = _RiskPass(",
      ("tests/test_gdro_exact.py", "tests/test_gdro_aleg.py"),
      "group risks: the q-weighted gradient is not divided by the group sizes"),
    M("pair-risk-alpha", "fairmodel/oracles/pairs.py",
      "+ 2 * c1 * delta * alpha - q * alpha ** 2)",
      "+ 2 * c1 * delta * alpha + q * alpha ** 2)",
      ("tests/test_auc_fairness_exact.py", "tests/test_weighted_auc.py"),
      "pair risks (Lemma 1): sign of the alpha^2 term"),
    M("pair-grad-second", "fairmodel/oracles/pairs.py",
      "dmT = weights * (2 * c1 * c2 + 2 * c1 * (t[\"m_prime\"] - t[\"b\"]) - 2 * c1 * t[\"alpha\"])",
      "dmT = weights * (-2 * c1 * c2 + 2 * c1 * (t[\"m_prime\"] - t[\"b\"]) - 2 * c1 * t[\"alpha\"])",
      ("tests/test_auc_fairness_exact.py", "tests/test_weighted_auc.py", "tests/test_auc_fairness_family.py"),
      "pair risks: gradient with respect to the second set's mean, sign of the c2 term"),
    M("pair-moments-linear", "fairmodel/oracles/pairs.py",
      "g = -2.0 * (weights * c1 * c2) @ delta",
      "g = -1.0 * (weights * c1 * c2) @ delta",
      ("tests/test_auc_fairness_exact.py", "tests/test_weighted_auc.py", "tests/test_estimates.py"),
      "pair risks, moment form: the linear coefficient halved"),
    M("dp-dual-linear-term", "fairmodel/oracles/dp_dual.py",
      "return float(np.sum((z[0] + z[1]) * self.eps))",
      "return float(np.sum((z[0] - z[1]) * self.eps))",
      ("tests/test_dp_math.py", "tests/test_dp_exact.py"),
      "DP dual (5): the eps term uses Lambda - V instead of Lambda + V"),
    M("dp-neg-entropy", "fairmodel/oracles/dp_dual.py",
      "return -float(self.w @ entr(P).sum(axis=1))",
      "return float(self.w @ entr(P).sum(axis=1))",
      ("tests/test_dp_math.py", "tests/test_dp_exact.py", "tests/test_certificates.py"),
      "DP: the entropy of the regularized risk (4) with the wrong sign"),
    M("dp-smoothness", "fairmodel/oracles/dp_dual.py",
      "return 2.0 * self.beta * self.sigma2_plugin()",
      "return self.beta * self.sigma2_plugin()",
      ("tests/test_certificates.py", "tests/test_dp_math.py", "tests/test_dp_stochastic.py"),
      "DP dual: smoothness constant M = 2 beta sigma^2 halved (Lemma 3.4)"),
    M("dp-gradient-mapping", "fairmodel/oracles/dp_dual.py",
      "return np.minimum(z / alpha, grad)",
      "return np.minimum(z * alpha, grad)",
      ("tests/test_dp_math.py", "tests/test_certificates.py"),
      "DP: gradient mapping (8) multiplies by alpha instead of dividing"),
    M("strategic-primal", "fairmodel/oracles/strategic.py",
      "np.maximum(loss_pos(zp), loss_neg(zp) - 2.0 * self.kappa * alpha)",
      "np.maximum(loss_pos(zp), loss_neg(zp) - self.kappa * alpha)",
      ("tests/test_minmax_strategic.py", "tests/test_weighted_strategic.py", "tests/test_certificates.py"),
      "strategic DRO: the closed-form inner max (E2) with kappa alpha instead of 2 kappa alpha"),
    M("project-ball-center", "fairmodel/oracles/domains.py",
      "return d * (radius / nrm) if center is None else center + d * (radius / nrm)",
      "return d * (radius / nrm) if center is None else d * (radius / nrm)",
      ("tests/test_minmax_domains.py", "tests/test_partial_idca.py", "tests/test_estimates.py"),
      "projection onto a ball with a center forgets the center"),
    M("logistic-gradient", "fairmodel/oracles/losses.py",
      "return -y * expit(-y * z)",
      "return -y * expit(y * z)",
      ("tests/test_expressions.py", "tests/test_gdro_exact.py", "tests/test_estimates.py"),
      "logistic loss: derivative with expit(y z) instead of expit(-y z)"),
    M("hinge-gradient", "fairmodel/oracles/losses.py",
      "return np.where(y * z < 1.0, -y, 0.0)",
      "return np.where(y * z < 1.0, y, 0.0)",
      ("tests/test_expressions.py", "tests/test_gdro_aleg.py", "tests/test_compositions.py"),
      "hinge loss: subgradient with the wrong sign"),
    M("softmax-gradient", "fairmodel/oracles/losses.py",
      "p[np.arange(z.shape[0]), y] -= 1.0",
      "p[np.arange(z.shape[0]), y] -= 0.5",
      ("tests/test_expressions.py", "tests/test_gdro_aleg.py", "tests/test_gdro_exact.py"),
      "softmax cross-entropy: the one-hot term of the gradient halved"),
    M("judge-accuracy", "fairmodel/oracles/group_risks.py",
      "return totals, np.bincount(codes, weights=(np.sign(z) == y).astype(float), minlength=self.m)",
      "return totals, np.bincount(codes, weights=(np.sign(z) != y).astype(float), minlength=self.m)",
      ("tests/test_metric_references.py", "tests/test_gdro_exact.py"),
      "the judge's group accuracies count the errors"),
    # -- certificates ----------------------------------------------------------------------------------------------
    M("gdro-ball-bound", "fairmodel/oracles/domains.py",
      "return max(0.0, float(np.vdot(g, np.ravel(theta))) + radius",
      "return max(0.0, -float(np.vdot(g, np.ravel(theta))) + radius",
      ("tests/test_certificates.py", "tests/test_gdro_exact.py"),
      "group DRO: the Frank-Wolfe lower bound on the inner minimum of (13), sign of <grad, theta>"),
    M("gdro-gap-shift", "fairmodel/families/gdro.py",
      "shift = float(np.dot(q, offsets))",
      "shift = float(np.sum(offsets))",
      ("tests/test_certificates.py", "tests/test_gdro_exact.py"),
      "MERO duality gap (13): the offsets weighted by 1 instead of q"),
    M("gdro-gap-lower", "fairmodel/families/gdro.py",
      "return top - (value - shift), top - (bound - shift), bound - shift",
      "return top - (value - shift), top - (bound - shift), bound",
      ("tests/test_certificates.py", "tests/test_gdro_exact.py"),
      "MERO: the lower bound on OPT forgets the q-weighted offsets"),
    M("fw-gap-sign", "fairmodel/oracles/domains.py",
      "np.ravel(theta))) + radius * math.sqrt",
      "np.ravel(theta))) - radius * math.sqrt",
      ("tests/test_certificates.py", "tests/test_gdro_exact.py"),
      "Frank-Wolfe gap on a ball: sign of the radius term"),
    M("lagrangian-penalized", "fairmodel/families/lagrangian.py",
      "return float(self.a0 @ leaves + self.c0 + sum(float(np.max(v)) for v in values))",
      "return float(self.a0 @ leaves + self.c0 + sum(float(np.mean(v)) for v in values))",
      ("tests/test_certificates.py", "tests/test_compositions.py"),
      "generic Lagrangian gap: max_y Phi uses the mean of the pieces instead of their max"),
    M("lagrangian-duals-bound", "fairmodel/families/convex.py",
      "bound = float(ys[-1].sum()) if form.constraint_pieces else 0.0",
      "bound = float(ys[-1].max()) if form.constraint_pieces else 0.0",
      ("tests/test_certificates.py", "tests/test_compositions.py"),
      "generic Lagrangian gap: the multiplier bound read from the largest multiplier instead of their sum"),
    M("lagrangian-cvxpy-const", "fairmodel/families/lagrangian.py",
      "const = self.c0 + sum(float(c @ y) for c, y in zip(self.c, ys))",
      "const = self.c0",
      ("tests/test_certificates.py", "tests/test_compositions.py"),
      "generic Lagrangian gap without a radius: the constants of the pieces left out of the inner minimum"),
    M("auc-bracket-lagrangian", "fairmodel/exact/auc.py",
      "return theta, f[0] + lam @ (f[1:] - self.bounds[1:]), f, A, g",
      "return theta, f[0] - lam @ (f[1:] - self.bounds[1:]), f, A, g",
      ("tests/test_certificates.py", "tests/test_auc_fairness_exact.py", "tests/test_auc_fairness_family.py"),
      "AUC level-set bracket: the Lagrangian's constraint term with the wrong sign"),
    M("auc-bracket-inner", "fairmodel/exact/auc.py",
      "theta = ball_qp_step(2 * A, -g, self.radius)",
      "theta = ball_qp_step(A, -g, self.radius)",
      ("tests/test_certificates.py", "tests/test_auc_fairness_exact.py", "tests/test_auc_fairness_family.py"),
      "AUC level-set bracket: the inner minimizer of the dual function from half the Hessian (a loose bound)"),
    M("dp-primal-dual-gap", "fairmodel/families/dp.py",
      "out[\"duality_gap\"] = dual_stats(dual, None, P)[\"regularized_risk\"] + value",
      "out[\"duality_gap\"] = dual_stats(dual, None, P)[\"regularized_risk\"] - value",
      ("tests/test_certificates.py", "tests/test_dp_exact.py", "tests/test_dp_api.py"),
      "DP: the primal-dual gap R_beta(P) + F(z) with F subtracted"),
    M("dp-identity-residual", "fairmodel/families/dp.py",
      "out[\"identity_residual\"] = stats_z[\"regularized_risk\"] + value - float(np.sum(z * grad))",
      "out[\"identity_residual\"] = stats_z[\"regularized_risk\"] + value + float(np.sum(z * grad))",
      ("tests/test_certificates.py", "tests/test_dp_exact.py", "tests/test_dp_api.py"),
      "DP: the identity residual of Lemma 3.5 with the sign the paper prints"),
    M("dp-kkt-alpha", "fairmodel/oracles/dp_dual.py",
      "return 1.0 / max(dual.smoothness(), 1e-300)",
      "return 2.0 / max(dual.smoothness(), 1e-300)",
      ("tests/test_certificates.py", "tests/test_dp_exact.py", "tests/test_dp_api.py"),
      "DP: the KKT residual's gradient-mapping parameter alpha = 1/M doubled"),
    M("partial-kkt-eps", "fairmodel/stochastic/idca.py",
      "factor = min(1.0, 1.0 / (2 * M), (1.0 / (2 * M * lam_max)) if lam_max > 0 else np.inf)",
      "factor = min(1.0, 1.0 / M, (1.0 / (2 * M * lam_max)) if lam_max > 0 else np.inf)",
      ("tests/test_certificates.py", "tests/test_partial_family.py", "tests/test_partial_idca.py"),
      "partial fairness: Lemma C.1's epsilon with 1/M instead of 1/(2M)"),
    M("strategic-gap", "fairmodel/families/strategic_dro.py",
      "return {\"duality_gap\": primal - dual, \"primal\": primal, \"dual\": dual}",
      "return {\"duality_gap\": primal - dual, \"primal\": primal, \"dual\": primal}",
      ("tests/test_certificates.py", "tests/test_minmax_strategic.py"),
      "strategic DRO: the dual value reported as the primal"),
    M("saddle-gap", "fairmodel/minmax.py",
      "certificate[\"duality_gap\"] = primal - dual",
      "certificate[\"duality_gap\"] = abs(primal - dual) / 2",
      ("tests/test_certificates.py", "tests/test_minmax_algorithms.py"),
      "SaddleProblem: the duality gap halved"),
    M("saddle-huber", "fairmodel/minmax.py",
      "return np.where(a <= mu, s * s / (2 * mu), a - mu / 2)",
      "return np.where(a <= mu, s * s / (2 * mu), a - mu)",
      ("tests/test_certificates.py", "tests/test_minmax_algorithms.py"),
      "quadratic game: the closed-form max over y (the Huber function) beyond mu off by mu / 2"),
    M("saddle-min-x", "fairmodel/minmax.py",
      "xs = ball_qp_step(H, Atb - Bm.T @ y, rho)",
      "xs = ball_qp_step(H, Atb + Bm.T @ y, rho)",
      ("tests/test_certificates.py", "tests/test_minmax_algorithms.py"),
      "quadratic game: the closed-form min over x with the coupling's sign flipped"),
    # -- metrics ---------------------------------------------------------------------------------------------------
    M("rates-fpr", "fairmodel/metrics/rates.py",
      "return ratio(c[..., 1], c[..., 1] + c[..., 0])",
      "return ratio(c[..., 1], c[..., 1] + c[..., 2])",
      ("tests/test_assessment.py", "tests/test_metric_references.py"),
      "false-positive rate over fp + fn instead of fp + tn"),
    M("rates-bacc", "fairmodel/metrics/rates.py",
      "return (_tpr(c) + ratio(c[..., 0], c[..., 0] + c[..., 1])) / 2",
      "return (_tpr(c) + ratio(c[..., 0], c[..., 0] + c[..., 2])) / 2",
      ("tests/test_assessment.py", "tests/test_metric_references.py"),
      "balanced accuracy: the true-negative rate over tn + fn"),
    M("rates-auc-levels", "fairmodel/metrics/rates.py",
      "return mann_whitney(pos, np.cumsum(neg, axis=-1) - neg, neg, neg.sum(axis=-1), ties)",
      "return mann_whitney(pos, np.cumsum(neg, axis=-1), neg, neg.sum(axis=-1), ties)",
      ("tests/test_assessment.py", "tests/test_metric_references.py"),
      "AUC from levels: ties counted as wins (off by one level)"),
    M("auc-weighted-den", "fairmodel/metrics/auc.py",
      "return float(mann_whitney(wa, below, tied, cum[-1], t))",
      "return float(mann_whitney(wa, below, tied, cum.size - 1, t))",
      ("tests/test_auc_fairness_metrics.py", "tests/test_weighted_auc.py", "tests/test_metric_references.py"),
      "weighted AUC between sets: normalized by the count instead of the weight of S'"),
    M("auc-ties", "fairmodel/metrics/auc.py",
      "return float(mann_whitney(wa, below, tied, cum[-1], t))",
      "return float(mann_whitney(wa, below, tied, cum[-1], 1.0))",
      ("tests/test_auc_fairness_metrics.py", "tests/test_metric_references.py"),
      "AUC between sets: ties count 1 instead of t"),
    M("auc-kernel-ties", "fairmodel/metrics/vectorized.py",
      "return mann_whitney(Wp, C[below], tied, C[-1], 0.5, axis=0)",
      "return mann_whitney(Wp, C[below], tied, C[-1], 1.0, axis=0)",
      ("tests/test_assessment.py", "tests/test_metric_references.py"),
      "fm.assess AUC: ties count as wins"),
    M("ks-kernel", "fairmodel/metrics/vectorized.py",
      "self.pos = [np.searchsorted(lv, global_levels, side=\"right\") for lv in local_levels]",
      "self.pos = [np.searchsorted(lv, global_levels, side=\"left\") for lv in local_levels]",
      ("tests/test_assessment.py", "tests/test_metric_references.py"),
      "fm.assess KS: the group CDF read one level too early"),
    M("assess-ratio", "fairmodel/metrics/assessment.py",
      "return _extreme(np.minimum(by / o, o / by), np.min)",
      "return _extreme(np.maximum(by / o, o / by), np.min)",
      ("tests/test_assessment.py", "tests/test_metric_references.py"),
      "fm.assess ratio to_overall: max of the two ratios instead of the min"),
    M("bootstrap-stratified", "fairmodel/metrics/vectorized.py",
      "idx = rng.integers(0, size, size=(draws, size)) * draws",
      "idx = rng.integers(0, max(size - 1, 1), size=(draws, size)) * draws",
      ("tests/test_assessment.py", "tests/test_metric_references.py"),
      "stratified bootstrap: the last row of each group is never drawn (off by one)"),
    M("dp-pmf-unfairness", "fairmodel/metrics/dp.py",
      "return w[mask] @ P[mask] / w[mask].sum()",
      "return w[mask] @ P[mask] / w.sum()",
      ("tests/test_dp_api.py", "tests/test_metric_references.py"),
      "DP metrics: a group's mean predicted distribution normalized by the total weight"),
    M("dp-ks-weights", "fairmodel/metrics/dp.py",
      "overall = _ecdf(pred, w, points)",
      "overall = _ecdf(pred, np.ones_like(w), points)",
      ("tests/test_dp_api.py", "tests/test_metric_references.py"),
      "DP metrics: the overall CDF of deterministic predictions ignores the sample weights"),
    M("partial-band-rate", "fairmodel/metrics/partial.py",
      "return (np.clip(fbar, alpha, beta) - alpha) / (beta - alpha)",
      "return (np.clip(fbar, alpha, beta) - alpha) / beta",
      ("tests/test_partial_metrics.py", "tests/test_metric_references.py"),
      "partial DP: identity (29) divided by beta instead of beta - alpha"),
    M("partial-weighted-ccdf", "fairmodel/metrics/partial.py",
      "return 1.0 - cum[np.searchsorted(scores[order], thresholds, side=\"right\")] / cum[-1]",
      "return 1.0 - cum[np.searchsorted(scores[order], thresholds, side=\"left\")] / cum[-1]",
      ("tests/test_partial_metrics.py", "tests/test_partial_weights.py", "tests/test_metric_references.py"),
      "partial DP, weighted: the rank counts s >= theta instead of s > theta (visible at a threshold equal to a "
      "score: over the pooled scores the two step functions give the same maximum)"),
    M("partial-trimmed", "fairmodel/metrics/partial.py",
      "return srt[(rank >= alpha) & (rank < beta)]",
      "return srt[(rank > alpha) & (rank < beta)]",
      ("tests/test_partial_metrics.py", "tests/test_metric_references.py"),
      "partial DP, trimmed estimator: the band [alpha, beta) opened at alpha"),
    # -- exact lowerings -------------------------------------------------------------------------------------------
    M("lower-mean-where", "fairmodel/exact/lower.py",
      "return (e.where.astype(float) / e.count) @ inner",
      "return (e.where.astype(float) / e.expr.size) @ inner",
      ("tests/test_compositions.py", "tests/test_error_rate_constraints.py", "tests/test_lowerings.py"),
      "CVXPY lowering of fm.mean(e, where=): divided by n instead of the rows in the mask"),
    M("lower-sum-squares", "fairmodel/exact/lower.py",
      "core = theta[:-1] if e.w.intercept and not e.include_intercept else theta",
      "core = theta",
      ("tests/test_compositions.py", "tests/test_lowerings.py"),
      "CVXPY lowering of fm.sum_squares: the intercept is penalized"),
    M("lower-norm-intercept", "fairmodel/exact/lower.py",
      "core = theta[:-1] if e.w.intercept else theta\n    return cp.norm(",
      "core = theta\n    return cp.norm(",
      ("tests/test_compositions.py", "tests/test_lowerings.py"),
      "CVXPY lowering of fm.norm: the intercept is included"),
    M("lower-huber", "fairmodel/exact/lower.py",
      "Huber: lambda k, z, y: cp.huber(z - y, M=k.delta),",
      "Huber: lambda k, z, y: cp.huber(z - y, M=1.0),",
      ("tests/test_new_losses.py", "tests/test_lowerings.py"),
      "CVXPY lowering of the Huber loss ignores delta"),
    M("lower-group-mean", "fairmodel/exact/lower.py",
      "return sp.csr_matrix((1.0 / sizes[codes[keep]], (codes[keep], keep)), shape=(sizes.shape[0], n))",
      "return sp.csr_matrix((1.0 / n * np.ones(keep.size), (codes[keep], keep)), shape=(sizes.shape[0], n))",
      ("tests/test_gdro_exact.py", "tests/test_compositions.py", "tests/test_lowerings.py"),
      "CVXPY group averaging divides by $n$ instead of $\\lvert G_g \\rvert$"),
    # -- exact programs ----------------------------------------------------------------------------------------------
    M("gdro-epigraph-offsets", "fairmodel/exact/gdro.py",
      "group_constraint = cvxpy_risks(risks, theta) - c <= t",
      "group_constraint = cvxpy_risks(risks, theta) + c <= t",
      ("tests/test_certificates.py", "tests/test_gdro_exact.py"),
      "group DRO / MERO epigraph program: offsets added instead of subtracted"),
    M("auc-moment-form", "fairmodel/exact/auc.py",
      "return common + cp.multiply(c1 ** 2 / q, cp.square(delta))",
      "return common + cp.multiply(c1 / q, cp.square(delta))",
      ("tests/test_auc_fairness_exact.py", "tests/test_certificates.py"),
      "AUC moment form: the Delta^2 coefficient c1^2 / q written c1 / q"),
    M("auc-lifted-huber", "fairmodel/exact/auc.py",
      "+ cp.multiply(q, cp.huber(cp.multiply(c1 / q, delta), I)))",
      "+ cp.huber(cp.multiply(c1 / q, delta), I))",
      ("tests/test_auc_fairness_exact.py",),
      "AUC lifted form: the Huber term of the clipped alpha without its factor q"),
    M("dp-primal-entropy", "fairmodel/exact/dp.py",
      "objective = objective - cp.sum(cp.multiply(dual.w[:, None], cp.entr(P))) / dual.beta",
      "objective = objective + cp.sum(cp.multiply(dual.w[:, None], cp.entr(P))) / dual.beta",
      ("tests/test_dp_exact.py",),
      "DP entropic primal (4): the entropy rewards instead of penalizing"),
    M("dp-dual-program-eps", "fairmodel/exact/dp.py",
      "linear = cp.sum(cp.multiply(Lam + V, np.broadcast_to(dual.eps, (dual.m, dual.K))))",
      "linear = cp.sum(cp.multiply(Lam, np.broadcast_to(dual.eps, (dual.m, dual.K))))",
      ("tests/test_dp_exact.py",),
      "DP dual programs: the eps term misses V"),
    M("strategic-inner-linear", "fairmodel/exact/strategic_dro.py",
      "linear = model.X[model.pos].T @ (p * (C_LABEL * (1.0 + gp) - 1.0))",
      "linear = model.X[model.pos].T @ (p * (C_LABEL * (1.0 - gp) - 1.0))",
      ("tests/test_certificates.py", "tests/test_minmax_strategic.py"),
      "strategic DRO inner minimum (E3): the sign of gamma in the linear term"),
    M("strategic-inner-alpha", "fairmodel/exact/strategic_dro.py",
      "objective = a / slope * cp.norm(theta, 2) if a >= 0 else a * top",
      "objective = a / slope * cp.norm(theta, 1) if a >= 0 else a * top",
      ("tests/test_certificates.py", "tests/test_minmax_strategic.py"),
      "strategic DRO inner minimum (E3): alpha eliminated as ||theta||_1 / slope instead of ||theta||_2 / slope"),
    M("dc-pos-mean", "fairmodel/oracles/dc_bands.py",
      "return (self.suffix[idx] - (self.n - idx) * c) / self.n",
      "return (self.suffix[idx] - (self.n - idx - 1) * c) / self.n",
      ("tests/test_partial_model.py", "tests/test_partial_family.py"),
      "partial fairness: the mean of pos(z - c) counts one row too few above the cut"),
    M("dc-mean-grad", "fairmodel/oracles/dc_hinges.py",
      "self.n_each = self.sizes[self.cell]",
      "self.n_each = np.full(self.cell.size, self.sizes.sum())",
      ("tests/test_partial_model.py", "tests/test_partial_family.py"),
      "partial fairness: a group's hinge average divided by $n$ instead of $n_k$"),
    M("dc-kept-values-stale-bound", "fairmodel/oracles/dc.py",
      "self.values = Recent(self._values, RECENT, bounds)",
      "self.values = Recent(self._values, RECENT)",
      ("tests/test_recent_values.py",),
      "the DC program's constraint values kept across a change of a constraint's bound"),
    M("partial-certificate-missing-passes", "fairmodel/families/partial.py",
      'step = evaluation.certificate.get("relative_step", float("nan"))',
      'step = evaluation.certificate.get("relative_step", 0.0)',
      ("tests/test_partial_family.py",),
      "partial fairness: a result whose Lemma C.1 certificate was not computed passes on its constraints alone"),
    M("partial-certificate-capped-by-pieces", "fairmodel/families/partial.py",
      "if kind == \"ipm\" and last_step is not None:",
      "if kind == \"ipm\" and last_step is not None and False:",
      ("tests/test_dask_dc.py",),
      "partial fairness: the judge's certificate of a run's result refused above a number of ramp pieces"),
    M("model-duals-of-the-run", "fairmodel/families/model_space.py",
      "values, grads, H = self.leaves(theta, self.a0 + self.G.T @ weights)",
      "values, grads, H = self.leaves(theta, self.a0 + self.G.T @ weights); grads = 0.0 * grads",
      ("tests/test_model_space_ipm.py",),
      "the dual model without the pieces' gradients: its maximizer ignores where w stands"),
    M("second-opinion-kept-when-worse", "fairmodel/families/stopping.py",
      "return mine is not None and (theirs is None or mine[0] < theirs[0])",
      "return mine is not None",
      ("tests/test_stopping.py",),
      "a checkpoint keeps the second candidate even when its checks are farther from passing"),
    M("ipm-newton-model-kept-without-hessian", "fairmodel/oracles/dc_ipm.py",
      "enough=lambda kept: kept[2] is not None or not hessian",
      "enough=lambda kept: True",
      ("tests/test_partial_ipm.py",),
      "F's Newton model built from a kept value and gradient without its Hessian"),
    M("rate-jacobian-without-minus", "fairmodel/oracles/dc_rates.py",
      "return A - minus, dA - slopes",
      "return A - minus, dA",
      ("tests/test_ramp_rates.py",),
      "the one-pass subgradients of a rate block without the f- part (the penalty start's gradient)"),
    M("ramp-pair-sums-lower-cut", "fairmodel/oracles/dc_rates.py",
      "cell * np.where(u > 0.5, f, 0.0)",
      "cell * np.where(u > -0.5, f, 0.0)",
      ("tests/test_ramp_rates.py",),
      "the one-pass sums count the lower hinge's rows from the upper hinge's cut"),
    M("ipm-no-second-run-at-cap", "fairmodel/oracles/dc_ipm.py",
      'if info["status"] in ("stalled", "max_iter"):',
      'if info["status"] == "stalled":',
      ("tests/test_partial_ipm.py",),
      "a solve of (25) that reaches its cap is not continued from its own multipliers"),
    M("stop-request-outlives-its-solve", "fairmodel/utilities/progress.py",
      "        if STOP.depth == 0:\n            STOP.requested = False\n",
      "",
      ("tests/test_interrupts_and_sweeps.py",),
      "a Ctrl-C request left set after its solve ends (the next method run stops after one epoch)"),
    M("rate-lowering-never-stalls", "fairmodel/families/partial_rates.py",
      "if stalled >= STALL_RUNS:",
      "if False:",
      ("tests/test_ramp_rates.py",),
      "the true-rate continuation lowers the ramp bound on when the true gaps stopped falling"),
    M("rate-stall-count-never-resets", "fairmodel/families/partial_rates.py",
      "(1.0 - STALL_SHARE) * (best - RATE_TOLERANCE) else 0",
      "(1.0 - STALL_SHARE) * (best - RATE_TOLERANCE) else stalled",
      ("tests/test_ramp_rates.py",),
      "the stall count of the true-rate continuation is not reset by a run that comes closer"),
    M("penalty-start-unchecked", "fairmodel/families/partial_starts.py",
      "if program.max_violation(point) <= 0:",
      "if True:",
      ("tests/test_ramp_rates.py",),
      "the penalty start returned whether or not it meets the declared bounds"),
]


def find(mutation: Mutation, root: Path) -> str | None:
    """The file's text when the snippet occurs exactly once, else None."""
    text = (root / mutation.file).read_text()
    return text if text.count(mutation.old) == 1 else None


FAILED = re.compile(r"^(FAILED|ERROR) (\S+)", re.M)


def run_one(mutation: Mutation, root: Path, python: str, all_tests: bool, timeout: int) -> tuple[str, str, float]:
    """(outcome, first failing test, seconds) for one mutation planted in the copy at ``root``."""
    path = root / mutation.file
    original = find(mutation, root)
    if original is None:
        return "stale", "snippet not found exactly once", 0.0
    tests = ["tests"] if all_tests else [t for t in mutation.tests if (root / t.split("::")[0]).exists()]
    if not tests:
        return "no-tests", "none of the listed test files exists", 0.0
    path.write_text(original.replace(mutation.old, mutation.new))
    start = time.perf_counter()
    try:
        proc = subprocess.run([python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests], cwd=root,
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        seconds = time.perf_counter() - start
        if proc.returncode == 0:
            return "SURVIVED", "", seconds
        found = FAILED.search(proc.stdout)
        if proc.returncode in (1, 2) and found:
            return "caught", found.group(2), seconds
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["?"]
        return "caught", f"pytest exit {proc.returncode}: {tail[0][:100]}", seconds
    except subprocess.TimeoutExpired:
        return "timeout", f"no result in {timeout} s", time.perf_counter() - start
    finally:
        path.write_text(original)


def copy_repository(target: Path) -> None:
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", "build")
    for item in ROOT.iterdir():
        if item.name in (".git", ".venv", "build") or item.name.endswith(".egg-info"):
            continue
        if item.is_dir():
            shutil.copytree(item, target / item.name, ignore=ignore)
        else:
            shutil.copy2(item, target / item.name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutation ids or id prefixes (default: all)")
    parser.add_argument("--all-tests", action="store_true", help="run the whole default suite for each mutation")
    parser.add_argument("--list", action="store_true", help="print the mutations and exit")
    parser.add_argument("--check", action="store_true", help="check that every snippet is found exactly once")
    parser.add_argument("--timeout", type=int, default=TIMEOUT)
    parser.add_argument("--report", default="mutations-report.md")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.ids or any(m.id == i or m.id.startswith(i) for i in args.ids)]
    if len({m.id for m in MUTATIONS}) != len(MUTATIONS):
        raise SystemExit("duplicate mutation ids")
    if args.list:
        for m in chosen:
            print(f"{m.id:26s} {m.file:45s} {m.what}")
        return 0
    if args.check:
        stale = [m.id for m in chosen if find(m, ROOT) is None]
        print(f"{len(chosen) - len(stale)} of {len(chosen)} snippets found exactly once" +
              (f"; stale: {', '.join(stale)}" if stale else ""))
        return 1 if stale else 0
    python = sys.executable
    rows = []
    with tempfile.TemporaryDirectory(prefix="fairmodel-mutations-") as tmp:
        root = Path(tmp)
        copy_repository(root)
        for k, m in enumerate(chosen, 1):
            outcome, test, seconds = run_one(m, root, python, args.all_tests, args.timeout)
            rows.append((m, outcome, test, seconds))
            print(f"[{k}/{len(chosen)}] {m.id:26s} {outcome:9s} {seconds:6.1f}s  {test}", flush=True)
    caught = sum(r[1] in ("caught", "timeout") for r in rows)
    lines = [f"{caught} of {len(rows)} mutations caught", "", "| id | file | outcome | first failing test | s |",
             "|---|---|---|---|---|"]
    lines += [f"| {m.id} | {m.file} | {o} | {t} | {s:.0f} |" for m, o, t, s in rows]
    Path(args.report).write_text("\n".join(lines) + "\n")
    print(lines[0])
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
