"""The structure of an exact CVXPY program for a reader (a lecture, a notebook): its variables with their shapes
and its constraint blocks with their sizes, kinds and the functions they involve, in words and notation instead
of CVXPY's internal atom names and truncated data matrices."""
from __future__ import annotations

import cvxpy as cp

# CVXPY atom class -> the function a reader knows
ATOM_WORDS = {
    "Pnorm": "norm", "PnormApprox": "norm", "norm1": "l1 norm", "normInf": "max norm", "norm_inf": "max norm",
    "quad_over_lin": "sum of squares", "QuadForm": "quadratic form", "SymbolicQuadForm": "quadratic form",
    "power": "power (square)", "PowerApprox": "power (square)", "logistic": "logistic loss log(1 + e^z)", "log_sum_exp": "log-sum-exp",
    "exp": "exponential", "log": "logarithm", "entr": "entropy", "kl_div": "KL divergence", "rel_entr": "relative entropy",
    "abs": "absolute value", "maximum": "pointwise max", "max": "max", "minimum": "pointwise min", "min": "min",
    "pos": "positive part", "neg": "negative part", "huber": "Huber function", "sum_largest": "sum of largest",
}
KIND_WORDS = {"Inequality": "inequalities", "NonNeg": "inequalities", "NonPos": "inequalities",
              "Equality": "equalities", "Zero": "equalities", "SOC": "second-order cone constraints",
              "ExpCone": "exponential cone constraints", "PSD": "semidefinite constraints",
              "PowCone3D": "power cone constraints"}
ARITHMETIC = {"AddExpression", "MulExpression", "multiply", "DivExpression", "NegExpression", "index", "special_index",
              "Promote", "reshape", "sum", "Sum", "hstack", "vstack", "transpose", "broadcast_to", "Hstack", "Vstack", "Constant",
              "Variable", "Parameter", "DiagVec", "diag_vec", "conv", "trace", "cumsum"}


def _shape(shape) -> str:
    return "scalar" if shape == () else " x ".join(str(s) for s in shape)


def _functions(expr) -> list[str]:
    names = []
    for atom in expr.atoms():
        name = getattr(atom, "__name__", type(atom).__name__)
        if name in ARITHMETIC:
            continue
        word = ATOM_WORDS.get(name, name)
        if word not in names:
            names.append(word)
    return names


def program_structure(program: cp.Problem) -> dict:
    """{"objective": words, "variables": [(name, shape, size)], "blocks": [(kind, rows, variables, functions)],
    "size": (scalar variables, scalar constraints)}: constraints grouped by kind, variables and functions."""
    objective = program.objective
    sense = "minimize" if isinstance(objective, cp.Minimize) else "maximize"
    functions = _functions(objective.expr)
    obj_vars = ", ".join(v.name() for v in objective.expr.variables())
    if isinstance(objective.expr, cp.Variable):
        obj_words = f"{sense} {objective.expr.name()}"
    else:
        obj_words = f"{sense} a function of ({obj_vars})" + (f" built from {', '.join(functions)}" if functions else
                                                              " (linear)")
    variables = [(v.name(), _shape(v.shape), int(v.size)) for v in program.variables()]
    blocks: dict = {}
    for c in program.constraints:
        kind = KIND_WORDS.get(type(c).__name__, type(c).__name__)
        key = (kind, tuple(sorted(v.name() for v in c.variables())), tuple(_functions(c)))
        blocks[key] = blocks.get(key, 0) + int(c.size)
    metrics = program.size_metrics
    return {"objective": obj_words, "variables": variables,
            "blocks": [(kind, rows, ", ".join(names), ", ".join(funcs) or "linear")
                       for (kind, names, funcs), rows in blocks.items()],
            "size": (metrics.num_scalar_variables, metrics.num_scalar_eq_constr + metrics.num_scalar_leq_constr)}


def structure_lines(program: cp.Problem) -> list[str]:
    """The structure as text lines (one per variable and per constraint block)."""
    s = program_structure(program)
    lines = [f"Exact program ({s['size'][0]} scalar variables, {s['size'][1]} scalar constraints; data as "
             f"constants): {s['objective']}",
             "  variables: " + "; ".join(f"{n} ({shape})" for n, shape, _ in s["variables"])]
    for kind, rows, names, funcs in s["blocks"]:
        lines.append(f"  {kind}: {rows} row{'s' * (rows != 1)} in ({names}); {funcs}")
    return lines
