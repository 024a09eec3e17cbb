"""An agent command given relative to the caller's directory still starts when the run moves
the agent into its own workspace (a scripted model's run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_model.fuzzing.backend import anchored


def test_relative_paths_are_made_absolute_against_the_callers_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agent.py").write_text("")
    monkeypatch.chdir(tmp_path)
    got = anchored([".venv/bin/python", "agent.py", "--mode", "x", "missing.py", "/abs/a.py"])
    assert got == [os.path.join(str(tmp_path), ".venv", "bin", "python"),
                   str(tmp_path / "agent.py"), "--mode", "x", "missing.py", "/abs/a.py"]


def test_a_command_on_the_path_and_options_are_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-v").write_text("")  # an option is never read as a file
    assert anchored(["python", "-m", "agent", "-v"]) == ["python", "-m", "agent", "-v"]
    assert anchored([]) == []
