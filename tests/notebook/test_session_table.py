"""The `%uexec_sessions` table: one short line per session, in text and in HTML."""

from unified_exec_kernel import SessionInfo
from unified_exec_kernel.notebook.session_table import SessionTable, age, command_label


def test_command_label_is_one_short_line():
    assert command_label(["bash", "-c", "echo a\necho b\n"]) == "bash -c 'echo a↵echo b'"
    assert len(command_label(["x" * 100])) == 60


def test_table_in_text_and_html_escapes_and_aligns():
    table = SessionTable([SessionInfo(0, ["bash", "-c", "echo <b>"], pid=42, alive=False, exit_code=3, name="web")])
    text = repr(table).splitlines()
    assert text[0].split() == ["id", "name", "command", "pid", "state", "exit", "code", "age"]
    assert text[1].startswith("0   web   bash -c 'echo <b>'  42   exited  3")
    assert "&lt;b&gt;" in table._repr_html_()
    assert repr(SessionTable([])) == "no uexec sessions"


def test_age_reads_in_the_unit_a_person_would_use():
    assert [age(5), age(125), age(7300)] == ["5 s", "2 min", "2.0 h"]


def test_a_kept_session_says_so_with_the_restarts_it_has_lived_through():
    rows = SessionTable([SessionInfo(0, ["bash"], kept=True), SessionInfo(1, ["bash"], kept=True, restarts=1),
                         SessionInfo(2, ["bash"], alive=False, exit_code=0, kept=True, restarts=3), SessionInfo(3, ["bash"])]).rows
    assert [row[4] for row in rows] == ["running (kept)", "running (kept, 1 restart)", "exited (kept, 3 restarts)", "running"]
