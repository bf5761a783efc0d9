"""``python -m drawbridge ...``: the command-line tools (drawbridge/cli)."""
import sys

from .cli import main

sys.exit(main())
