"""`acp-model agents`: the profile list a user reads and the install command's usage errors
(installing itself needs npm and runs in `make agents` and the real-agent tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from acp_model.profiles import PROFILES


def run(tmp_path: Path, *args: str, columns: int = 80) -> tuple[int, str, str]:
    env = {**os.environ, "ACP_MODEL_AGENTS": str(tmp_path / "cache"), "COLUMNS": str(columns)}
    proc = subprocess.run([sys.executable, "-m", "acp_model.cli", "agents", *args],
                          capture_output=True, text=True, timeout=60, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def test_the_list_names_every_profile_uncut_in_an_80_column_terminal(tmp_path: Path) -> None:
    code, out, err = run(tmp_path)
    assert code == 0, err
    table = out.split("cannot run offline behind the scripted model:")[0]  # reasons follow
    rows = {line.split()[0]: line for line in table.splitlines() if line.split()
            and line.split()[0] in PROFILES}
    assert set(rows) == set(PROFILES), out  # each name whole: it is what the user types next
    for name, line in rows.items():  # an empty cache: nothing installed
        status = "unavailable" if PROFILES[name].unavailable else "not installed"
        assert line.rstrip().endswith(status), line
        assert PROFILES[name].model_api in line, line
    assert str(tmp_path / "cache") in out and "acp-model fuzz --agent NAME" in out
    # within 80 columns, but for a single word too long to break (the cache's path)
    assert all(len(line) <= 80 or " " not in line.strip() for line in out.splitlines()), out


def test_install_without_a_name_or_with_an_unknown_one_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "install")
    assert code == 2 and "name the agents to install" in err and "Traceback" not in err
    code, _, err = run(tmp_path, "install", "no-such-agent")
    assert code == 2 and "Traceback" not in err, err
    assert "no agent profile 'no-such-agent'" in err
    assert all(name in err for name in PROFILES), err  # the message lists what is known
    assert not (tmp_path / "cache").exists()  # nothing was installed or created


def test_an_agent_that_cannot_run_offline_is_listed_with_its_reason_and_refused(
        tmp_path: Path) -> None:
    """Its row says unavailable and the list gives the reason; installing it or fuzzing it is
    a usage error naming that reason, and nothing is installed."""
    unavailable = sorted(name for name, p in PROFILES.items() if p.unavailable)
    assert unavailable, "no profile is marked unavailable"
    code, out, err = run(tmp_path, columns=200)
    assert code == 0, err
    flat = " ".join(out.split())
    for name in unavailable:  # the reason in full, after its name
        assert f"{name}: {' '.join(PROFILES[name].unavailable.split())}" in flat, out
    name = unavailable[0]
    code, _, err = run(tmp_path, "install", name)
    assert code == 2 and "Traceback" not in err, err
    assert "cannot run offline" in err and PROFILES[name].unavailable.split()[0] in err, err
    assert not (tmp_path / "cache" / f"{name}-{PROFILES[name].version}").exists()
    env = {**os.environ, "ACP_MODEL_AGENTS": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "acp_model.cli", "fuzz", "--agent", name,
                           "--time-budget", "1"], capture_output=True, text=True, timeout=60,
                          env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot run offline" in proc.stderr, proc.stderr


def test_force_may_come_before_or_after_the_names() -> None:
    """`agents install --force NAME` was refused (argparse gave every positional to the first
    run of words, leaving NAME over): options may now stand anywhere among the names."""
    from acp_model.cli.main import build_parser

    for words in (["install", "--force", "a", "b"], ["install", "a", "b", "--force"],
                  ["install", "a", "--force", "b"], ["--force", "install", "a", "b"]):
        args = build_parser().parse_args(["agents", *words])
        assert (args.action, args.names, args.force) == ("install", ["a", "b"], True), words
    args = build_parser().parse_args(["agents", "install", "--version", "0.31.4", "a"])
    assert (args.names, args.version, args.force) == (["a"], "0.31.4", False)
    assert build_parser().parse_args(["agents"]).action == "list"


def test_install_force_before_the_name_reaches_the_install(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "install", "--force", "no-such-agent")
    assert code == 2 and "no agent profile 'no-such-agent'" in err, err  # not a parse error
