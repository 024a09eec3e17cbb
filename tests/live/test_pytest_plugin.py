"""The pytest plugin, driven through pytester in fresh pytest processes.

Each run is a real ``pytest --acp-agent ...`` in a temporary directory: the plugin is loaded
from its ``pytest11`` entry point (``-p acp_model`` as well, so the tests also pass where
plugin autoloading is disabled).
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from acp_model.spec.readings import DEFAULT
from acp_model.spec.revisions import NAMES
from acp_model.spec.rules import group_of, rule_groups

pytestmark = pytest.mark.slow  # runs pytest on a live agent, in subprocesses

pytest_plugins = ["pytester"]

AGENT = shlex.join([sys.executable, "-m", "acp_model.agents.reference", "--timing", "fast"])
# The plugin collects the groups of every revision under the default --acp-spec auto.
GROUPS = list(dict.fromkeys(g for name in NAMES
                            for g in rule_groups(DEFAULT.parse([f"SPEC={name}"]))))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "acp_model", "-p", "no:cacheprovider", *args,
                                         timeout=300)


# Tests a user writes with the plugin's fixtures: a scripted turn, and a subclassed state
# machine with a rule of its own.
HAND_WRITTEN = textwrap.dedent("""
        from hypothesis import settings
        from hypothesis.stateful import initialize, rule

        from acp_model.pytest_plugin.api import run_lifecycle

        def test_one_turn(acp_client, acp_monitor):
            acp_client.perform({"op": "new_session"})
            acp_client.perform({"op": "prompt", "s": 0,
                                "blocks": [{"type": "text", "text": "fix tests"}]})
            acp_client.perform({"op": "wait", "s": 0, "mode": "settled"})
            acp_client.drain([0])
            assert acp_client.state(0) == "idle"
            assert acp_monitor.failures == []
            assert acp_monitor.count > 6

        def test_extra_rule(acp_state_machine, acp_settings):
            class PromptCancelPrompt(acp_state_machine):
                @initialize()
                def cancel_during_a_permission(self):
                    # The cancel is provably read (a sync answered) before the permission
                    # answer that lets the agent end the work: decisive on every timing.
                    if not self.ex.n_sessions:
                        self.ex.act({"op": "new_session"})
                    self.ex.act({"op": "prompt", "s": 0,
                                 "blocks": [{"type": "text", "text": "edit"}]})
                    self.ex.act({"op": "wait", "s": 0, "mode": "settled"})
                    self.ex.act({"op": "cancel", "s": 0, "sync": True})

                @rule()
                def prompt_cancel_prompt(self):
                    go = [{"type": "text", "text": "go"}]
                    self.ex.act({"op": "prompt", "s": 0, "blocks": go})
                    self.ex.act({"op": "cancel", "s": 0, "sync": True})
                    self.ex.act({"op": "prompt", "s": 0, "blocks": go})

            run_lifecycle(PromptCancelPrompt, settings(acp_settings, max_examples=8))
            assert PromptCancelPrompt.acp_recorder.examples >= 8
