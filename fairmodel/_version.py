"""The version of fairmodel (one place: the package, the command line and the build read it here)."""
__version__ = "0.1.0"
