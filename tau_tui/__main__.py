"""``python -m tau_tui``: the same as the ``tau-tui`` command."""

import sys

from tau_tui.cli import main

sys.exit(main())
