"""What `--keep` says of a kernel at a gateway, read from the environment the gateway gave it."""

from unified_exec_kernel.jupyter.remote import NAME_MAX_CHARS, behind_gateway, kept_sessions_here


def test_a_pod_that_a_restart_replaces_says_kept_sessions_end_with_it():
    line = kept_sessions_here({"KERNEL_GATEWAY": "1", "KERNEL_POD_NAME": "alice-8f2c"})
    assert line == (
        "[--keep: Enterprise Gateway replaces this kernel's pod 'alice-8f2c' on restart:"
        " kept sessions end with it]"
    )


def test_a_plain_kernel_gateway_says_what_outlives_a_restart_and_what_ends_them():
    line = kept_sessions_here({"KERNEL_GATEWAY": "1", "KERNEL_POD_NAME": ""})
    assert line is not None and "outlive a restart" in line and "not a shutdown" in line and "\n" not in line


def test_a_kernel_of_a_local_server_says_nothing():
    assert kept_sessions_here({}) is None
    assert kept_sessions_here({"KERNEL_GATEWAY": "0"}) is None


def test_the_line_stays_one_bounded_line_whatever_the_pod_is_called():
    line = kept_sessions_here({"KERNEL_POD_NAME": "p" * 5000 + "\nsecond"})
    assert "\n" not in line and len(line) < 200
    assert "p" * NAME_MAX_CHARS in line and "p" * (NAME_MAX_CHARS + 1) not in line


def test_a_gateway_is_told_by_either_variable_it_sets():
    assert behind_gateway({"KERNEL_GATEWAY": "1"})
    assert behind_gateway({"KERNEL_POD_NAME": "alice-8f2c"})
    assert not behind_gateway({}) and not behind_gateway({"KERNEL_GATEWAY": "0", "KERNEL_POD_NAME": " "})
