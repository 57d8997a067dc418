from pathlib import Path

import pytest

from rig.vm.qemu_argv import MachineConfig, build_argv, kernel_cmdline


def cfg(**kw):
    base = dict(qemu=Path("/q/qemu-system-x86_64"), kernel=Path("/k/bzImage"),
                initrd=Path("/i/initramfs.cpio"), run_dir=Path("/runs/r1"))
    base.update(kw)
    return MachineConfig(**base)


def value_after(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_default_is_tcg_smp2_with_all_channels():
    argv = build_argv(cfg())
    assert argv[0] == "/q/qemu-system-x86_64"
    assert value_after(argv, "-accel") == ["tcg"]
    assert value_after(argv, "-smp") == ["2"]
    assert "-no-reboot" in argv and "-nodefaults" in argv
    chardevs = value_after(argv, "-chardev")
    assert any(c.startswith("stdio,id=con0") and "logfile=/runs/r1/console.log" in c
               for c in chardevs)
    assert "file,id=side0,path=/runs/r1/side.bin" in chardevs
    # ttyS0 is the instrumented console under test, ttyS1 the side channel.
    assert "-serial" not in argv
    devices = value_after(argv, "-device")
    assert ("rig-serial,id=uart0,chardev=con0,index=0,iobase=0x3f8,irq=4,"
            "log=/runs/r1/uart.log"
            in devices)
    assert "isa-serial,chardev=side0,index=1,iobase=0x2f8,irq=3" in devices
    assert any(d.startswith("isa-debug-exit,iobase=0xf4") for d in devices)
    assert "pvpanic" in devices
    assert value_after(argv, "-qmp") == ["unix:/runs/r1/qmp.sock,server=on,wait=off"]
    assert "-icount" not in argv


def test_second_uart_only_when_asked():
    devices = value_after(build_argv(cfg()), "-device")
    assert not any("uart2" in d for d in devices)
    argv = build_argv(cfg(second_uart=True, baud_model=False))
    # Its own chardev, register log and marker port, ttyS2's I/O port.
    assert "file,id=con2,path=/runs/r1/console2.log" in value_after(argv, "-chardev")
    assert ("rig-serial,id=uart2,chardev=con2,index=2,iobase=0x3e8,irq=5,marker-iobase=0x4f8,"
            "log=/runs/r1/uart2.log,baud-model=off") in value_after(argv, "-device")
    # A restore appends to the template's logs, the second UART's too.
    argv = build_argv(cfg(second_uart=True, restore="/s/vmstate"))
    assert "file,id=con2,path=/runs/r1/console2.log,append=on" in value_after(argv, "-chardev")
    assert any(d.startswith("rig-serial,id=uart2,") and d.endswith(",log-append=on")
               for d in value_after(argv, "-device"))


def test_cmdline_carries_console_and_extra_params():
    argv = build_argv(cfg(cmdline="rig.hang=1"))
    append = value_after(argv, "-append")[0]
    assert append.startswith("console=ttyS0,115200")
    assert "panic=-1" in append and append.endswith("rig.hang=1")
    assert kernel_cmdline("") == kernel_cmdline("  ").strip()


def test_firmware_dirs_become_L_flags():
    argv = build_argv(cfg(), firmware_dirs=[Path("/fw/a"), Path("/fw/b")])
    assert value_after(argv, "-L") == ["/fw/a", "/fw/b"]


def test_deterministic_adds_icount_and_vm_clock_rtc():
    argv = build_argv(cfg(clock="icount", icount_shift=3))
    assert value_after(argv, "-icount") == ["shift=3,sleep=off,align=off"]
    assert value_after(argv, "-rtc") == ["base=2000-01-01T00:00:00,clock=vm"]


def test_bad_accel_combinations_are_refused():
    with pytest.raises(ValueError, match="tcg or kvm"):
        build_argv(cfg(accel="hvf"))
    with pytest.raises(ValueError, match="needs TCG"):
        build_argv(cfg(accel="kvm", clock="icount"))


def test_warm_reset_lets_a_guest_reboot_reset_the_machine():
    assert "-no-reboot" not in build_argv(cfg(warm_reset=True))


def test_warm_reset_phases_expect_the_panic_then_a_second_boot():
    from rig.vm.phases import warm_reset_phases
    phases = warm_reset_phases()
    names = [p.name for p in phases]
    assert names == ["firmware", "kernel", "panic", "reboot firmware", "reboot kernel",
                     "init", "exit"]
    assert [p.name for p in phases if p.panic_ends_it] == ["panic"]


def test_qmp_socket_moves_to_the_private_runtime_dir_when_the_run_dir_is_too_deep(tmp_path):
    from rig import rundir
    short = cfg(run_dir=tmp_path / "r")
    assert short.qmp_socket == tmp_path / "r" / "qmp.sock"
    deep = cfg(run_dir=tmp_path / ("d" * 120))
    assert len(str(deep.qmp_socket)) < 108 and deep.qmp_socket.name.startswith("qmp-")
    assert deep.qmp_socket.parent == rundir.runtime_dir()
    assert oct(deep.qmp_socket.parent.stat().st_mode & 0o777) == "0o700"
    assert deep.qmp_socket == cfg(run_dir=tmp_path / ("d" * 120)).qmp_socket
