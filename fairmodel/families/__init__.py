"""Problem families; importing this package registers them (the generic convex family last)."""
from . import gdro  # noqa: F401
from . import convex  # noqa: F401  (fallback: keep last)
