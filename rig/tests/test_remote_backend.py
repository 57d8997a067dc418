"""The libvirt backend on hosts that share nothing with the harness
(rig.vm.machine_remote), against test hosts this file makes: network, mount
and pid namespaces with a libvirtd of their own each (rig.fleet.netns_hosts).

Through libvirt's API alone: the same evidence as the direct backend, byte
for byte, for a boot and for a restore; inputs uploaded once and reused;
no path of the harness's machine in the domain; a harness that is killed
leaves no domain and no QEMU on the host; a host whose libvirtd dies, or
whose pool is full, is named in the error.
"""
import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rig import config, paths
from rig.boot import BootRequest, boot
from rig.fleet import netns_hosts
from rig.tests.helpers import EXIT_CLASS_BOOTS, fleet_workdir, run_suite, wait_for
from rig.vm.libvirt_domain import remote_domain_xml, remote_uart_qom
from rig.vm.qemu_argv import MachineConfig, build_argv
from rig.vm.remote_host import HostError
from rig.vm.remote_storage import POOL_ROOT

QEMU_NS = "{http://libvirt.org/schemas/domain/qemu/1.0}"
FLAVOR = "patched"
HANG_S = 120


def test_the_console_uart_becomes_libvirts_serial_and_the_devices_json(tmp_path):
    argv = build_argv(MachineConfig(qemu=tmp_path / "qemu", kernel=tmp_path / "bzImage",
                                    initrd=tmp_path / "initrd", run_dir=tmp_path,
                                    clock="icount", icount_shift=4,
                                    uart_props={"nmi-cpu": "-1", "nmi-pattern": "abc"}))
    argv = [a for i, a in enumerate(argv)
            if a != "-qmp" and (i == 0 or argv[i - 1] != "-qmp")]
    dom = ET.fromstring(remote_domain_xml(argv, "rig-x", "/pool/trace", False))
    serial = dom.find("devices/serial")
    assert serial.get("type") == "pty", "libvirt's console stream reads a pty serial"
    assert serial.find("log").get("file") == str(tmp_path / "console.log")
    assert serial.find("log").get("append") == "off"
    assert serial.find("alias").get("name") == "ua-uart0"
    props = {p.get("name"): (p.get("type"), p.get("value"))
             for p in dom.iter(f"{QEMU_NS}property")}
    assert props["driver"] == ("string", "rig-serial")
    assert props["iobase"] == ("unsigned", str(0x3f8))
    assert props["nmi-cpu"] == ("signed", "-1")
    assert props["nmi-pattern"] == ("string", "abc")
    assert props["log"] == ("string", str(tmp_path / "uart.log"))
    args = [a.get("value") for a in dom.iter(f"{QEMU_NS}arg")]
    assert not any("con0" in a for a in args), "the console chardev is libvirt's"
    devices = [json.loads(args[i + 1]) for i, a in enumerate(args) if a == "-device"]
    assert [d["driver"] for d in devices] == ["isa-serial", "isa-debug-exit", "pvpanic"]
    assert devices[0]["iobase"] == 0x2f8 and devices[0]["chardev"] == "side0"
    assert remote_uart_qom(argv) == "/machine/peripheral/ua-uart0"


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    return fleet_workdir(tmp_path_factory)


@pytest.fixture(scope="module")
def host(fleet_dir):
    """One test host for the module's boots."""
    hosts = netns_hosts.start(1, fleet_dir, names=["fleet-a"])
    yield hosts[0]
    netns_hosts.stop(hosts)


def on(monkeypatch, uri):
    monkeypatch.setenv(config.VARIABLES["backend"], "libvirt")
    monkeypatch.setenv(config.VARIABLES["libvirt_uris"], uri)


def host_domains(uri):
    import libvirt
    conn = libvirt.open(uri)
    try:
        return [d.name() for d in conn.listAllDomains()]
    finally:
        conn.close()


