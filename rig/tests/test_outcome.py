import signal

from rig.protocol import EXIT_FAIL, EXIT_OK
from rig.vm import outcome
from rig.vm.outcome import classify


def cls(**kw):
    args = dict(exit_status=None, term_signal=None, hung_phase=None, last_phase="init",
                qmp_events=[], console_text="")
    args.update(kw)
    return classify(**args)


def test_clean_needs_init_status_through_debug_exit():
    o = cls(exit_status=(EXIT_OK << 1) | 1)
    assert o.cls == "clean"


def test_failed_step_is_guest_error():
    assert cls(exit_status=(EXIT_FAIL << 1) | 1).cls == "guest-error"
    assert cls(exit_status=(0x22 << 1) | 1).cls == "guest-error"


def test_panic_from_pvpanic_event_or_banner():
    ev = [{"event": "GUEST_PANICKED", "data": {"action": "run"}},
          {"event": "SHUTDOWN", "data": {"guest": True, "reason": "guest-reset"}}]
    assert cls(exit_status=0, qmp_events=ev).cls == "panic"
    o = cls(exit_status=0, console_text="[ 1.0] Kernel panic - not syncing: Fatal exception")
    assert o.cls == "panic" and "banner" in o.detail
    # The banner line is in the detail, however long the backtrace after it.
    assert o.detail.endswith(": [ 1.0] Kernel panic - not syncing: Fatal exception")


def test_plain_exit_zero_is_a_reset_not_clean():
    # The ClangBuiltLinux lesson: a reset under -no-reboot must never pass as clean.
    ev = [{"event": "SHUTDOWN", "data": {"guest": True, "reason": "guest-reset"}}]
    o = cls(exit_status=0, qmp_events=ev)
    assert o.cls == "reset" and "guest-reset" in o.detail


def test_hang_names_the_phase():
    o = cls(hung_phase="kernel")
    assert o.cls == "hang" and o.phase == "kernel" and "kernel" in o.detail


def test_hang_after_panic_is_still_a_panic():
    assert cls(hung_phase="exit", console_text="Kernel panic - not syncing: x").cls == "panic"


def test_signal_or_own_error_status_is_qemu_crash():
    o = cls(term_signal=signal.SIGSEGV)
    assert o.cls == "qemu-crash" and o.signal == "SIGSEGV"
    assert cls(exit_status=1).cls == "qemu-crash"


def test_json_has_class_key():
    assert cls(exit_status=(EXIT_OK << 1) | 1).to_json()["class"] == "clean"


def test_hang_and_panic_name_the_first_crash_by_its_title():
    stall = ("[    1.000000] ok\n[   22.000000] rcu: INFO: rcu_preempt detected stalls on "
             "CPUs/tasks:\n[   22.000001]  spin_forever+0x10/0x20\n")
    o = cls(hung_phase="exit", console_text=stall)
    assert o.cls == "hang" and o.detail == ("guest hung in phase exit; first crash: INFO: rcu "
                                            "detected stall in spin_forever (console line 2)")
    oops = ("[    2.000000] BUG: kernel NULL pointer dereference, address: 0000000000000000\n"
            "[    2.000001] RIP: 0010:crash_now+0x43/0x4d [rigprintk]\n"
            "[    2.000002] Kernel panic - not syncing: Fatal exception\n")
    o = cls(exit_status=0, console_text=oops)
    assert o.cls == "panic" and o.detail.endswith(
        "Fatal exception; first crash: BUG: unable to handle kernel NULL pointer dereference in "
        "crash_now (console line 1)")


def test_a_failed_steps_reason_leaves_out_kernel_lines_that_came_out_meanwhile():
    """A real console of CI (2026-12-07): the clocksource's line came out
    between init's reason and its verdict."""
    console = ("[    2.5] 000: rig-init: step run begin\n"
               "[    2.6] 000: rig-init: step run: /sys/module/rigprintk/parameters/run: "
               "No such device\n"
               "[    2.7] 001: clocksource: tsc: mask: 0xffffffffffffffff max_cycles: "
               "0x1cd42e4dffb, max_idle_ns: 881590591483 ns\n"
               "[    2.8] 000: rig-init: step run failed\n")
    assert outcome.failed_step_reason(console) == (
        "rig-init: step run: /sys/module/rigprintk/parameters/run: No such device; "
        "rig-init: step run failed")


def test_a_module_that_does_not_load_keeps_the_kernels_reason():
    console = ("[    2.5] 000: rigprintk: Unknown symbol nbcon_foo (err -2)\n"
               "[    2.6] 000: rig-init: module: finit_module: Unknown symbol in module\n"
               "[    2.8] 000: rig-init: step module failed\n")
    assert outcome.failed_step_reason(console).startswith("rigprintk: Unknown symbol")
