"""The published-bugs data (benchmarks/known_bugs.toml) and installing a profile at another
release: the data parses, names catalogued rules and profiled agents, and an old release's
install directory, entry and replay file follow its version (the benchmark itself runs real
agents and is not part of the suite)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from acp_model.profiles import PROFILES, ProfileError, get
from acp_model.profiles.versions import at_version, package_bin, split_spec
from acp_model.spec.rules import RULES
from benchmarks.bench_known_bugs import DATA, DataError, KnownBug, load, verdict

BUGS = load()


def test_the_data_file_has_the_entries_the_benchmark_promises() -> None:
    assert len(BUGS) >= 8
    for bug in BUGS:
        repo, number = bug.id.split("#")
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", repo) and number.isdigit(), bug.id
        assert re.fullmatch(rf"https://github.com/{re.escape(repo)}/(issues|pull)/{number}",
                            bug.report), bug.id
        assert bug.verification.strip() and bug.verification != "pending", bug.id


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_every_entry_names_a_catalogued_rule_of_its_protocol(bug: KnownBug) -> None:
    assert bug.rule in RULES, f"{bug.id}: {bug.rule} is not in the catalogue"
    revision = "v1" if bug.protocol == "v1" else "seed"
    assert revision in RULES[bug.rule].revisions, f"{bug.id}: {bug.rule} is not a {revision} rule"


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_every_agent_is_profiled_or_says_why_not(bug: KnownBug) -> None:
    if bug.unavailable:
        assert not bug.verified or bug.agent in PROFILES, bug.id
        return
    assert bug.agent in PROFILES, f"{bug.id}: no profile {bug.agent!r} and no reason given"
    profile = at_version(get(bug.agent), bug.pinned)  # a well-formed release
    assert profile.version == bug.version


def test_a_malformed_entry_is_refused(tmp_path: Path) -> None:
    text = DATA.read_text(encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('protocol = "v1"', 'protocol = "v3"', 1), encoding="utf-8")
    with pytest.raises(DataError, match="v3"):
        load(bad)
    bad.write_text(text.replace("verified = ", "verifed = ", 1), encoding="utf-8")
    with pytest.raises(DataError, match="verifed"):
        load(bad)


def test_a_release_under_an_earlier_package_name_follows_it(tmp_path: Path) -> None:
    claude = get("claude-agent-acp")
    old = at_version(claude, "@zed-industries/claude-agent-acp@0.22.2", tmp_path)
    assert (old.package, old.version) == ("@zed-industries/claude-agent-acp", "0.22.2")
    assert old.entry == "node_modules/@zed-industries/claude-agent-acp/dist/index.js"
    assert old.install_dir(tmp_path) == tmp_path / "claude-agent-acp-0.22.2"
    assert (old.command, old.env) == (claude.command, claude.env)
    same = at_version(claude, "0.31.4", tmp_path)
    assert (same.package, same.entry) == (claude.package, claude.entry)
    assert split_spec("@a/b@1.2.3") == ("@a/b", "1.2.3") and split_spec("1.2") == (None, "1.2")
    with pytest.raises(ProfileError, match="not a version"):
        at_version(claude, "../1.0")


def test_a_release_laid_out_differently_starts_from_its_own_bin(tmp_path: Path) -> None:
    codex = get("codex-acp")
    where = tmp_path / "codex-acp-0.9.5" / "node_modules" / "@zed-industries" / "codex-acp"
    (where / "bin").mkdir(parents=True)
    (where / "bin" / "codex-acp.js").write_text("", encoding="utf-8")
    (where / "package.json").write_text(json.dumps({"bin": {"codex-acp": "bin/codex-acp.js"}}),
                                        encoding="utf-8")
    old = at_version(codex, "@zed-industries/codex-acp@0.9.5", tmp_path)
    assert old.entry == "node_modules/@zed-industries/codex-acp/bin/codex-acp.js"
    assert old.installed(tmp_path)
    assert package_bin(tmp_path / "nowhere", "x") is None


def test_fuzzing_a_release_that_is_not_installed_says_how_to_install_it(tmp_path: Path) -> None:
    env = {"ACP_MODEL_AGENTS": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "acp_model", "fuzz", "--agent",
                           "claude-agent-acp", "--agent-version", "0.31.4"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, done.stderr
    assert ("acp-model agents install claude-agent-acp --version 0.31.4"
            in done.stderr + done.stdout)
    done = subprocess.run([sys.executable, "-m", "acp_model", "fuzz", "--agent-version", "1.0",
                           "--", "true"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and "--agent NAME" in done.stderr + done.stdout


def test_a_verdict_reads_the_rule_from_a_report() -> None:
    report = {"counterexamples": [{"rule": "PROMPT-04", "first_seen_s": 11.7, "steps": 3,
                                   "reproduction": "3/3", "actions": [{"op": "new_session"}]}],
              "violations": [{"rule": "PROMPT-04"}, {"rule": "CANCEL-05"}],
              "rules": [{"id": "PROMPT-04", "exercised": 4}, {"id": "CANCEL-07", "exercised": 2},
                        {"id": "CANCEL-11", "exercised": 0}],
              "summary": {"seconds": 90.0, "examples": 30}}
    found = verdict(report, "PROMPT-04")
    assert (found["status"], found["first_failure_s"], found["steps"]) == ("fail", 11.7, 3)
    assert verdict(report, "CANCEL-05")["status"] == "warn"
    held = verdict(report, "CANCEL-07")
    assert held["status"] == "pass" and held["other_failures"] == ["PROMPT-04"]
    assert verdict(report, "CANCEL-11")["status"] == "not exercised"


def test_the_benchmarks_share_one_lock_that_excludes_another_holder(tmp_path: Path) -> None:
    """``benchmarks.results.locked`` is the one flock both real-agent benchmarks take: while it
    is held, another process cannot take the same lock; without a path it holds nothing."""
    import benchmarks.bench_budget as budget
    import benchmarks.bench_known_bugs as known
    from benchmarks import results

    assert not hasattr(budget, "locked") and not hasattr(known, "locked")
    lock = tmp_path / "heavy.lock"
    probe = [sys.executable, "-c", "import fcntl, sys; h = open(sys.argv[1], 'a'); "
             "fcntl.flock(h, fcntl.LOCK_EX | fcntl.LOCK_NB)", str(lock)]
    with results.locked(str(lock)):
        assert subprocess.run(probe, capture_output=True, check=False).returncode != 0
    assert subprocess.run(probe, capture_output=True, check=False).returncode == 0
    with results.locked(None):
        pass
