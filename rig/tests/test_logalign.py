"""Unit tests of the near-linear aligner behind rig diff."""
import difflib
import random

from rig.evidence.logalign import align, longest_increasing, unified


def covers(a, b, ops):
    """The opcodes walk both sequences whole, and 'equal' holds equal items."""
    ia = ja = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (ia, ja)
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        ia, ja = i2, j2
    return (ia, ja) == (len(a), len(b))


def matched(ops):
    return sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")


def test_random_edits_align_about_as_well_as_difflib():
    rnd = random.Random(1)
    worse = 0
    for _ in range(1000):
        a = [rnd.choice("abcdefg") for _ in range(rnd.randint(0, 30))]
        b = list(a)
        for _ in range(rnd.randint(0, 5)):
            op = rnd.random()
            if op < 0.3 and b:
                del b[rnd.randrange(len(b))]
            elif op < 0.6:
                b.insert(rnd.randint(0, len(b)), rnd.choice("abcdxyz"))
            elif b:
                b[rnd.randrange(len(b))] = rnd.choice("pqr")
        ops = align(a, b)
        assert covers(a, b, ops)
        best = sum(m.size for m in
                   difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
        assert matched(ops) >= best - 3
        worse += matched(ops) < best
    assert worse < 100


def test_unique_records_anchor_a_long_log():
    a = [f"line {i}" for i in range(20000)]
    b = [f"changed {i}" if i % 7 == 0 else x for i, x in enumerate(a)]
    ops = align(a, b)
    assert covers(a, b, ops) and matched(ops) == 20000 - len(range(0, 20000, 7))


def test_repeated_records_pair_in_order():
    a = ["x"] * 50 + ["y"] + ["x"] * 50
    b = ["x"] * 50 + ["z"] + ["x"] * 50
    assert align(a, b) == [("equal", 0, 50, 0, 50), ("replace", 50, 51, 50, 51),
                           ("equal", 51, 101, 51, 101)]


def test_longest_increasing_chain():
    assert longest_increasing([(0, 3), (1, 1), (2, 2), (3, 0), (4, 4)]) == [(1, 1), (2, 2), (4, 4)]
    assert longest_increasing([]) == []


def test_unified_matches_difflibs_format():
    a, b = list("abcdefghij"), list("abXdefghiYjk")
    ours = unified(a, b, align(a, b), "A", "B")
    theirs = list(difflib.unified_diff(a, b, "A", "B", lineterm=""))
    assert ours == theirs
    assert unified(a, a, align(a, a), "A", "B") == []
