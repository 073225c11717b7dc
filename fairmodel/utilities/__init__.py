"""The base layer's utilities: value and option checks (`validate.py`), progress bars and the Ctrl-C request
(`progress.py`), the BLAS/OpenMP thread choice (`threads.py`), short reprs and tables for notebooks and LaTeX text
(`display.py`)."""
