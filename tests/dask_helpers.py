"""Shared by the Dask tests: in-memory arrays as a Dask-backed Dataset with row chunks of a given size."""
import fairmodel as fm


def as_dask_dataset(X, y, g, chunk: int):
    import dask.array as da         # the Dask tests skip when Dask is missing (pytest.importorskip first)
    return fm.Dataset.from_dask(da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk),
                                da.from_array(g, chunks=chunk))
