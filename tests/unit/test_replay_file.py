"""``acp-model replay FILE``: the run's setup, as the file says it was."""

from __future__ import annotations

from acp_model.cli.fuzz import replayed_profile
from acp_model.fuzzing.config import FuzzConfig
from acp_model.profiles import get
from acp_model.spec.readings import DEFAULT


def test_acp_model_replay_sets_a_profiled_agent_up_for_the_protocol_its_file_was_judged_by(
        ) -> None:
    """A v1 row's replay file replayed by ``acp-model replay``: the profile's v1 session
    configuration (codex-acp: session/set_mode), not its v2 one (session/set_config_option,
    which a v1 session's held replay wrote where the recording had nothing: it left its
    schedule at once, and reproduced 2/8 where the matrix's replays had 3/6)."""
    codex = get("codex-acp")
    v1 = replayed_profile(FuzzConfig(["true"], readings=DEFAULT.parse(["SPEC=v1"])), codex)
    v2 = replayed_profile(FuzzConfig(["true"], readings=DEFAULT.parse(["SPEC=sdk-2.4.0"])),
                          codex)
    assert (v1.protocol, [m for m, _ in v1.session_config]) == (1, ["session/set_mode"])
    assert (v2.protocol, [m for m, _ in v2.session_config]) == (
        2, ["session/set_config_option"])
