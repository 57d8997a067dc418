"""Snapshot restore (rig/vm/snapshot.py): units, and real boots that restore a
template saved at init's snapshot point."""
import io
from dataclasses import replace
from pathlib import Path

import pytest

from rig import protocol
from rig.boot import BootRequest, boot
from rig.bundle import EVIDENCE
from rig.evidence import uartlog
from rig.vm import snapshot
from rig.vm.qemu_argv import MachineConfig, build_argv

# Two bracketed console lines and the kernel log: the scenario's parameters
# (steps, line length) come from fw_cfg after the restore.
SCENARIO = "rig.steps=line,kmsg,line rig.line_len=300"
NMI_AT_LINE = {"nmi-pattern": "rig-line:", "nmi-pattern-offset": "100"}


def cfg(**kw) -> MachineConfig:
    base = dict(qemu=Path("/q"), kernel=Path("/k"), initrd=Path("/i"), run_dir=Path("/r"))
    return MachineConfig(**dict(base, **kw))


KEYS = {"qemu": "q1", "kernel": "k1", "initramfs": "i1"}


def test_scenario_parameters_are_split_from_the_boots():
    boot_part, scen = snapshot.split_cmdline(
        "loglevel=4 rig.steps=run rigprintk.scen=S7 emergency_loglevel=3 rig.sleep_ms=5")
    assert boot_part == "loglevel=4 emergency_loglevel=3"
    assert scen == "rig.steps=run rigprintk.scen=S7 rig.sleep_ms=5"


def test_scenarios_share_a_template_unless_the_boot_differs():
    key = snapshot.template_step("patched", cfg(cmdline="rig.steps=run rigprintk.a=1"), KEYS).key
    same = snapshot.template_step("patched", cfg(cmdline="rig.steps=kmsg",
                                                 uart_props=NMI_AT_LINE), KEYS).key
    assert key == same
    for other in (cfg(cmdline="loglevel=4"), cfg(smp=4), cfg(clock="icount"),
                  cfg(clock="icount", icount_shift=3), cfg(baud_model=False),
                  cfg(uart_props={"log-reads": "on"})):
        assert snapshot.template_step("patched", other, KEYS).key != key, other
    assert snapshot.template_step("vanilla", cfg(), KEYS).dir != \
        snapshot.template_step("patched", cfg(), KEYS).dir
    assert snapshot.template_step("patched", cfg(), dict(KEYS, kernel="k2")).key != key


def test_a_restore_appends_to_the_logs_and_loads_later(tmp_path):
    c = snapshot.template_config(cfg(run_dir=tmp_path, cmdline="loglevel=4 rig.steps=run",
                                     uart_props=dict(NMI_AT_LINE, **{"log-reads": "on"})),
                                 tmp_path, tmp_path / "args.txt")
    template = build_argv(c)
    restore = build_argv(replace(c, restore=str(tmp_path / "vmstate")))
    assert template[template.index("-append") + 1].endswith("loglevel=4 rig.snapshot=1")
    uart = next(a for a in template if a.startswith("rig-serial,"))
    assert "stop-marker=1397637456" in uart and "log-reads=on" in uart
    assert "nmi-pattern" not in uart            # set with qom-set after the load
    assert ["-fw_cfg", f"name=opt/rig/args,file={tmp_path / 'args.txt'}"] == \
        template[template.index("-fw_cfg"):template.index("-fw_cfg") + 2]
    assert "-incoming" not in template
    assert restore[-2:] == ["-incoming", "defer"]
    assert any("logappend=on" in a for a in restore)
    assert any(a.startswith("rig-serial,") and "log-append=on" in a for a in restore)
    assert any(a.startswith("file,id=side0,") and a.endswith(",append=on") for a in restore)
    # Otherwise the same machine: the saved state names every device and RAM block.
    strip = {"logappend=on": "logappend=off", ",log-append=on": "", ",append=on": ""}
    normalized = []
    for a in restore[:-2]:
        for old, new in strip.items():
            a = a.replace(old, new)
        normalized.append(a)
    assert normalized == template


def test_boots_that_cannot_restore_say_why():
    assert snapshot.why_not(BootRequest(), "direct") is None
    assert snapshot.why_not(BootRequest(), "libvirt") is None
    assert "remote" in snapshot.why_not(BootRequest(), "remote")
    assert "warm reset" in snapshot.why_not(BootRequest(warm_reset=True), "direct")
    assert "bench" in snapshot.why_not(BootRequest(initramfs="bench"), "direct")


def restored(name: str, **kw):
    res = boot(BootRequest(flavor="vanilla", cmdline=SCENARIO, clock="icount",
                           snapshot=True, name=name, **kw))
    assert res.outcome.cls == "clean", res.outcome.detail
    return res


