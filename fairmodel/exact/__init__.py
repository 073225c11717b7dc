"""The exact backend: CVXPY lowerings (:mod:`.lower`, with the family atoms' rules registered by their modules),
solver choice and status handling (:mod:`.solvers`), certified Newton and first-order methods (:mod:`.newton`)
and the programs of each family. Importing the package registers every lowering rule."""
from . import auc  # noqa: F401  (registers the AUC atoms' moment-form rules in lower.LOWERING)
