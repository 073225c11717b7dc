"""Data: `Dataset` and `Batch` (features, labels, groups, sample weights; full passes and minibatch samplers) in
`dataset.py`, `Groups` (encoded group labels) in `groups.py`, the Dask-backed `DaskDataset` in `dask_dataset.py` with
its chunk sampler (`dask_sampler.py`) and Parquet reading (`parquet.py`), and the bundled data sets (`datasets.py`,
`fm.datasets`)."""
from .dataset import Batch, Dataset
from .groups import Groups

__all__ = ["Batch", "Dataset", "Groups"]
