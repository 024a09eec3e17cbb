"""``python -m acp_model.agents.reference``."""

import sys

from acp_model.agents.reference.main import main

sys.exit(main())
