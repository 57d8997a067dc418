"""S10 panic in NMI: CPU 1 panics from NMI context while CPU 0's flood keeps
the console busy. The run is classified panic (pvpanic), and the panic
message, its backtrace and the panic notifiers' last line are on the wire,
complete and in order, with the flood lines queued before the panic printed too.

A second case aims the UART's NMI trigger at the vCPU that is writing a
line, right after one of its bytes: the printer is stopped inside its unsafe
region on the panicking CPU itself, and only an unsafe takeover can print.
6.12 does that takeover only after the reboot that panic=-1 asks for, so the
whole panic was lost (kernel-patches/0007 flushes unsafely before rebooting).
Vanilla has no nbcon console, so it prints the panic either way.

A third case keeps QEMU running across the reboot (a warm reset: RAM is
kept): kmsg_dump hands the panic records to ramoops in reserved RAM, and the
boot after the reset reads them back from /sys/fs/pstore. The dump must hold
the panic message and its NMI backtrace, in the order the console printed
them, and the flood records in per-CPU order; leaving the flood records out,
the panic in the dump and on the console are the same lines, up to the last
(kmsg_dump delivers the whole panic); and on the patched flavor a module
record's CPU field in the dump is the CPU the module printed it on. Both
flavors must pass (kmsg_dump and its iterator are in 6.12)."""
import pytest

from rig.evidence import logparse
from rig.evidence.properties import assert_panic_complete, printed_records
from rig.rigprintk import mask, parse_tag

pytestmark = [pytest.mark.boots, pytest.mark.panic, pytest.mark.nmi, pytest.mark.golden]

PANIC = "Kernel panic - not syncing: rigprintk: panic in NMI on CPU 1"


def test_s10_panic_from_nmi_reaches_the_wire_complete(rig_run, flavor):
    ev = rig_run(flavor, "S10", "run", expect="panic", crash="panic-nmi", crash_cpu=1,
                 flood_count=300, flood_cpus=mask([0]), flood_wait=False, flood_backlog_ms=100)
    assert_panic_complete(ev, PANIC)
    flood = sorted(t.seq for _, t in ev.tagged("S10") if t.ctx == "task")
    assert flood == list(range(len(flood))) and flood, (
        f"flood lines before the panic not printed in full: {len(flood)} lines "
        f"({ev.where()})")


def test_s10_panic_on_the_cpu_whose_printer_is_mid_byte(rig_run, flavor):
    ev = rig_run(flavor, "S10-midbyte", "run", expect="panic", flood_count=10,
                 flood_cpus=mask([0]), flood_len=100, unknown_nmi=True, nmi_panic=True,
                 uart_props={"nmi-pattern": "scen=S10-midbyte cpu=0 ctx=task seq=5 ",
                             "nmi-pattern-offset": "10", "nmi-cpu": "-1"})
    assert_panic_complete(ev, "Kernel panic - not syncing: rigprintk: panic from an unknown NMI")
    # The NMI's own record could not be written at once (its CPU owned the
    # console, mid-byte): the panic flush must still print it, once.
    nmi = [ln for ln, t in ev.tagged("S10-midbyte") if t.ctx == "nmi"]
    assert len(nmi) == 1, (f"records once: the NMI's record before the panic is on the "
                           f"console {len(nmi)} times, not once ({ev.where()})")


# 1 MiB of RAM at 64 MiB, kept out of the kernel's hands (memmap=...$...),
# for ramoops: one 256 KiB dmesg record (the 128 KiB log fits in one part).
RAMOOPS = ("memmap=1M$0x4000000 ramoops.mem_address=0x4000000 ramoops.mem_size=0x100000 "
           "ramoops.record_size=0x40000 ramoops.console_size=0 ramoops.ftrace_size=0 "
           "ramoops.pmsg_size=0")


