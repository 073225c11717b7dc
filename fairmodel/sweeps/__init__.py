"""Sweeps: `Frontier` and `fm.sweep` over a parameter (`frontier.py`), and the eps sweep of DP post-processing with
its warm starts and parallel exact solves (`dp.py`, `fm.dp_sweep`)."""
from .dp import dp_sweep
from .frontier import Frontier, sweep

__all__ = ["Frontier", "dp_sweep", "sweep"]
