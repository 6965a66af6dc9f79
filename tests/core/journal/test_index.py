"""The index's records: binary search on fields that never decrease."""

from unified_exec_kernel.core.journal.index import LINES, OFFSET, RECORD, Marks, Records


def test_searches_find_the_record_holding_a_byte_or_a_line():
    records = Records(b"".join(RECORD.pack(offset, offset + 100, offset // 10, offset) for offset in range(0, 1000, 100)))
    assert len(records) == 10
    assert records.last_at_or_before(OFFSET, 250) == 2
    assert records.last_at_or_before(OFFSET, 200) == 2
    assert records.last_at_or_before(OFFSET, -1) == -1
    assert records.last_before(LINES, 20) == 1
    assert records[-1] == (900, 1000, 90, 900)


def test_marks_pair_a_command_with_its_end_and_keep_drops():
    marks = Marks()
    marks.add({"kind": "command", "text": "ls", "offset": 10, "t": 1_000_000})
    marks.add({"kind": "end", "offset": 20, "t": 2_000_000, "exit": 2})
    marks.add({"kind": "dropped", "offset": 30, "bytes": 5, "reason": "r"})
    (command,) = marks.commands
    assert (command.text, command.start, command.end, command.exit_code, command.time) == ("ls", 10, 20, 2, 1.0)
    assert marks.drops[0].describe() == "5 bytes of output from byte 30 were not kept: r"
