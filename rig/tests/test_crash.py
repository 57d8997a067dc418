"""rig.evidence.crash on real kernel logs: syzkaller's report corpus (its titles are
the reference) and the rig's own oops and panic captures."""
import lzma
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from rig.evidence import crash

DATA = Path(__file__).parent / "data"
# Kernel-side crash logs of the corpus whose headline rig.evidence.crash finds
# (measured on 2026-12-06: 700 of 712; the rest are syzkaller's own
# messages, "unexpected kernel reboot", or a headline without the kernel's
# words such as "usb 5-1: WARNING: ath10k ...").
DETECTED_AT_LEAST = 700


def corpus():
    with tarfile.open(DATA / "syzkaller-linux-report.tar.xz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            head, _, body = tar.extractfile(member).read().partition(b"\n\n")
            fields = dict(ln.split(": ", 1) for ln in head.decode().splitlines()
                          if ": " in ln and not ln.startswith("#"))
            yield member.name, fields.get("TITLE", ""), body


@pytest.fixture(scope="module")
def results():
    return [(name, title, crash.first(body)) for name, title, body in corpus()]


def test_syzkallers_crash_logs_are_found(results):
    crashes = [(n, t, c) for n, t, c in results if t]
    missed = [(n, t) for n, t, c in crashes if c is None]
    assert len(crashes) - len(missed) >= DETECTED_AT_LEAST, missed


def test_titles_name_the_kind_syzkaller_names(results):
    # The part before " in func": the kind of crash. Function names follow
    # syzkaller's long list of frames to skip only in part.
    same = Counter(c.title.split(" in ")[0] == t.split(" in ")[0]
                   for _, t, c in results if t and c)
    assert same[True] >= 545, same


@pytest.mark.parametrize("headline,title", [
    ("divide error: 0000 [#1] PREEMPT SMP KASAN\nRIP: 0010:tabledist+0x1a/0x40",
     "divide error in tabledist"),
    ("rcu: INFO: rcu_preempt self-detected stall on CPU\n  foo_loop+0x10/0x20",
     "INFO: rcu detected stall in foo_loop"),
    ("INFO: task kworker/0:1:12 blocked for more than 143 seconds.\n"
     "  __schedule+0x1/0x2\n  wait_for_completion+0x3/0x4\n  flush_work+0x5/0x6",
     "INFO: task hung in wait_for_completion"),
    ("WARNING: inconsistent lock state\n  lock_acquire+0x1/0x2\n  inet_ehash_insert+0x1/0x2",
     "inconsistent lock state in inet_ehash_insert"),
    ("BUG kmalloc-8 (Not tainted): Redzone overwritten", "BUG: kmalloc-8: Redzone overwritten"),
    ("UBSAN: shift-out-of-bounds in lib/foo.c:12:3\n  dump_stack_lvl+0x1/0x2\n"
     "  __ubsan_handle_shift_out_of_bounds+0x1/0x2\n  foo_shift+0x1/0x2",
     "UBSAN: shift-out-of-bounds in foo_shift"),
    ("kernel BUG at mm/slub.c:123!\nRIP: 0010:kfree+0x1/0x2", "kernel BUG in kfree"),
    ("BUG: KASAN: slab-out-of-bounds in foo_bar+0x12/0x40\nRead of size 8 at addr ffff",
     "KASAN: slab-out-of-bounds Read in foo_bar"),
    ("BUG: KCSAN: data-race in foo / bar", "KCSAN: data-race in foo"),
    ("Oops: general protection fault, probably for non-canonical address 0xdffffc0000000000: "
     "0000 [#1] PREEMPT SMP KASAN\nRIP: 0010:gpf_func+0x1/0x2", "general protection fault in gpf_func"),
    ("Oops: divide error: 0000 [#1] PREEMPT SMP\nRIP: 0010:tabledist.part.0+0x1/0x2",
     "divide error in tabledist.part.0"),
    ("Internal error: Oops: 96000004 [#1] PREEMPT SMP\npc : bar+0x1/0x2\nCall trace:\n"
     " bar+0x1/0x2", "Internal error in bar"),
    ("[   12.345678][ T1234] WARNING: CPU: 1 PID: 1234 at net/x.c:9 foo_warn+0x1/0x2",
     "WARNING in foo_warn"),
])
def test_headlines_without_a_call_trace_line(headline, title):
    found = crash.first(headline.encode())
    assert found is not None and found.title == title


def test_the_rigs_own_oops_and_panic_and_a_clean_boot():
    oops = crash.find(lzma.decompress((DATA / "patched-oops.console.xz").read_bytes()))
    assert oops[0].title == "BUG: unable to handle kernel NULL pointer dereference in crash_now"
    panic = crash.find(lzma.decompress((DATA / "vanilla-panic-nmi.console.xz").read_bytes()))
    assert any(c.title.startswith("kernel panic: rigprintk: panic in NMI") for c in panic)
    assert crash.find(lzma.decompress((DATA / "vanilla-boot.console.xz").read_bytes())) == []


def test_s1_splat_check_names_the_crash_by_its_title():
    from types import SimpleNamespace
    from rig.evidence.properties import no_splat
    stall = b"[    1.0] ok\n[   22.000000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n"
    got = no_splat(SimpleNamespace(result=SimpleNamespace(console=stall)))
    assert not got.ok and got.detail.startswith("INFO: rcu detected stall (console line 2:")
    trace = b"[    1.000000] sysrq: Show backtrace\n[    1.000001] Call Trace:\n"
    got = no_splat(SimpleNamespace(result=SimpleNamespace(console=trace)))
    assert not got.ok and got.detail.startswith("backtrace at console line 2")
    assert no_splat(SimpleNamespace(result=SimpleNamespace(console=b"[    1.000000] fine\n"))).ok
