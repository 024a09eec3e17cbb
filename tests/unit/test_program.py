"""A program's session numbering, read from one place: the labels, the example's mapping,
the shrinker's one-session slice and the renumbering for a fresh process agree."""

from __future__ import annotations

from acp_model.fuzzing.actions import Cancel, NewSession, Prompt, Sync
from acp_model.fuzzing.program import Program, session_at

TEXT = [{"type": "text", "text": "go"}]


def test_an_index_wraps_over_the_sessions_opened_so_far() -> None:
    assert session_at(0, 0) is None and session_at(5, 0) is None  # no session yet
    assert [session_at(s, 3) for s in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert session_at(4, 1) == 0


def test_labels_follow_the_sessions_opened_at_each_step() -> None:
    """Index 1 names s1 while one session exists and s2 once two do."""
    program = Program.of([NewSession(), Prompt(1, TEXT), NewSession(), Prompt(1, TEXT),
                          {"op": "cancel", "s": 2}, Sync()])
    assert program.labels() == [" s1", " s1", " s2", " s2", " s1", ""]
    assert program.sessions == 2 and len(program) == 6
    assert program.describe()[3] == "prompt s2: go"


def test_a_session_slice_keeps_that_sessions_actions_and_the_syncs() -> None:
    """Each action lands in the slice of the session the labels give it, renumbered as the
    only session; a session the program never creates has no slice."""
    actions = [NewSession(), Prompt(0, TEXT), NewSession(), Prompt(1, TEXT), Sync(),
               Cancel(3), Prompt(2, TEXT)]
    program = Program.of(actions)
    labels = program.labels()
    second = program.session_slice(1)
    assert second == [NewSession(), Prompt(0, TEXT), Sync(), Cancel(0)]
    assert [a for a, label in zip(actions, labels, strict=True) if label == " s2"] == \
        [actions[2], actions[3], actions[5]]
    assert program.session_slice(0) == [NewSession(), Prompt(0, TEXT), Sync(),
                                        Prompt(0, TEXT)]
    assert program.session_slice(2) is None


def test_a_slice_is_itself_a_program_of_one_session() -> None:
    sliced = Program.of([NewSession(), NewSession(), Cancel(5), Prompt(1, TEXT)]).session_slice(1)
    assert sliced is not None
    assert Program.of(sliced).labels() == [" s1", " s1", " s1"]


def test_a_fresh_process_numbers_from_zero_and_keeps_unknown_indices() -> None:
    """Sessions made before the actions start (index 7) are left as they are: a fresh
    process wraps them over its own sessions like any program index."""
    history = Program.of([NewSession(created=4), Cancel(7), Prompt(4, TEXT)])
    assert history.standalone() == [NewSession(), Cancel(7), Prompt(0, TEXT)]
    assert Program.of(history.standalone()).labels() == [" s1", " s1", " s1"]


def test_a_failing_session_s_own_history_comes_out_of_a_shared_process_s() -> None:
    """Two examples on one process: the second takes over the session the first made
    (index 0) and opens another (index 1). The failing session's own actions over both
    examples, for a fresh process, are its making and what each example did on it."""
    first = [NewSession(created=0), Prompt(0, TEXT), Sync()]
    second = [NewSession(created=2, reuses=0), NewSession(created=1), Prompt(1, TEXT),
              Cancel(0), Prompt(2, TEXT)]
    actions, fresh = Program.of([*first, *second]).renumbered()
    assert fresh == {0: 0, 2: 0, 1: 1}
    sliced = Program.of(actions).session_slice(fresh[0])
    assert sliced == [NewSession(), Prompt(0, TEXT), Sync(), Cancel(0), Prompt(0, TEXT)]