def test_s10_kmsg_dump_keeps_the_panic_in_ramoops_across_a_warm_reset(rig_run, flavor):
    # Not deterministic: while QEMU handles the guest's reset request the
    # vCPUs wait, and -icount's sleep=off warps virtual time meanwhile, a
    # host-timed number of times (the boot after the reset started 8 ms of
    # virtual time apart between two runs).
    ev = rig_run(flavor, "S10-ramoops", "pstore,run", extra=RAMOOPS, warm_reset=True,
                 clock="host",
                 crash="panic-nmi", crash_cpu=1, flood_count=100, flood_cpus=mask([0]),
                 flood_wait=False, flood_backlog_ms=50)
    assert "GUEST_PANICKED" in ev.result.outcome.events, (
        f"kmsg_dump: the first boot did not panic ({ev.where()})")
    dumps = {n: b for n, b in ev.side.sections.items() if n.startswith("pstore:dmesg-")}
    assert dumps, (f"kmsg_dump: it left no dmesg record in pstore: the boot after the reset "
                   f"found none (sections: {sorted(ev.side.sections)}; {ev.where()})")
    assert len(dumps) == 1, f"kmsg_dump: the panic was split over {len(dumps)} pstore records"
    header, _, body = next(iter(dumps.values())).decode("utf-8", "replace").partition("\n")
    assert header.startswith("Panic#1 Part1"), (
        f"kmsg_dump: pstore record header {header!r}, not a panic")
    dumped = [logparse.parse_console_line(i, raw) for i, raw in enumerate(body.splitlines(), 2)]
    bad = [raw for raw, ln in zip(body.splitlines(), dumped) if ln is None]
    assert not bad, f"kmsg_dump: pstore record lines that are not printk records: {bad[:3]}"
    texts = [ln.text for ln in dumped]
    start = next((i for i, t in enumerate(texts) if PANIC in t), None)
    assert start is not None, (
        f"kmsg_dump: the pstore record lacks the panic message ({ev.where()})")
    assert any("Call Trace:" in t for t in texts[start:]), (
        "kmsg_dump: no backtrace in the pstore record")
    assert any("<NMI>" in t for t in texts[start:]), (
        "kmsg_dump: the dumped backtrace lacks the NMI context")

    # The panic's span on the console, as records: the console's own notes
    # (a replay after a takeover, a dropped count) are not records.
    records = [ln.text for ln in printed_records(ev)]
    first_rec = next(i for i, t in enumerate(records) if PANIC in t)
    end_rec = next((i for i, t in enumerate(records) if i > first_rec
                    and t.startswith("Linux version")), len(records))
    missing = first_missing_in_order(texts[start:], records[first_rec:end_rec])
    assert missing is None, (
        f"kmsg_dump: dumped panic record {missing!r} is not on the console in the same order "
        f"({ev.where()})")
    # Whole, up to its last record: leaving out the flood records, which
    # the console prints in its own order, the panic on the console and in
    # the dump are the same lines. With panic=-1 nothing prints after the
    # dump, so the console's last line is the dump's last record.
    def is_flood(tag):
        return tag is not None and tag.scen == "S10-ramoops" and tag.ctx == "task"

    def panic_part(lines):
        return [t for t in lines if not is_flood(parse_tag(t))]
    on_console, in_dump = panic_part(records[first_rec:end_rec]), panic_part(texts[start:])
    differ = next(((i, d, c) for i, (d, c) in enumerate(zip(in_dump, on_console)) if d != c),
                  None)
    assert in_dump == on_console, (
        "kmsg_dump: the dumped panic is not the console's: " + (
            f"line {differ[0]} is {differ[1]!r} in the dump, {differ[2]!r} on the console"
            if differ else f"{len(in_dump)} lines in the dump, {len(on_console)} on the "
                           f"console") + f" ({ev.where()})")
    # Every text export carries the CPU field: in the dump, a module
    # record's field is the CPU the module printed it on.
    for ln in dumped:
        tag = parse_tag(ln.text)
        if tag and tag.scen == "S10-ramoops" and flavor != "vanilla":
            assert ln.cpu == tag.cpu, (
                f"kmsg_dump: dumped record {ln.text!r} has CPU field {ln.cpu}, the module "
                f"printed it on CPU {tag.cpu} ({ev.where()})")
    flood = [t.seq for t in map(parse_tag, texts)
             if t and t.scen == "S10-ramoops" and t.ctx == "task"]
    assert flood and flood == sorted(flood), f"kmsg_dump: dumped flood records out of order: {flood}"


def first_missing_in_order(wanted, seen):
    """The first of wanted that is not in seen after its predecessor, or None."""
    it = iter(seen)
    for w in wanted:
        if not any(s == w for s in it):
            return w
    return None
