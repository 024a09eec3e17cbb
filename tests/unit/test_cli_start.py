"""What the ``acp-model`` executable sets up before it runs a command."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

DRIVER = textwrap.dedent("""
    import atexit, os, sys
    import acp_model.cli as cli

    def after():
        import hypothesis  # what a fuzz run imports, after the command's start-up
        print(os.environ.get("HYPOTHESIS_NO_PLUGINS"), "hypofuzz" in sys.modules)

    atexit.register(after)
    sys.argv = ["acp-model", "--version"]
    cli.run()
""")


def _start(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_NO_PLUGINS"}
    if env_value is not None:
        env["HYPOTHESIS_NO_PLUGINS"] = env_value
    out = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()[-1]


def test_the_command_skips_hypothesis_plugins_unless_the_user_set_the_variable() -> None:
    """Hypothesis loads every installed plugin at import (a quarter of a second per start);
    the command turns that off, and a user's own setting (even empty) is kept."""
    assert _start(None) == "1 False"
    assert _start("") == " True"  # the user asked for the plugins (hypofuzz is a dev extra)