def evidence(run_dir: Path):
    return json.loads((run_dir / "bundle.json").read_text())["evidence"]


@pytest.mark.boots
def test_a_remote_boot_is_the_direct_backends_byte_for_byte(host, monkeypatch):
    req = dict(flavor=FLAVOR, clock="icount", cmdline="rig.steps=kmsg", snapshot=False)
    monkeypatch.setenv(config.VARIABLES["backend"], "direct")
    direct = boot(BootRequest(name="direct-boot", **req))
    on(monkeypatch, host.uri)
    remote = boot(BootRequest(name="remote-boot", **req))
    assert remote.outcome.cls == direct.outcome.cls == "clean", remote.outcome.detail
    assert remote.summary["libvirt_uri"] == host.uri
    assert evidence(remote.run_dir) == evidence(direct.run_dir)
    # What came back is what the bundle hashed: the fetched volumes' sha256.
    transfer = json.loads((remote.run_dir / "transfer.json").read_text())
    fetched = {f["file"]: f["sha256"] for f in transfer["fetched"]}
    for name, entry in evidence(remote.run_dir).items():
        if entry is not None:
            assert fetched[name] == entry["sha256"], name
    # The domain names only the host's files: nothing of this machine.
    domain = (remote.run_dir / "domain.xml").read_text()
    for local in (str(paths.cache_root()), str(remote.run_dir), "/usr/share/"):
        assert local not in domain
    assert not Path(POOL_ROOT).exists() or not any(Path(POOL_ROOT).iterdir()), \
        "the host's pools are visible to the harness"
    # A second boot sends nothing new: every input is reused.
    again = boot(BootRequest(name="remote-boot-again", **req))
    sent = json.loads((again.run_dir / "transfer.json").read_text())["sent"]
    assert [s["volume"] for s in sent if s["uploaded"]] == []
    assert evidence(again.run_dir) == evidence(direct.run_dir)
    assert host_domains(host.uri) == []


@pytest.mark.boots
@pytest.mark.parametrize("cmdline,cls", EXIT_CLASS_BOOTS)
def test_exit_classes_on_a_remote_host(host, monkeypatch, cmdline, cls):
    # Restored from init's snapshot, as on this machine; the hang's timeout
    # is real time, on the host's clock.
    on(monkeypatch, host.uri)
    res = boot(BootRequest(flavor=FLAVOR, cmdline=cmdline, init_timeout_s=5, snapshot=True,
                           clock="host" if cls == "hang" else "icount",
                           name=f"remote-{cls}"))
    assert res.outcome.cls == cls, res.outcome.detail
    if cls == "clean":
        assert res.outcome.exit_status == 33          # read back from the trace
    if cls == "hang":
        # The phase, the last console lines the stream showed, and where
        # each vCPU is (HMP through the monitor passthrough).
        assert "rig-init: step hang: stopping here on purpose" in res.outcome.detail
        assert "vCPU stacks at the hang" in res.outcome.detail, res.outcome.detail
    assert host_domains(host.uri) == []


@pytest.mark.boots
def test_a_remote_restore_is_the_direct_backends_byte_for_byte(host, tmp_path):
    # S7 (the UART's NMI, icount): restored from init's snapshot on both;
    # the remote one loads the template's state image by path.
    def s7(name, args):
        got, proc = run_suite(tmp_path / name, args + ["--flavor", FLAVOR,
                                                       "scenarios/test_s07_nmi_mid_line.py"])
        assert set(got.values()) == {"passed"}, proc.stdout[-3000:]
        (run_dir,) = (tmp_path / name / "runs").glob("*/")
        return run_dir

    direct = s7("direct", ["--backend", "direct"])
    remote = s7("remote", ["--backend", "libvirt", "--libvirt-uri", host.uri])
    assert evidence(remote) == evidence(direct)
    summary = json.loads((remote / "summary.json").read_text())
    assert summary["snapshot"] and summary["libvirt_uri"] == host.uri
    sent = json.loads((remote / "transfer.json").read_text())["sent"]
    assert any(s["volume"].endswith("-state.img") for s in sent)


