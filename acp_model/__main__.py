"""``python -m acp_model`` is the ``acp-model`` command."""

import sys

from acp_model.cli.main import main

sys.exit(main())
