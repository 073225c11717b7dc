"""``python -m fairmodel_cli``: the ``fairmodel`` command (Ctrl-C during the imports exits 130 too)."""
import sys

from fairmodel_cli import main

sys.exit(main())
