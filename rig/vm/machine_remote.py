"""The libvirt backend on a host that shares no file with the harness
(any URI with a host name: qemu+ssh://, qemu+tls://, qemu+tcp://): the same
machine as the direct backend's, driven through libvirt's API alone.

- Inputs go through libvirt storage (rig.vm.remote_storage): the rig's QEMU
  and the firmware it loads, the kernel, the initramfs, init's parameters
  and a restore's VM state, uploaded once per host and checked.
- The console is libvirt's console stream (rig.vm.remote_console); QMP is
  libvirt's monitor passthrough (rig.vm.remote_qmp); a restore loads the
  template's state image (rig.vm.state_image) by path on the host.
- QEMU writes the evidence into volumes of its own in the rig's pool; when
  the domain has ended the harness downloads them into the run directory
  (transfer.json lists what crossed, with sha256) and deletes them.
- The domain is transient, started paused with AUTODESTROY: libvirtd
  destroys it when the harness's connection drops, so a harness that dies
  leaves no domain and no QEMU on the host.
"""
import collections
import hashlib
import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from pexpect import fdpexpect

from rig import rundir
from rig.fleet.hosts import FleetHost
from rig.inputs import BadInput
from rig.rundir import RunDir, RunDirError
from rig.vm import state_image
from rig.vm.libvirt_domain import remote_domain_xml, remote_uart_qom
from rig.vm.machine import Machine, _live, ConsoleTally, last_lines_of
from rig.vm.machine_libvirt import domain_name, end_domain, exit_status_from_trace
from rig.vm.remote_console import ConsoleStream
from rig.vm.remote_host import Host, HostError
from rig.vm.remote_qmp import PassthroughQMP
from rig.artifacts import firmware
from rig.artifacts.cache import sha256_file
from rig.vm.remote_storage import Storage, Transfer, cache_pool_name

# What the rig's QEMU loads from its firmware directory.
FIRMWARE = firmware.FILES
# QEMU's output, by run directory file.
OUTPUTS = RunDir.EVIDENCE + RunDir.SECOND_CONSOLE_EVIDENCE + (RunDir.QEMU_TRACE,)
TRANSFER = "transfer.json"
TAIL_BYTES = 8192


def input_volume(path: Path) -> str:
    """An input's volume, named by its content: <sha256 prefix>-<file name>."""
    return f"{sha256_file(path)[:24]}-{path.name}"


class TailTally(ConsoleTally):
    """Also keeps the console's last bytes (a host that is lost takes
    console.log with it) and the sha256 of all it saw (console.log must
    begin with them: rig.vm.completeness)."""

    def __init__(self, live=None):
        super().__init__(live)
        self.tail: "collections.deque[bytes]" = collections.deque()
        self.tail_bytes = 0
        self.sha256 = hashlib.sha256()

    def write(self, data: bytes) -> None:
        super().write(data)
        self.sha256.update(data)
        self.tail.append(data)
        self.tail_bytes += len(data)
        while self.tail_bytes - len(self.tail[0]) > TAIL_BYTES:
            self.tail_bytes -= len(self.tail.popleft())

    def last_lines(self) -> str:
        return last_lines_of(b"".join(self.tail))