""")


def test_reference_agent_passes_every_group(pytester: pytest.Pytester) -> None:
    """Every group, and the hand-written tests next to them (one pytest run: the fixtures
    share the session's agent command and profile)."""
    pytester.makepyfile(test_mine=HAND_WRITTEN)
    result = run(pytester, "--acp-agent", AGENT, "--acp-profile", "quick", "--acp-seed", "1",
                 "-v")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    # the agent speaks v2: the group only v1 has is skipped (no rule of it in the revision)
    judged = [g for g in GROUPS if g != "V1"]
    result.assert_outcomes(passed=len(judged) + 2, skipped=1)
    result.stdout.fnmatch_lines([f"acp-model::test_acp[[]{g}[]] PASSED*" for g in judged],
                                consecutive=False)
    result.stdout.fnmatch_lines(["test_mine.py::test_one_turn PASSED*",
                                 "test_mine.py::test_extra_rule PASSED*"], consecutive=False)
    result.stdout.fnmatch_lines(["*acp-model*", "*profile: quick*seed: 1*",
                                 "*failures: none; warnings: 0*"])
    assert "AcpWarning" not in result.stdout.str()


@pytest.mark.parametrize(("mutant", "group", "rule"), [
    ("cancel_as_end_turn", "CANCEL", "CANCEL-07"),
    ("unknown_stop_reason", "STOP", "STOP-03"),
])
def test_mutant_fails_its_rule_group(pytester: pytest.Pytester, mutant: str, group: str,
                                     rule: str) -> None:
    out = pytester.path / "out"
    result = run(pytester, "--acp-agent", f"{AGENT} --mutant {mutant}", "--acp-profile",
                 "quick", "--acp-seed", "1", "--acp-deadline", "1.5", "--acp-out", str(out))
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    result.stdout.fnmatch_lines([f"FAILED acp-model::test_acp[[]{group}[]]*"])
    # The failure reads like a conformance report: rule, what happened, program, rate.
    result.stdout.fnmatch_lines([
        f"{group}: * rule(s) failed against *--mutant {mutant}*",
        f"{rule} (MUST, binds the agent): *",
        "  what happened: *",
        # 'minimal' only when minimizing reached its fixpoint, else '(not proven minimal)'
        "  *counterexample*, * client action(s), reproduced */* *in fresh agent*",
        "    1. *",
    ])
    assert "Traceback" not in text
    outcomes = result.parseoutcomes()
    report = json.loads((out / "report.json").read_text())
    # Exactly the groups of the rules the run failed fail (a mutant may break a second rule on
    # the way); the others pass, or are skipped when the run, ending early, never exercised
    # them.
    failed_groups = {group_of(v["rule"]) for v in report["violations"] if v["level"] == "fail"}
    assert group in failed_groups
    assert outcomes.get("failed", 0) == len(failed_groups), (outcomes, failed_groups)
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) + outcomes["failed"] == \
        len(GROUPS), outcomes
    assert report["verdict"] == "fail" and report["profile"] == "quick"
    assert rule in {ce["rule"] for ce in report["counterexamples"]}
    assert (out / rule / "replay.json").is_file()


def test_wrong_protocol_version_fails_init_and_skips_the_rest(pytester: pytest.Pytester
                                                              ) -> None:
    # Not a usage error: the agent started and answered, but broke INIT-04. Under --acp-spec
    # seed the client offers only 2 (under auto, an agent answering 1 is judged as v1).
    result = run(pytester, "--acp-agent", f"{AGENT} --mutant init_wrong_version",
                 "--acp-profile", "quick", "--acp-spec", "seed", "-rfs")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.assert_outcomes(failed=1, skipped=len(rule_groups(DEFAULT)) - 1)
    result.stdout.fnmatch_lines(["FAILED acp-model::test_acp[[]INIT[]]*"])
    result.stdout.fnmatch_lines([
        "SKIPPED * acp-model*: the agent could not be fuzzed: the agent negotiated protocol "
        "version 1, not 2"])
    assert "INIT-04 (MUST, binds the agent)" in result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_acp_spec_v1_drives_and_judges_the_agent_in_v1(pytester: pytest.Pytester) -> None:
    """Under --acp-spec v1 the client offers v1 (the reference agent then speaks it) and the
    v1 rules judge: a cancelled turn answered end_turn fails the CANCEL group."""
    result = run(pytester, "--acp-agent", f"{AGENT} --mutant cancel_as_end_turn",
                 "--acp-profile", "quick", "--acp-seed", "1", "--acp-spec", "v1", "-rf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*failures: CANCEL-07*"])
    result.stdout.fnmatch_lines(["FAILED acp-model::test_acp[[]CANCEL[]]*"])
    failed = [line for line in result.stdout.lines if line.startswith("FAILED")]
    assert len(failed) == 1, failed  # nothing else: the v1 wire is read as v1


def test_one_group_can_be_selected_with_k(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """-k keeps one group: the run still finds the deselected CANCEL group's failure and
    reports it, but spends no minimizing or replays on it, which no selected test reports."""
    out = tmp_path / "out"
    result = run(pytester, "--acp-agent", f"{AGENT} --mutant cancel_as_end_turn",
                 "--acp-profile", "quick", "--acp-seed", "1", "-k", "test_acp and STOP",
                 "--acp-out", str(out))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1, deselected=len(GROUPS) - 1)
    report = json.loads((out / "report.json").read_text())
    found = {c["rule"]: c for c in report["counterexamples"]}
    assert "CANCEL-07" in found, report["counterexamples"]
    assert found["CANCEL-07"]["replays"] == 0, found["CANCEL-07"]
    assert any(n.startswith("not minimized or replayed, as not asked for: ")
               and "CANCEL-07" in n for n in report["notes"]), report["notes"]


