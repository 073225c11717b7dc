"""``python -m fairmodel`` runs the command line (the same as the ``fairmodel`` console script)."""
import sys

from .frontends.cli import main

sys.exit(main())