@pytest.mark.boots
class TestRestore:
    @pytest.fixture(scope="class")
    def twice(self):
        return restored("snapshot-a"), restored("snapshot-b")

    def test_the_run_starts_at_init(self, twice):
        res = twice[0]
        assert [p.name for p in res.phases] == ["qemu", "restore", "init", "exit"]
        assert res.summary["snapshot"], "no template recorded in summary.json"
        bundle_inputs = (res.run_dir / "bundle.json").read_text()
        assert '"snapshot"' in bundle_inputs and "vmstate" in bundle_inputs

    def test_the_transcript_is_whole_from_the_boot(self, twice):
        console = twice[0].console
        assert console.count(b"Linux version ") == 1
        start = console.index(b"rig-init: start")
        assert start < console.index(b"rig-init: restored") < console.index(b"rig-line:")
        assert console.count(b"rig-line:") == 2, "the scenario's steps did not all run"
        side = twice[0].side
        assert side.startswith(b"@@rig begin kmsg ") and side.endswith(b"@@rig status 16\n")

    def test_the_register_log_is_one_log_from_the_boot(self, twice):
        res = twice[0]
        log = uartlog.read(res.run_dir / "uart.log")   # seq from 0, no gap
        assert log.thr_bytes() == res.console
        markers = [r.value for r in log.records if r.reg == "MARKER"]
        stop = markers.index(protocol.SNAPSHOT_STOP_MARKER)
        assert markers[stop + 1:] == [1, 2, 1, 2], markers
        # The divisor the boot programmed still times the scenario's bytes.
        assert log.records[-1].vtime_ns > log.records[0].vtime_ns

    def test_restores_of_one_template_repeat_byte_for_byte(self, twice):
        a, b = twice
        for name in EVIDENCE:
            assert (a.run_dir / name).read_bytes() == (b.run_dir / name).read_bytes(), name

    def test_the_nmi_trigger_is_armed_after_the_load(self):
        res = restored("snapshot-nmi", uart_props=NMI_AT_LINE)
        log = uartlog.read(res.run_dir / "uart.log")
        nmis = [i for i, r in enumerate(log.records) if r.reg == "NMI"]
        assert len(nmis) == 1, f"{len(nmis)} NMIs, expected the trigger to fire once"
        sent = bytes(r.value for r in log.records[:nmis[0]] if r.reg == "THR")
        after = sent[sent.index(b"rig-line:") + len(b"rig-line:"):]
        assert len(after) == 100, f"fired {len(after)} bytes after the pattern, not 100"


@pytest.mark.boots
def test_a_restored_boot_shows_its_whole_transcript_live(tmp_path):
    """The live console of a restored boot starts with the boot up to the
    snapshot point, as its console.log does: the same bytes, in order."""
    live = io.BytesIO()
    res = boot(BootRequest(flavor="vanilla", cmdline=SCENARIO, snapshot=True,
                           name="snapshot-live", run_dir=tmp_path / "run"), live=live)
    assert res.outcome.cls == "clean", res.outcome.detail
    shown = live.getvalue()
    assert b"Linux version" in shown and b"rig-init: end status=" in shown
    assert shown.replace(b"\r", b"") == res.console.replace(b"\r", b"")


@pytest.mark.boots
def test_a_rebuilt_template_gives_the_same_run(tmp_path):
    """The guest stops itself synchronously under -icount: a template saved
    again gives byte-identical runs (its vmstate bytes may differ: they hold
    host clock offsets)."""
    from rig.boot import machine_plan, slowness
    from rig.artifacts import built as artifacts
    from rig.vm.machine import Machine

    req = BootRequest(flavor="vanilla", cmdline=SCENARIO, clock="icount")
    qemu, kernel = artifacts.qemu(), artifacts.kernel("vanilla")
    initrd = artifacts.initramfs("vanilla")
    runs = []
    for n in (1, 2):
        snap_dir = tmp_path / f"template{n}"
        snap_dir.mkdir()
        c, phases, _ = machine_plan(req, qemu.path("qemu-system-x86_64"), kernel.path("bzImage"),
                                    initrd.path("initramfs"), tmp_path / f"run{n}", "tcg")
        snapshot.build_template(snap_dir, c, slowness(req))
        rc, rphases, prelude = snapshot.restore_plan(snap_dir, c, phases)
        with Machine(rc, rphases, prelude=prelude) as m:
            res = m.run()
        assert res.outcome.cls == "clean", res.outcome.detail
        runs.append(res.run_dir)
    for name in EVIDENCE:
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes(), name
