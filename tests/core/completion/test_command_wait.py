"""When a typed command is done: the rule over marker events, alone and with real shells."""

from __future__ import annotations

import pytest

from unified_exec_kernel.core.completion.command_wait import CommandWait
from unified_exec_kernel.core.completion.semantic_prompt import PromptEvent

from ..shells import Shell


def ev(kind: str, status: int | None = None, ours: bool = True, typeahead: bool = False) -> PromptEvent:
    return PromptEvent(kind, 0, ours, status, typeahead)


def test_a_command_ends_at_the_prompt_with_its_status():
    wait = CommandWait()
    assert not wait.feed([ev("B"), ev("C")])
    assert wait.feed([ev("D", 3), ev("A"), ev("B")])
    assert (wait.exit_code, wait.commands, wait.prompt) == (3, 1, ev("A"))


def test_a_line_that_ran_nothing_ends_without_a_status():
    wait = CommandWait()
    assert wait.feed([ev("A")])
    assert wait.exit_code is None and wait.commands == 0


def test_a_typeahead_prompt_is_passed_over_and_the_last_status_counts():
    wait = CommandWait()
    assert not wait.feed([ev("D", 0), ev("A", typeahead=True), ev("C")])
    assert wait.feed([ev("D", 1), ev("A")])
    assert (wait.exit_code, wait.commands) == (1, 2)


def test_foreign_markers_never_end_a_wait_nor_give_a_status():
    wait = CommandWait()
    assert not wait.feed([ev("D", 0, ours=False), ev("A", ours=False)])
    assert wait.feed([ev("A")])
    assert wait.exit_code is None


def test_nothing_after_the_prompt_changes_the_answer():
    wait = CommandWait()
    wait.feed([ev("D", 2), ev("A"), ev("C"), ev("D", 0), ev("A")])
    assert (wait.exit_code, wait.commands) == (2, 1)


@pytest.fixture
def shell(tmp_path, request):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("PS1='$ '\n")
    (home / ".zshrc").write_text("PS1='$ '\n")
    sh = Shell([request.param], home)
    yield sh
    sh.close()


@pytest.mark.parametrize("shell", ["bash", "zsh"], indirect=True)
def test_starting_a_shell_ends_at_its_first_prompt(shell):
    wait = CommandWait()
    shell.wait_for(lambda: wait.feed(shell.events), "the first prompt")
    assert wait.exit_code is None and wait.commands == 0


@pytest.mark.parametrize("shell", ["bash", "zsh"], indirect=True)
def test_two_lines_in_one_write_end_after_both(shell, tmp_path):
    shell.started()
    result = shell.run("true\n(exit 7)")
    assert result.status == 7
    assert [e.kind for e in result.events if e.ours and e.kind in "CDA"] == ["C", "D", "A", "C", "D", "A"]
    assert [e.typeahead for e in result.events if e.ours and e.kind == "A"] == [True, False]