@pytest.mark.parametrize(("agent", "needle"), [
    ("acp-model-no-such-agent --stdio", "agent command 'acp-model-no-such-agent' not found"),
    ("{tmp}/agent.sh", "is not executable"),
    ("'unbalanced", "No closing quotation"),
], ids=["not-found", "not-executable", "bad-quoting"])
def test_a_command_that_cannot_start_is_a_usage_error(tmp_path: Path, agent: str,
                                                       needle: str) -> None:
    """What ``--acp-agent`` is checked for before anything starts (what pytest then does with
    the usage error, the test below shows once)."""
    from acp_model.pytest_plugin.run import agent_argv

    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\nexit 0\n")  # no execute bit
    with pytest.raises(pytest.UsageError) as caught:
        agent_argv(agent.format(tmp=tmp_path))
    assert str(caught.value).startswith("--acp-agent") and needle in str(caught.value)


def test_an_agent_that_exits_at_start_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """The agent starts and exits before it answers initialize: pytest stops with the usage
    error and the agent's own explanation, and runs nothing."""
    agent = (f"{shlex.quote(sys.executable)} -c \"import sys; sys.stderr.write('no api key\\\\n'); "
             "sys.exit(3)\"")
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    result = run(pytester, "--acp-agent", agent)
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + err
    assert "ERROR: --acp-agent" in err, err
    assert "exited before answering initialize (exit code 3)" in err, err
    assert "no api key" in err  # the agent's own explanation is shown
    assert "Traceback" not in err + result.stdout.str()
    assert "passed" not in result.stdout.str()  # nothing ran


def test_a_bad_reading_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--acp-agent", AGENT, "--acp-reading", "A-01=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--acp-reading" in result.stderr.str() and "sometimes" in result.stderr.str()


def test_no_agent_option_changes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="""
        def test_plain():
            assert 1 + 1 == 2

        def test_needs_agent(acp_client):
            raise AssertionError("must not run without --acp-agent")
    """)
    result = run(pytester, "-rs")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs --acp-agent*"])
    assert "test_acp" not in result.stdout.str()  # no group tests were added


def test_a_subclassed_state_machine_finds_its_rules_failure(pytester: pytest.Pytester
                                                            ) -> None:
    """The hand-written tests of HAND_WRITTEN on a mutant: the subclassed machine's rule
    makes the failure it was written for (on the reference agent they pass:
    test_reference_agent_passes_every_group)."""
    pytester.makepyfile(test_mine=HAND_WRITTEN)
    # The mutant asks for a permission first in every turn and waits for the cancelled answer
    # (perm_cancel=wait), which the client sends after the sync that proves the cancel read.
    bad = run(pytester, "--acp-agent",
              f"{AGENT} --mutant cancel_as_end_turn --design perm_cancel=wait",
              "--acp-profile", "ci", "-k", "test_extra_rule")
    assert bad.ret == pytest.ExitCode.TESTS_FAILED, bad.stdout.str()
    # -k picks one hand-written test: the groups and the other one are deselected
    bad.assert_outcomes(failed=1, deselected=len(GROUPS) + 1)
    bad.stdout.fnmatch_lines(["*rule(s) failed against*", "CANCEL-07 (MUST*"])
    assert "FlakyFailure" not in bad.stdout.str()


V1_ONLY = shlex.join([sys.executable, str(Path(__file__).parents[1] / "hostile" / "v1_only.py"),
                      "--timing", "fast"])


def test_hand_written_tests_resolve_acp_spec_auto(pytester: pytest.Pytester) -> None:
    """``acp_client`` and the machine of ``acp_state_machine`` (``lifecycle_machine``) are
    judged under the revision the probe decides, as ``test_acp[GROUP]`` and the CLI are: a
    v1-only agent is spoken to and judged in v1, not refused under the seed's v2."""
    pytester.makepyfile(test_mine=textwrap.dedent("""
        from hypothesis import settings
        from acp_model.pytest_plugin.api import run_lifecycle

        def test_client(acp_client):
            assert acp_client.monitor.readings.revision == "v1"

        def test_machine(acp_state_machine):
            assert acp_state_machine.acp_config.readings.revision == "v1"
            run_lifecycle(acp_state_machine, settings(max_examples=3,
                          stateful_step_count=5, deadline=None), replay=False)
    """))
    result = run(pytester, "--acp-agent", V1_ONLY, "--acp-profile", "quick", "--acp-seed", "1",
                 "test_mine.py", "-rf")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["test_mine.py .. *"])  # both hand-written tests passed
