"""``python -m acp_model`` is the ``acp-model`` command."""

import sys

from acp_model.cli import main

sys.exit(main())
