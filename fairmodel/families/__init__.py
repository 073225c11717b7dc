"""Problem families; importing this package registers them (the generic convex family last)."""
from . import gdro  # noqa: F401

# DP post-processing (issue 3)

# AUC fairness (issue 4)
from . import auc  # noqa: F401,E402

# partial fairness (issue 5)
from . import partial  # noqa: F401,E402

# min-max / strategic DRO (issue 6)
from . import strategic_dro  # noqa: F401,E402

from . import convex  # noqa: F401,E402  (fallback: keep last)
