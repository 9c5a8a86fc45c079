"""`python -m bodyblocks ...`: the command line (bodyblocks.cli)."""

import sys

from bodyblocks.cli import console

sys.exit(console())
