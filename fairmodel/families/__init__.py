"""Problem families; importing this package registers them in order (the generic convex family last)."""
from . import gdro, dp, auc, partial, strategic_dro  # noqa: F401  (the specific families)
from . import convex  # noqa: F401,E402  (the fallback: keep last)
