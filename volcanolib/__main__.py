"""``python -m volcanolib``: the same as the ``volcanolib`` command."""

import sys

from volcanolib.cli import main

sys.exit(main())
