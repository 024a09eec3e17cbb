"""Dies before saying anything."""

import sys

sys.stderr.write("fatal: cannot start\n")
sys.exit(3)
