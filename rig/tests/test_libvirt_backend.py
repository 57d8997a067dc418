"""The libvirt backend (pytest --backend libvirt): the domain XML made from
the direct command line, every exit class through libvirtd, no domain or
QEMU left behind even when the harness is killed, the boot, NMI and panic
scenarios through libvirt, the same deterministic evidence as the direct
backend, and xdist workers spread over several URIs."""
import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rig import config, paths
from rig.boot import BootRequest, boot
from rig.tests.helpers import (EXIT_CLASS_BOOTS, process_gone, run_suite, wait_for,
                               wait_for_hang_step)
from rig.vm import backend, libvirt_stage
from rig.vm.libvirt_domain import ZERO_UUID, DomainError, domain_xml, split_argv
from rig.vm.qemu_argv import MachineConfig, build_argv

FLAVOR = "vanilla"
QEMU_NS = "{http://libvirt.org/schemas/domain/qemu/1.0}"


def direct_argv(tmp_path, **kw):
    return build_argv(MachineConfig(qemu=tmp_path / "qemu", kernel=tmp_path / "bzImage",
                                    initrd=tmp_path / "initrd", run_dir=tmp_path,
                                    cmdline="rig.steps=kmsg", smp=3, memory_mb=300,
                                    clock="icount", icount_shift=4, **kw))


def test_domain_takes_what_libvirt_models_and_passes_the_rest(tmp_path):
    argv = direct_argv(tmp_path, uart_props={"nmi-cpu": "1"})
    dom = ET.fromstring(domain_xml(argv, "rig-x", "/tmp/c.sock", "/tmp/t.log", False))
    assert dom.get("type") == "qemu"
    assert dom.findtext("vcpu") == "3" and dom.findtext("memory") == "300"
    assert dom.findtext("devices/emulator") == str(tmp_path / "qemu")
    assert dom.findtext("os/kernel") == str(tmp_path / "bzImage")
    assert dom.findtext("os/cmdline").endswith("rig.steps=kmsg")
    assert dom.findtext("on_reboot") == "destroy"
    assert dom.find("seclabel") is None, "libvirt's own user and labels for QEMU"
    args = [a.get("value") for a in dom.iter(f"{QEMU_NS}arg")]
    assert args[args.index("-icount") + 1] == "shift=4,sleep=off,align=off"
    assert "-no-reboot" in args and "-kernel" not in args and "-smp" not in args
    console = args[args.index("-device") - 1]
    assert console.startswith("socket,id=con0,path=/tmp/c.sock,server=on,wait=off,logfile=")
    assert "signal=" not in console
    assert any(a.startswith("rig-serial,") and a.endswith(",nmi-cpu=1") for a in args)
    assert args[-8:] == ["-boot", "strict=off", "-smbios", f"type=1,uuid={ZERO_UUID}",
                         "-trace", "enable=debug_exit_write", "-D",
                         "/tmp/t.log"]
    # Everything of the direct command line is either modelled or passed on.
    modelled, rest = split_argv(argv)
    assert len(argv) == 1 + sum(1 + bool(v) for v in modelled.values()) + len(rest)


def test_warm_reset_restarts_and_a_missing_console_is_named(tmp_path):
    argv = direct_argv(tmp_path, warm_reset=True)
    dom = ET.fromstring(domain_xml(argv, "rig-x", "/c", "/t", True))
    assert dom.findtext("on_reboot") == "restart"
    assert "-no-reboot" not in [a.get("value") for a in dom.iter(f"{QEMU_NS}arg")]
    no_console = [a for a in argv if not a.startswith("stdio,")]
    with pytest.raises(DomainError, match="no stdio console chardev"):
        domain_xml(no_console, "rig-x", "/c", "/t", False)


def test_workers_take_the_uris_in_turn(monkeypatch):
    monkeypatch.setenv(config.VARIABLES["libvirt_uris"], "qemu+ssh://a/system,qemu+ssh://b/system")
    for worker, uri in (("gw0", "a"), ("gw1", "b"), ("gw2", "a")):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        assert backend.host_for_this_worker().uri == f"qemu+ssh://{uri}/system"


def rig_domains():
    out = subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--name"],
                         capture_output=True, text=True, check=True).stdout
    return [n for n in out.split() if n.startswith("rig-")]


@pytest.fixture
def libvirt_backend(monkeypatch):
    subprocess.run(["sh", str(paths.REPO / "rig/start-libvirtd.sh")], check=True)
    monkeypatch.setenv(config.VARIABLES["backend"], "libvirt")
    monkeypatch.delenv(config.VARIABLES["libvirt_uris"], raising=False)
    yield
    assert rig_domains() == [], "a rig domain outlived its boot"


