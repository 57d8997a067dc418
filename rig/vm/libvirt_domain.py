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
import json
import uuid
from typing import Dict, List, Tuple
from xml.sax.saxutils import quoteattr, escape

from rig.faults import RigFault

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
TRACE_EVENT = "debug_exit_write"
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
# Options libvirt models itself (value-taking ones map to how many values);
# -sandbox is libvirt's own (qemu.conf seccomp_sandbox, the same filter).
MODELLED = {"-M": 1, "-accel": 1, "-cpu": 1, "-smp": 1, "-m": 1, "-kernel": 1, "-initrd": 1,
            "-append": 1, "-display": 1, "-vga": 1, "-nodefaults": 0, "-no-user-config": 0,
            "-sandbox": 1}


class DomainError(RigFault, ValueError):
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
    """A domain of libvirt on this machine: the console is a unix socket."""
    m, rest = split_argv(argv)
    return _domain(m, argv[0], name, console_over_socket(rest, console_socket), trace_log,
                   warm_reset, devices="", overrides="")


def remote_domain_xml(argv: List[str], name: str, trace_log: str, warm_reset: bool) -> str:
    """A domain for a host that shares nothing with the harness: the
    console UART's chardev is libvirt's own pty serial, which libvirt's
    console stream reads (and whose <log> is console.log), turned into
    rig-serial by a device override; every other -device is JSON, as
    libvirt gives its own, so that QEMU creates the devices in the direct
    backend's order (it creates JSON devices after key=value ones). argv
    has the host's paths, no -qmp (QMP is libvirt's passthrough) and no
    -incoming (a remote restore loads an internal snapshot)."""
    m, rest = split_argv(argv)
    console, uart, rest = split_console(rest)
    alias = "ua-" + uart.get("id", "uart0")
    log = console["logfile"]
    devices = (f"<serial type='pty'><log file={quoteattr(log)} "
               f"append='{'on' if console.get('logappend') == 'on' else 'off'}'/>"
               "<target type='isa-serial' port='0'><model name='isa-serial'/></target>"
               f"<alias name='{alias}'/></serial>")
    props = "".join(f"\n        <qemu:property name={quoteattr(k)} type='{override_type(k)}' "
                    f"value={quoteattr(override_value(k, v))}/>"
                    for k, v in [("driver", uart["driver"])] +
                    [(k, v) for k, v in uart.items() if k not in ("driver", "id", "chardev")])
    overrides = (f"\n  <qemu:override>\n    <qemu:device alias='{alias}'>\n      "
                 f"<qemu:frontend>{props}\n      </qemu:frontend>\n    </qemu:device>"
                 "\n  </qemu:override>")
    return _domain(m, argv[0], name, devices_as_json(rest), trace_log, warm_reset,
                   devices=devices, overrides=overrides)


def remote_uart_qom(argv: List[str]) -> str:
    """Where qom-set finds the console UART of remote_domain_xml's domain."""
    _, uart, _ = split_console(split_argv(argv)[1])
    return "/machine/peripheral/ua-" + uart.get("id", "uart0")


def keyval(arg: str) -> Dict[str, str]:
    """A -device/-chardev argument's driver (or backend) and properties."""
    first, *pairs = arg.split(",")
    out = {"driver": first}
    for pair in pairs:
        k, _, v = pair.partition("=")
        out[k] = v
    return out


def split_console(args: List[str]) -> Tuple[Dict[str, str], Dict[str, str], List[str]]:
    """(the stdio console chardev, the device on it, the other arguments)."""
    console, uart, rest, i = None, None, [], 0
    while i < len(args):
        if args[i] == "-chardev" and args[i + 1].startswith("stdio,id=con0,"):
            console = keyval(args[i + 1])
            i += 2
        elif args[i] == "-device" and ",chardev=con0" in args[i + 1]:
            uart = keyval(args[i + 1])
            i += 2
        else:
            rest.append(args[i])
            i += 1
    if console is None or uart is None:
        raise DomainError("no stdio console chardev (id=con0) and device in the QEMU "
                          "command line")
    return console, uart, rest


# Property types of the rig's devices, for JSON (-device) and overrides.
STRING_PROPS = ("driver", "id", "chardev", "log", "nmi-pattern")
BOOL_PROPS = ("log-reads", "baud-model", "log-append")
SIGNED_PROPS = ("nmi-cpu",)


def override_type(prop: str) -> str:
    if prop in STRING_PROPS:
        return "string"
    if prop in BOOL_PROPS:
        return "bool"
    return "signed" if prop in SIGNED_PROPS else "unsigned"


def json_value(prop: str, value: str):
    kind = override_type(prop)
    if kind == "string":
        return value
    if kind == "bool":
        if value not in ("on", "off", "true", "false"):
            raise DomainError(f"device property {prop}={value}: not on or off")
        return value in ("on", "true")
    try:
        return int(value, 0)
    except ValueError:
        raise DomainError(f"device property {prop}={value}: the libvirt backend knows "
                          "it as a number") from None


def override_value(prop: str, value: str) -> str:
    """libvirt's text for a property override: decimal numbers, true/false."""
    v = json_value(prop, value)
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def devices_as_json(args: List[str]) -> List[str]:
    out = []
    for i, a in enumerate(args):
        if i > 0 and args[i - 1] == "-device" and not a.startswith("{"):
            a = json.dumps({k: json_value(k, v) for k, v in keyval(a).items()})
        out.append(a)
    return out


def _domain(m: Dict[str, str], emulator: str, name: str, passthrough_args: List[str],
            trace_log: str, warm_reset: bool, devices: str, overrides: str) -> str:
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
    passthrough = passthrough_args + [
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
    <emulator>{escape(emulator)}</emulator>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
    {devices}
  </devices>
  <!-- No <seclabel>: libvirt runs QEMU as its own unprivileged user with its
       own labels; the inputs and output are staged for it (rig.vm.libvirt_stage). -->
  <qemu:commandline>
{args}
  </qemu:commandline>{overrides}
</domain>
"""