def start_hanging_boot(uri, runs: Path, name: str) -> subprocess.Popen:
    """`rig boot` of a guest that hangs on purpose, its console live on stdout."""
    env = dict(os.environ, RIG_RUNS=str(runs))
    return subprocess.Popen([sys.executable, "-m", "rig", "boot", "--backend", "libvirt",
                             "--libvirt-uri", uri, "--flavor", FLAVOR, "--name", name,
                             "--cmdline", "rig.hang=1", "--init-timeout", str(HANG_S),
                             "--clock", "icount"],
                            cwd=paths.REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def wait_for_console(proc: subprocess.Popen, text: bytes) -> None:
    seen = b""
    for line in iter(proc.stdout.readline, b""):
        seen += line
        if text in line:
            return
    raise AssertionError(f"the boot ended before {text!r}:\n{seen[-2000:].decode()}\n"
                         f"{proc.stderr.read().decode()[-2000:]}")


@pytest.mark.boots
def test_a_killed_harness_leaves_no_domain_and_no_qemu(host, tmp_path):
    harness = start_hanging_boot(host.uri, tmp_path, "killed-harness")
    try:
        wait_for_console(harness, b"step hang")
        assert host_domains(host.uri) and host.qemu_pids(), "no domain while the guest hangs"
        # libvirt's unprivileged user, not root.
        (qemu,) = host.qemu_pids()
        uid = next(int(ln.split()[1]) for ln in Path(f"/proc/{qemu}/status").read_text()
                   .splitlines() if ln.startswith("Uid:"))
        assert uid != 0, "QEMU runs as root on the host"
        os.killpg(harness.pid, signal.SIGKILL)      # no cleanup code of the harness runs
        harness.wait(timeout=20)
        wait_for(lambda: host_domains(host.uri) == [], 15, "the host to drop the domain")
        wait_for(lambda: host.qemu_pids() == [], 15, "the host's QEMU to go")
    finally:
        if harness.poll() is None:
            os.killpg(harness.pid, signal.SIGKILL)


@pytest.mark.boots
def test_a_host_whose_libvirtd_dies_is_named(fleet_dir, tmp_path):
    (doomed,) = netns_hosts.start(1, fleet_dir / "doomed", names=["fleet-doomed"])
    harness = start_hanging_boot(doomed.uri, tmp_path, "lost-host")
    try:
        wait_for_console(harness, b"step hang")
        netns_hosts.kill_libvirtd(doomed)
        _, err = harness.communicate(timeout=60)
        err = err.decode()
        assert harness.returncode == 2, err[-3000:]
        first = next(ln for ln in err.splitlines() if ln.startswith("error:"))
        assert first.startswith(f"error: host {doomed.address} ({doomed.uri}): lost during run"), err
        assert "step hang" in err, "the last console lines the harness read"
        wait_for(lambda: doomed.pids() == [], 15, "the dead host's processes to go")
    finally:
        if harness.poll() is None:
            os.killpg(harness.pid, signal.SIGKILL)
        netns_hosts.stop([doomed])


@pytest.mark.boots
def test_a_full_pool_is_named(fleet_dir, monkeypatch):
    # Room for the kernel and initramfs, not for the rig's QEMU (55 MiB).
    (small,) = netns_hosts.start(1, fleet_dir / "small", pool_mib=24, names=["fleet-small"])
    try:
        on(monkeypatch, small.uri)
        with pytest.raises(HostError) as e:
            boot(BootRequest(flavor=FLAVOR, clock="icount", name="full-pool"))
        message = str(e.value)
        assert message.startswith(f"host {small.address} ({small.uri}): uploading "
                                  "qemu-system-x86_64"), message
        assert "space" in message.lower(), message
        assert host_domains(small.uri) == []
    finally:
        netns_hosts.stop([small])
