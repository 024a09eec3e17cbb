"""``acp-model agents tools``: an agent started as its profile says, one turn behind the
scripted model, and the tools its model request offered, recorded as a fixture document."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acp_model.fuzzing.tool_lists import FORMAT, RecordingFailed, choices, record, tools_of, write
from acp_model.profiles import Profile

ROOT = Path(__file__).resolve().parents[2]


def own_tools_profile(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Profile:
    """A profile of the test agent whose tools have names of its own, "installed" in a cache
    of the test's."""
    monkeypatch.setenv("ACP_MODEL_AGENTS", str(cache))
    folder = cache / "own-tools-1.0"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "hostile" / "own_tools_agent.py", folder / "agent.py")
    return Profile(name="own-tools", title="own tools", package="own-tools", version="1.0",
                   entry="agent.py", command=(sys.executable, "{entry}"),
                   model_api="openai-chat", protocols=(1,))


def test_the_tools_an_agent_offers_are_recorded(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    doc = record(own_tools_profile(tmp_path / "cache", monkeypatch), wait=30)
    assert doc["format"] == FORMAT and doc["agent"] == "own-tools" and doc["protocol"] == 1
    assert [t["name"] for t in doc["tools"]] == ["exec_cmd", "put_file", "peek"]
    assert doc["tools"][0]["schema"]["required"] == ["cmdline"]
    assert choices(tools_of(doc)) == {"shell": "exec_cmd", "edit": "put_file",
                                      "long": "exec_cmd"}
    path = write(doc, tmp_path / "fixtures")
    assert json.loads(path.read_text()) == doc


def test_an_agent_that_never_asks_its_model_gives_no_list(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    profile = own_tools_profile(tmp_path / "cache", monkeypatch)
    (profile.entry_path()).write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(RecordingFailed, match="AgentExited"):
        record(profile, wait=10)


def test_the_command_refuses_an_agent_it_cannot_run() -> None:
    done = subprocess.run([sys.executable, "-m", "acp_model", "agents", "tools", "qoder"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "cannot run offline" in done.stdout + done.stderr
    none = subprocess.run([sys.executable, "-m", "acp_model", "agents", "tools"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert none.returncode == 2 and "name the agents" in none.stdout + none.stderr
