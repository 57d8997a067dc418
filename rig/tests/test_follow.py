"""rig.evidence.follow: the S9 /dev/kmsg follower's log and its accounting."""
import pytest

from rig.evidence.follow import FollowLogError, missed_problems, parse_follow, sequence_problems


def log(*lines):
    return parse_follow(("\n".join(lines) + "\n").encode())


def flood(seq0, tag0, n):
    return [f"r {seq0 + k} 0 task {tag0 + k}" for k in range(n)]


def test_a_reader_that_kept_up():
    f = log("r 0 - - -", *flood(1, 0, 5), "end 6 0")
    assert f.ended and f.epipes == 0 and len(f.records) == 6
    assert f.records[0].cpu is None and f.records[1].tag_seq == 0
    assert sequence_problems(f) == [] and missed_problems(f, 0, "task", 5) == []


def test_an_overrun_reported_by_epipe_accounts_for_the_records_it_took():
    f = log(*flood(10, 0, 3), "EPIPE", *flood(20, 10, 5), "end 8 1")
    assert f.records[3].after_epipe and not f.records[4].after_epipe
    assert sequence_problems(f) == []
    assert missed_problems(f, 0, "task", 15) == []      # 3..9 fell into seq 13..19


def test_a_silent_gap_is_named():
    f = log(*flood(10, 0, 3), *flood(20, 10, 2), "end 5 0")
    assert sequence_problems(f) == ["the reader went from seq 12 to seq 20 without an EPIPE: "
                                    "7 records silently skipped"]
    assert missed_problems(f, 0, "task", 12) == [
        "record cpu0#3..#9 (7) missing from the /dev/kmsg reader with no EPIPE around it"]


def test_more_records_missing_than_the_gap_spans():
    # Tags 3..9 are gone but the sequence numbers only skip 2: records were lost
    # before they reached the ringbuffer, or the tags lie.
    f = log(*flood(10, 0, 3), "EPIPE", "r 15 0 task 10", "end 4 1")
    assert missed_problems(f, 0, "task", 11) == [
        "record cpu0#3..#9: 7 records missing, the EPIPE gaps around them span only 2 "
        "sequence numbers"]


def test_records_missing_at_the_end_and_a_repeated_read():
    f = log(*flood(10, 0, 3), "r 12 0 task 2")
    assert not f.ended
    assert sequence_problems(f) == ["the reader got seq 12 after seq 12: read twice or backwards"]
    assert missed_problems(f, 0, "task", 5) == [
        "record cpu0#3..#4 (2) missing from the /dev/kmsg reader with no EPIPE around it"]


def test_an_epipe_that_skipped_nothing():
    f = log("r 1 - - -", "EPIPE", "r 2 - - -")
    assert sequence_problems(f) == ["EPIPE between seq 1 and seq 2, but nothing was skipped"]


@pytest.mark.parametrize("bad", ["r 1 0 task", "x", "r one - - -", "end 3 0"])
def test_malformed_lines_are_named(bad):
    with pytest.raises(FollowLogError, match="follow log line 1"):
        log(bad)
