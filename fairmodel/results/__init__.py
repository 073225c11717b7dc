"""Results: `Result` (JSON + NPZ, atomic saves, `load_result`) in `result.py`, the schema a loaded result is checked
against in `schema.py`, the judge's entry points and verdicts in `judge.py`, and figures in `plotting.py`."""
from .result import Result, load_result

__all__ = ["Result", "load_result"]
