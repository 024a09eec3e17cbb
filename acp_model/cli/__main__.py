"""``python -m acp_model.cli`` is the ``acp-model`` command."""

import sys

from acp_model.cli.main import main

sys.exit(main())
