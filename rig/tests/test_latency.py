"""The latency tracer's reports (rig.evidence.latency), on the side-channel
section of a real debug-profile run (patched-debug-s13.latency: S13 on the
patched flavor; five interrupt handlers of 24-45 ms on CPU 1, each come in
as the printer thread re-enabled interrupts)."""
from pathlib import Path

from rig.evidence import latency

DATA = Path(__file__).parent / "data"
S13 = (DATA / "patched-debug-s13.latency").read_text()

PRINTER_REPORT = """\
#### report notifications=2
# tracer: irqsoff
#
# latency: 4656 us, #4/4, CPU#0 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:2)
#    -----------------
#    | task: pr/ttyS0-27 (uid:0 nice:-20 policy:0 rt_prio:0)
#    -----------------
#  => started at: univ8250_console_device_lock
#  => ended at:   univ8250_console_device_unlock
#
pr/ttyS0-27        0d....    4us#: _raw_spin_lock_irqsave <-univ8250_console_device_lock
pr/ttyS0-27        0dn.1. 4651us+: _raw_spin_unlock_irqrestore <-univ8250_console_device_unlock
pr/ttyS0-27        0dn.1. 4804us : <stack trace>
 => univ8250_console_device_unlock
 => nbcon_emit_one
 => nbcon_kthread_func
 => kthread
#### state current_tracer=irqsoff tracing_on=0 tracing_thresh=1000 tracing_max_latency=4656
"""


def test_a_real_runs_reports_parse_with_length_cpu_task_and_stack():
    stretches = latency.parse(S13)
    assert [s.us for s in stretches] == [44934, 40785, 45250, 24033, 43829]
    assert {s.cpu for s in stretches} == {1}
    first = stretches[0]
    assert (first.tracer, first.task, first.started_at, first.ended_at) == \
        ("irqsoff", "pr/ttyS0-27", "common_interrupt", "common_interrupt")
    assert first.stack[:4] == ["common_interrupt", "asm_common_interrupt",
                               "_raw_spin_unlock_irqrestore", "univ8250_console_device_unlock"]
    assert first.functions == ["irqentry_enter", "irqentry_exit", "tracer_hardirqs_on"]


def test_an_interrupt_that_came_into_console_code_is_not_console_code():
    """Below the interrupt entry is the printer the handler interrupted: the
    stretch is the handler's."""
    assert all(s.console_function() is None for s in latency.parse(S13))


def test_a_stretch_begun_by_the_console_driver_is_console_code():
    (stretch,) = latency.parse(PRINTER_REPORT)
    assert stretch.console_function() == "univ8250_console_device_lock"
    assert stretch.notifications == 2
    assert stretch.describe() == ("4656 us of interrupts off on CPU 0 (pr/ttyS0-27), from "
                                  "univ8250_console_device_lock to univ8250_console_device_unlock")


def test_the_state_line_gives_the_tracers_settings_at_the_end():
    assert latency.state(S13) == {"current_tracer": "irqsoff", "tracing_on": "1",
                                  "tracing_thresh": "20000", "tracing_max_latency": "43829"}
    assert latency.state(PRINTER_REPORT)["tracing_on"] == "0"
    assert latency.state("#### report notifications=1\n") == {}


def test_the_bound_is_two_of_the_longest_lines_at_the_console_rate_plus_the_wait():
    char_ns = 10 * 1e9 / 115200                 # 86.8 us
    assert latency.bound_ns(100, char_ns) == int(200 * char_ns) + 3_000_000
    assert latency.bound_ns(0, char_ns) == latency.MARGIN_NS


def test_an_nmi_stretch_is_the_handler_the_kernels_duration_check_names():
    # The mutant cpu-sync-releaser-writes-all, debug profile (2026-12-07): the
    # backtrace NMI on CPU 0 spun for the cpu_sync while CPU 1 wrote its whole
    # backtrace; the tracer's report only says exc_nmi to exc_nmi.
    import lzma
    stretches = latency.parse((DATA / "patched-debug-tracer-nmi.latency").read_text())
    assert [(s.us, s.cpu, s.started_at, s.ended_at) for s in stretches] == [
        (168697, 0, "exc_nmi", "exc_nmi")]
    assert stretches[0].console_function() is None
    console = lzma.decompress((DATA / "patched-debug-tracer-nmi.console.xz").read_bytes())
    latency.name_nmi_handlers(stretches, console.decode().splitlines())
    assert stretches[0].console_function() == "nmi_cpu_backtrace_handler"
    # Another CPU's, or a handler of another length, is not this stretch's.
    for line in ("[   13.554207] 001: INFO: NMI handler (nmi_cpu_backtrace_handler) took too "
                 "long to run: 168.394 msecs",
                 "[   13.554207] 000: INFO: NMI handler (nmi_cpu_backtrace_handler) took too "
                 "long to run: 160.394 msecs"):
        other = latency.parse((DATA / "patched-debug-tracer-nmi.latency").read_text())
        latency.name_nmi_handlers(other, [line])
        assert other[0].nmi_handler == ""