@pytest.mark.boots
@pytest.mark.parametrize("cmdline,cls", EXIT_CLASS_BOOTS)
def test_exit_classes_through_libvirt(libvirt_backend, cmdline, cls):
    # Restored from init's snapshot; on the icount clock, which shares the
    # host, except the hang, whose timeout is real time.
    res = boot(BootRequest(flavor=FLAVOR, cmdline=cmdline, init_timeout_s=5,
                           clock="host" if cls == "hang" else "icount", snapshot=True,
                           name=f"libvirt-{cls}"))
    assert res.outcome.cls == cls, res.outcome.detail
    assert res.summary["backend"] == "libvirt"
    assert (res.run_dir / "domain.xml").is_file()
    if cls == "clean":
        assert res.outcome.exit_status == 33          # read back from the trace
        assert b"rig-init: end status=16" in (res.run_dir / "console.log").read_bytes()
    if cls == "hang":
        assert "rig-init: step hang: stopping here on purpose" in res.outcome.detail


@pytest.mark.boots
def test_killing_the_harness_destroys_the_domain(libvirt_backend, tmp_path):
    env = dict(os.environ, RIG_RUNS=str(tmp_path))
    harness = subprocess.Popen([sys.executable, "-m", "rig", "boot", "--backend", "libvirt",
                                "--flavor", FLAVOR, "--cmdline", "rig.hang=1",
                                "--init-timeout", "120", "--clock", "icount", "--quiet"],
                               cwd=paths.REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        qemu_pid = wait_for_hang_step(tmp_path)
        assert rig_domains(), "no rig domain while the guest hangs"
        # libvirt's own unprivileged user and labels, not root.
        uids = re.search(r"^Uid:\s+(\d+)", Path(f"/proc/{qemu_pid}/status").read_text(),
                         re.M).group(1)
        assert int(uids) == libvirt_stage.qemu_ids()[0] != 0, f"QEMU runs as uid {uids}"
        harness.send_signal(signal.SIGKILL)        # no cleanup code runs at all
        harness.wait(timeout=20)
        wait_for(lambda: process_gone(qemu_pid), 15, f"QEMU pid {qemu_pid} to go")
        wait_for(lambda: rig_domains() == [], 15, "libvirt to drop the domain")
        # Its staged output is left to the next boot, which removes it.
        def stages():
            pids = [s / libvirt_stage.HARNESS_PID
                    for s in (libvirt_stage.STAGE_ROOT / "runs").iterdir()]
            return [p for p in pids if p.is_file() and p.read_text().strip() == str(harness.pid)]
        assert stages(), "no stage directory of the killed harness"
        libvirt_stage.prune()
        assert stages() == [], "the killed harness's stage directory outlived prune()"
    finally:
        if harness.poll() is None:
            harness.kill()


# S7 (the UART's NMI) runs through libvirt in the evidence comparison below.
SCENARIOS = ["scenarios/test_boot.py", "scenarios/test_s06_host_nmi_wedged_cpu.py",
             "scenarios/test_s10_panic_in_nmi.py"]


@pytest.mark.boots
def test_boot_nmi_and_panic_scenarios_through_libvirt(libvirt_backend, tmp_path):
    got, proc = run_suite(tmp_path, ["--backend", "libvirt", "--flavor", "patched"]
                          + SCENARIOS)
    assert got and set(got.values()) == {"passed"}, proc.stdout[-4000:]
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/summary.json")]
    assert summaries and {s["backend"] for s in summaries} == {"libvirt"}


def evidence_of(tmp_path, name, args):
    got, proc = run_suite(tmp_path / name, args + ["--flavor", "patched",
                                                   "scenarios/test_s07_nmi_mid_line.py"])
    assert set(got.values()) == {"passed"}, proc.stdout[-3000:]
    (bundle,) = (tmp_path / name / "runs").glob("*/bundle.json")
    return json.loads(bundle.read_text())["evidence"]


@pytest.mark.boots
def test_deterministic_evidence_is_the_same_on_both_backends(libvirt_backend, tmp_path):
    # Both restore init's snapshot (one template, the direct backend's).
    direct = evidence_of(tmp_path, "direct", ["--backend", "direct"])
    libvirt = evidence_of(tmp_path, "libvirt", ["--backend", "libvirt"])
    assert direct == libvirt


@pytest.mark.boots
def test_xdist_workers_spread_over_the_uris(libvirt_backend, tmp_path):
    uris = ["qemu:///system", "qemu:///session"]
    # Scenarios on the icount clock, so that the two workers' domains run at once.
    got, proc = run_suite(tmp_path, ["-n", "2", "--backend", "libvirt", "--flavor", "vanilla",
                                     "--libvirt-uri", uris[0], "--libvirt-uri", uris[1],
                                     "scenarios/test_s03_emergency_immediacy.py",
                                     "scenarios/test_s07_nmi_mid_line.py"])
    assert got and set(got.values()) <= {"passed", "xfailed"}, proc.stdout[-4000:]
    used = {json.loads(p.read_text()).get("libvirt_uri")
            for p in (tmp_path / "runs").glob("*/summary.json")}
    assert used == set(uris)
