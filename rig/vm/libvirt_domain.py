"""The libvirt domain XML of one boot, made from the direct QEMU command line
(rig.vm.qemu_argv) so that both backends start the same machine: libvirt takes
what it models (machine, accelerator, CPU, vCPUs, memory, kernel, initrd,
command line, our QEMU binary as the emulator) and everything of the rig's
own (the instrumented UART, the side channel, isa-debug-exit, pvpanic,
-icount, -rtc, the rig's QMP socket) passes through <qemu:commandline>.

Two things differ, because libvirt owns QEMU's stdio and its exit status:
the console chardev is a unix socket the harness connects to before the
domain is resumed (QEMU still writes console.log itself), and the
isa-debug-exit trace event (qemu-devices/patches/0003) records the guest's
exit status in qemu-trace.log.
"""
import uuid
from typing import Dict, List, Tuple
from xml.sax.saxutils import quoteattr, escape

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
TRACE_EVENT = "debug_exit_write"
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
# Options libvirt models itself (value-taking ones map to how many values);
# -sandbox is libvirt's own (qemu.conf seccomp_sandbox, the same filter).
MODELLED = {"-M": 1, "-accel": 1, "-cpu": 1, "-smp": 1, "-m": 1, "-kernel": 1, "-initrd": 1,
            "-append": 1, "-display": 1, "-vga": 1, "-nodefaults": 0, "-no-user-config": 0,
            "-sandbox": 1}


class DomainError(ValueError):
    """The QEMU command line has something the libvirt backend cannot express."""


def split_argv(argv: List[str]) -> Tuple[Dict[str, str], List[str]]:
    """(options libvirt models -> value, the rest in order) of a QEMU argv."""
    modelled, rest, i = {}, [], 1
    while i < len(argv):
        opt = argv[i]
        if opt in MODELLED:
            n = MODELLED[opt]
            modelled[opt] = argv[i + 1] if n else ""
            i += 1 + n
        else:
            rest.append(opt)
            i += 1
    return modelled, rest


def console_over_socket(args: List[str], socket_path: str) -> List[str]:
    """The stdio console chardev becomes a unix socket server (QEMU keeps
    its logfile=, so console.log is written as in the direct backend)."""
    out = []
    for a in args:
        if a.startswith("stdio,id=con0,"):
            opts = [o for o in a.split(",")[2:] if not o.startswith("signal=")]
            a = ",".join([f"socket,id=con0,path={socket_path},server=on,wait=off"] + opts)
        out.append(a)
    if out == args:
        raise DomainError("no stdio console chardev (id=con0) in the QEMU command line")
    return out


def memory_mib(value: str) -> int:
    if value.endswith("M"):
        return int(value[:-1])
    if value.endswith("G"):
        return int(value[:-1]) * 1024
    return int(value)


def domain_xml(argv: List[str], name: str, console_socket: str, trace_log: str,
               warm_reset: bool) -> str:
    m, rest = split_argv(argv)
    accel = m.get("-accel", "tcg")
    if accel not in ("tcg", "kvm"):
        raise DomainError(f"accelerator {accel!r}: the libvirt backend knows tcg and kvm")
    vcpus = int(m.get("-smp", "1"))
    # What a bare -smp N is on pc-i440fx-7.2 (cores preferred over sockets);
    # libvirt would say sockets=N, which moves SeaBIOS's MP table in the guest.
    topology = f"<topology sockets='1' dies='1' cores='{vcpus}' threads='1'/>"
    cpu = (f"<cpu mode='host-passthrough'>{topology}</cpu>" if m.get("-cpu") == "host" else
           f"<cpu mode='custom' match='exact'><model fallback='forbid'>"
           f"{escape(m.get('-cpu', 'qemu64'))}</model>{topology}</cpu>")
    # on_crash is preserve: libvirt acting on pvpanic's GUEST_PANICKED would
    # kill QEMU while the kernel still writes its panic (the direct backend's
    # -action panic=none lets it go on to panic=-1's reboot and -no-reboot).
    # libvirt always adds -boot strict=on, which changes SeaBIOS's tables (the
    # MP table and RSDP move) and with them the guest's instruction counts:
    # the direct backend's default is put back so that both give one machine.
    # And the domain's UUID (-uuid) would reach the guest through SMBIOS,
    # whose bytes the kernel mixes into its random pool: a zero UUID, as
    # without -uuid, keeps the guest's random numbers and timing the same.
    passthrough = console_over_socket(rest, console_socket) + [
        "-boot", "strict=off", "-smbios", f"type=1,uuid={ZERO_UUID}",
        "-trace", f"enable={TRACE_EVENT}", "-D", trace_log]
    args = "\n".join(f"    <qemu:arg value={quoteattr(a)}/>" for a in passthrough)
    # libvirt's own name for the domain (the guest sees ZERO_UUID).
    dom_uuid = uuid.uuid5(uuid.NAMESPACE_URL, f"printk-rig:{name}")
    return f"""<domain type='{"kvm" if accel == "kvm" else "qemu"}' xmlns:qemu='{QEMU_NS}'>
  <name>{escape(name)}</name>
  <uuid>{dom_uuid}</uuid>
  <memory unit='MiB'>{memory_mib(m.get("-m", "256M"))}</memory>
  <vcpu>{vcpus}</vcpu>
  <os>
    <type arch='x86_64' machine={quoteattr(m.get("-M", "pc"))}>hvm</type>
    <kernel>{escape(m["-kernel"])}</kernel>
    <initrd>{escape(m["-initrd"])}</initrd>
    <cmdline>{escape(m.get("-append", ""))}</cmdline>
  </os>
  {cpu}
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>{"restart" if warm_reset else "destroy"}</on_reboot>
  <on_crash>preserve</on_crash>
  <devices>
    <emulator>{escape(argv[0])}</emulator>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
  <!-- No <seclabel>: libvirt runs QEMU as its own unprivileged user with its
       own labels; the inputs and output are staged for it (rig.vm.libvirt_stage). -->
  <qemu:commandline>
{args}
  </qemu:commandline>
</domain>
"""