class RemoteMachine(Machine):
    console_adds_cr = False       # the stream carries the bytes as QEMU wrote them
    # libvirtd reads the pty's far end; when QEMU exits, the pty's hangup
    # discards what libvirtd had not read yet. console.log (QEMU's own log
    # of the chardev) is whole.
    console_is_live_view = True

    def __init__(self, cfg, phases, fleet_host: FleetHost, **kwargs):
        super().__init__(cfg, phases, **kwargs)
        self.tally = TailTally(self.live)
        self.fleet_host = fleet_host
        self.uri = fleet_host.uri
        self.host = Host(fleet_host.uri, fleet_host.name)
        self.name = domain_name(cfg.run_dir)
        self.console_uart_qom = remote_uart_qom(self.argv)
        self.transfer = Transfer()
        self.storage: Optional[Storage] = None
        self.pool = cache_pool_name()
        self.dom = None
        self.console: Optional[ConsoleStream] = None
        self.outputs: Dict[str, str] = {}        # volume -> run directory file
        self.host_paths: Dict[str, str] = {}     # run directory file -> the host's path
        self.run_volumes: List[str] = []
        self.state_path = ""
        self.host_args: List[str] = []
        self.host_failure: Optional[HostError] = None

    # -- inputs and outputs ------------------------------------------------
    def _qemu_dir(self, dirs: List[str]) -> Tuple[str, str]:
        """The rig's QEMU and its firmware in a pool of their own: (the
        host's path of the binary, its firmware directory)."""
        qemu = Path(self.argv[0])
        files = {qemu.name: qemu}
        for name in FIRMWARE:
            found = [Path(d) / name for d in dirs if (Path(d) / name).is_file()]
            if not found:
                raise BadInput(f"firmware {name} is in none of {', '.join(dirs)}: install "
                               "seabios and qemu-system-data (`make deps`)")
            files[name] = found[0]
        digest = hashlib.sha256("".join(f"{n}\0{sha256_file(p)}\n"
                                        for n, p in sorted(files.items())).encode())
        pool = "printk-rig-qemu-" + digest.hexdigest()[:16]
        paths = {n: self.storage.put(pool, n, p, 0o755 if n == qemu.name else 0o644)
                 for n, p in files.items()}
        return paths[qemu.name], str(Path(paths[qemu.name]).parent)

    def _input(self, path: Path) -> str:
        return self.storage.put(self.pool, input_volume(path), path)

    def _output(self, name: str) -> str:
        """A volume QEMU writes for run directory file name, starting with
        what the run directory holds (a restore's evidence so far)."""
        local = self.cfg.run.file(name)
        prefix = local.read_bytes() if local.is_file() else b""
        volume = f"run-{self.name}-{name}"
        self.outputs[volume] = name
        self.run_volumes.append(volume)
        self.host_paths[name] = self.storage.output(self.pool, volume, prefix)
        return self.host_paths[name]

    def host_argv(self) -> List[str]:
        """The command line with the host's paths: inputs uploaded, outputs
        created, no QMP socket, no -incoming (a restore loads by path)."""
        argv, dirs, i = [], [], 1
        while i < len(self.argv):
            a = self.argv[i]
            if a in ("-L", "-qmp", "-incoming"):
                if a == "-L":
                    dirs.append(self.argv[i + 1])
                i += 2
                continue
            argv.append(a)
            i += 1
        qemu, firmware = self._qemu_dir(dirs)
        moves = {str(self.cfg.kernel): self._input(Path(self.cfg.kernel)),
                 str(self.cfg.initrd): self._input(Path(self.cfg.initrd))}
        if self.cfg.fw_cfg_args:
            moves[self.cfg.fw_cfg_args] = self._input(Path(self.cfg.fw_cfg_args))
        run_dir = str(self.cfg.run_dir)
        for name in OUTPUTS:
            if any(f"{run_dir}/{name}" in a for a in argv):
                moves[f"{run_dir}/{name}"] = self._output(name)
        self._output(RunDir.QEMU_TRACE)         # -D, which the domain adds
        argv = [next((a.replace(old, new) for old, new in moves.items() if old in a), a)
                for a in argv]
        local = [a for a in argv if run_dir in a]
        if local:
            raise HostError(self.host, "preparing the domain",
                            f"the QEMU command line names files of the harness's machine "
                            f"the host cannot see: {local}")
        return [qemu, "-L", firmware] + argv

    # -- lifetime ------------------------------------------------------------
    def prepare(self) -> None:
        """Connect, send the inputs, create the output volumes: before the
        host lock, which a transfer does not need (and a state image's
        conversion, a local QEMU, takes itself)."""
        self.write_plan()
        self.host.connect()
        _live.add(self)
        self.storage = Storage(self.host, self.transfer)
        self.host_args = self.host_argv()
        if self.cfg.restore:
            image = state_image.image(Path(self.cfg.restore).parent, self.cfg)
            source = input_volume(image)
            self.storage.put(self.pool, source, image)
            clone = f"run-{self.name}-{image.name}"
            self.run_volumes.append(clone)
            self.state_path = self.storage.clone(self.pool, source, clone)

    def __enter__(self) -> "RemoteMachine":
        try:
            self.prepare()
            return super().__enter__()
        except BaseException:
            self.kill()
            raise

    def start(self) -> None:
        """Create the domain paused, open its console, run it (a restore's
        prelude runs it once the state is loaded)."""
        import libvirt
        xml = remote_domain_xml(self.host_args, self.name, self.host_paths[RunDir.QEMU_TRACE],
                                self.cfg.warm_reset)
        run = self.cfg.run
        domain_file = run.write_text(RunDir.DOMAIN_XML, xml)
        run.write_text(RunDir.LIBVIRT_URI, self.uri + "\n")
        try:
            self.dom = self.host.conn.createXML(xml, libvirt.VIR_DOMAIN_START_PAUSED |
                                                libvirt.VIR_DOMAIN_START_AUTODESTROY)
            self.console = ConsoleStream(self.host.conn, self.dom,
                                         self.console_uart_qom.split("/")[-1])
            self.host.on_lost.append(self.console.lost)
        except libvirt.libvirtError as e:
            raise self.host.error(f"starting domain {self.name} ({domain_file})", e) from None
        # The descriptor is the pexpect object's from here on; it closes it.
        self.child = fdpexpect.fdspawn(self.console.harness_end.detach(), timeout=None,
                                       maxread=4096, searchwindowsize=16384)
        self.child.logfile_read = self.tally
        if not self.cfg.restore:
            try:
                self.dom.resume()
            except libvirt.libvirtError as e:
                raise self.host.error(f"resuming domain {self.name}", e) from None

    def host_lock(self) -> Optional[Path]:
        """A boot on the host's clock runs alone on its host: this harness's
        lock of that host, or this machine's for a host on its CPUs."""
        if self.fleet_host.lock == "machine":
            return None
        digest = hashlib.sha256(self.uri.encode()).hexdigest()[:12]
        return (rundir.runtime_dir() /
                f"{rundir.HOST_LOCK_PREFIX}{self.fleet_host.name[:40]}-{digest}.lock")

    def open_qmp(self) -> PassthroughQMP:
        qmp = PassthroughQMP(self.host.conn, self.dom, f"host {self.host.name} domain "
                             f"{self.name}")
        self.qmp = qmp
        qmp.connect(timeout=15.0)
        return qmp

    def load_state(self, vmstate: Path) -> None:
        state_image.load(self.qmp, self.state_path)

    def kill(self) -> None:
        """Destroy the domain if it still runs, fetch the evidence, delete the
        run's volumes, close the connection. Never raises: a host that
        failed is kept in host_failure for run() to report."""
        if self.dom is not None:
            closed = self.child is not None and getattr(self.child, "flag_eof", False)
            if end_domain(self.dom, closed):
                self._killed_by_rig = True
            self.dom = None
        if self.console is not None:
            self.console.close()
            self.console = None
        if self.child is not None:
            self.child.close()
        if self.qmp is not None:
            self.qmp.close()
        if self.storage is not None and self.host.conn is not None:
            self._collect()
            self.storage = None
        self.host.close()
        _live.discard(self)

    def _collect(self) -> None:
        try:
            if self.host.lost:
                raise HostError(self.host, "connection lost", self.host.lost)
            wanted = {v: self.cfg.run.file(name) for v, name in self.outputs.items()}
            self.storage.fetch(self.pool, wanted)
            self.storage.remove(self.pool, self.run_volumes)
        except HostError as e:
            self.host_failure = e
        self.note(RunDir.QEMU_STDERR,
                  f"QEMU's stderr stays on host {self.host.name}, in libvirt's log of "
                  f"domain {self.name} (/var/log/libvirt/qemu/{self.name}.log there)\n")
        try:
            self.cfg.run.write_text(TRANSFER, json.dumps(
                {"host": self.host.name, "uri": self.uri, "pool": self.pool,
                 **self.transfer.to_json()}, indent=1) + "\n")
        except RunDirError as e:
            self.write_errors.append(str(e))

    def run(self):
        result = super().run()
        if self.host_failure is not None or self.host.lost:
            failure = self.host_failure or HostError(self.host, "connection lost",
                                                     self.host.lost)
            ended = result.phases[-1].name if result.phases else "start"
            raise HostError(self.host, f"lost during run {self.cfg.run_dir} "
                            f"(phase {ended})",
                            f"{failure}; last console lines the harness read:\n"
                            f"{self.tally.last_lines()}") from None
        return result

    def exit_status(self, events: List[dict]) -> Tuple[Optional[int], Optional[int]]:
        return exit_status_from_trace(self.cfg.run, self._killed_by_rig, events)
