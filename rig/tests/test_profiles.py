"""Kernel profiles (docs/profiles.md): their fragments, build keys and names,
and where a run says which profile it was on. The boots of each profile are
in scenarios/ (make test-profiles)."""
import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rig import config, paths
from rig.artifacts import kernel, kbuild_reuse
from rig.artifacts.runner import BuildError
from rig.evidence import golden, properties
from rig.tools import results

DATA = Path(__file__).parent / "data"
EVERY_STATUS = DATA / "pytest-every-status.junit.xml"


@pytest.fixture
def src(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel.KernelSource, "digest", lambda self: "fixed-source")
    return kernel.KernelSource("tree", tmp_path, "tree for test")


def keys(src):
    return {f: kernel.kernel_step(f, src) for f in paths.FLAVORS}


def test_each_profile_has_its_own_kernels_and_the_default_keeps_its_keys(src):
    with config.use(profile=None):
        unset = keys(src)
    with config.use(profile="default"):
        default = keys(src)
    assert {f: s.key for f, s in unset.items()} == {f: s.key for f, s in default.items()}
    assert "profile fragment" not in default["patched"].inputs
    seen = {s.key for s in default.values()}
    for name in ("rt", "debug"):
        with config.use(profile=name):
            steps = keys(src)
        for flavor, step in steps.items():
            assert step.name == f"kernel-{flavor}-{name}"
            assert step.inputs["profile fragment"].startswith(f"profile-{name}.config ")
            assert step.key not in seen
            seen.add(step.key)


def test_a_build_reuses_only_a_tree_of_its_own_profile():
    # The profile fragment is one of the inputs a base must share.
    assert "profile fragment" in kbuild_reuse.SAME_INPUTS


def test_fragments_merge_in_order_and_each_option_is_checked():
    with config.use(profile="rt"):
        fragments = kernel.profile_fragments()
    assert [f.name for f in fragments] == ["rig.config", "profile-rt.config"]
    wanted = "\n".join(f.read_text() for f in fragments)
    merged = kernel.parse_fragment(wanted)
    assert merged["CONFIG_PREEMPT_RT"] == "y" and merged["CONFIG_PREEMPT"] == "n"
    got = "CONFIG_PREEMPT_RT=y\n# CONFIG_PREEMPT is not set\nCONFIG_PRINTK=y\n"
    bad = kernel.config_mismatches(wanted, got)
    assert "CONFIG_PREEMPT: fragment wants y, .config has n" not in bad
    assert any(b.startswith("CONFIG_SMP:") for b in bad)
    with config.use(profile="debug"):
        debug = kernel.parse_fragment("\n".join(f.read_text()
                                                for f in kernel.profile_fragments()))
    for option in ("CONFIG_PROVE_LOCKING", "CONFIG_PROVE_RAW_LOCK_NESTING",
                   "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_SPINLOCK",
                   "CONFIG_DEBUG_PREEMPT", "CONFIG_IRQSOFF_TRACER", "CONFIG_PREEMPT_TRACER"):
        assert debug[option] == "y", option


def test_an_unknown_or_missing_profile_is_named(tmp_path, monkeypatch):
    with config.use(profile="fast"):
        with pytest.raises(BuildError, match="unknown kernel profile 'fast': choose one of "
                                             "default, rt, debug"):
            kernel.profile_fragments()
    monkeypatch.setattr(paths, "KERNEL_PATCHES", tmp_path)
    with config.use(profile="rt"):
        with pytest.raises(BuildError, match=r"kernel profile rt: .*profile-rt.config is "
                                             "missing"):
            kernel.profile_fragments()


def test_golden_files_of_a_profile_are_its_own():
    name = golden.file_name("test_s.py", "test_x", {"flavor": "patched"},
                            paths.kernel_name("patched", "rt"), 1)
    assert name.name == "test_x.patched-rt.txt"
    assert golden.file_name("test_s.py", "test_x", {}, paths.kernel_name("patched", "default"),
                            1).name == "test_x.patched.txt"
    head = golden.header("t::x", 1, {"flavor": "patched", "profile": "debug"})
    assert head[0].endswith("flavor patched, profile debug")
    # A golden file of another profile is named as such, not compared.
    other = golden.header("t::x", 1, {"flavor": "patched", "profile": "default"})
    assert head[0] != other[0] and golden.IDENTITY_LINES >= 1


def test_results_say_the_profile(tmp_path):
    junit = tmp_path / "junit.xml"
    text = EVERY_STATUS.read_text()
    at = text.index("<testcase")
    junit.write_text(text[:at] + '<properties><property name="profile" value="rt"/>'
                     '</properties>' + text[at:])
    written = results.write(junit, tmp_path)
    ktap = written["results.ktap"].read_text().splitlines()
    assert ktap[3:5] == ["    # Subtest: printk-rig", "    # kernel profile: rt"]
    assert json.loads(written["results.json"].read_text())["profile"] == "rt"


# A report of PROVE_RAW_LOCK_NESTING as lockdep prints it (format of
# kernel/locking/lockdep.c:print_lock_invalid_wait_context in 6.12).
INVALID_WAIT = """\
[    1.000000] =============================
[    1.000000] [ BUG: Invalid wait context ]
[    1.000000] 6.12.118-rig-patched-debug #1 Not tainted
[    1.000000] -----------------------------
[    1.000000] swapper/0/1 is trying to lock:
[    1.000000] ffffffff82a0b0b8 (&port_lock_key){....}-{3:3}, at: serial8250_console_write+0x5e/0x4d0
[    1.000000] other info that might help us debug this:
[    1.000000] Call Trace:
[    1.000000]  <TASK>
[    1.000000]  dump_stack_lvl+0x5b/0x80
[    1.000000]  __lock_acquire+0x8a3/0x2100
[    1.000000]  lock_acquire+0xc4/0x2d0
[    1.000000]  _raw_spin_lock_irqsave+0x43/0x60
[    1.000000]  serial8250_console_write+0x5e/0x4d0
[    1.000000]  console_flush_all+0x1f3/0x440
"""


@pytest.mark.parametrize("text, title", [
    (INVALID_WAIT, "BUG: Invalid wait context in serial8250_console_write"),
    ("[    2.000000] BUG: sleeping function called from invalid context at kernel/locking/"
     "spinlock_rt.c:48\n[    2.000000] Call Trace:\n[    2.000000]  rt_spin_lock+0x40/0x60\n"
     "[    2.000000]  nbcon_emit_next_record+0x10/0x90\n",
     "BUG: sleeping function called from invalid context in rt_spin_lock"),
    ("[    3.000000] WARNING: bad unlock balance detected!\n", "WARNING: bad unlock balance"),
    ("[    3.000000] BUG: using smp_processor_id() in preemptible [00000000] code: sh/1\n",
     "BUG: using smp_processor_id() in preemptible code"),
])
def test_a_lock_report_fails_every_run(text, title):
    check = properties.no_lock_report(text.splitlines(), "(run directory R)")
    assert not check.ok
    assert check.message.startswith(f"{properties.LOCK_REPORT}: {title}")
    assert check.message.endswith("(run directory R)")


def test_other_reports_are_the_scenarios_to_judge():
    text = ("[    1.000000] WARNING: CPU: 1 PID: 1 at kernel/x.c:1 f+0x1/0x2\n"
            "[    1.000000] Kernel panic - not syncing: rig: test panic\n"
            "[    1.000000] INFO: NMI handler (nmi_cpu_backtrace_handler) took too long\n")
    assert properties.no_lock_report(text.splitlines()).ok


def test_x86_panic_in_nmi_lock_report_is_left_aside_by_its_frames_only():
    # The patched flavor's panic in NMI on the debug profile (2026-12-07): the
    # NMI came in while CPU 1 was inside lockdep, and x86's stop of the other
    # CPUs took nmi_desc's lock in NMI.
    lines = lzma.decompress((DATA / "patched-debug-panic-nmi.console.xz").read_bytes()
                            ).decode().splitlines()
    check = properties.no_lock_report(lines)
    assert check.ok and "inconsistent lock state in __register_nmi_handler at console " \
        "line 479" in check.message and "not printk's" in check.message
    # The same title from any other path is a failure.
    other = [ln for ln in lines if "native_stop_other_cpus" not in ln]
    check = properties.no_lock_report(other)
    assert not check.ok and "inconsistent lock state in __register_nmi_handler" in check.message


def test_the_tracers_own_lock_report_in_nmi_is_left_aside_and_the_stretch_judged():
    # The mutant cpu-sync-releaser-writes-all on the debug profile
    # (2026-12-07): CPU 0's backtrace NMI spun 168 ms for the cpu_sync, and
    # the irqsoff tracer took max_trace_lock in NMI to report it.
    lines = lzma.decompress((DATA / "patched-debug-tracer-nmi.console.xz").read_bytes()
                            ).decode().splitlines()
    check = properties.no_lock_report(lines)
    assert check.ok and "stop_critical_timing at console line 293" in check.message


def test_the_profile_reaches_every_subcommand_and_pytest():
    from rig import cli
    parser = cli.build_parser()
    assert parser.parse_args(["boot", "--profile", "rt"]).profile == "rt"
    assert parser.parse_args(["mutants", "--profile", "debug"]).profile == "debug"
    assert parser.parse_args(["build", "kernel", "--profile", "rt"]).profile == "rt"
    with pytest.raises(SystemExit):
        parser.parse_args(["boot", "--profile", "fast"])
    assert shutil.which("make")


def test_a_profile_adds_the_mutants_only_its_checks_catch():
    default, debug = kernel.mutant_series("default"), kernel.mutant_series("debug")
    assert "hand-lock-in-nmi" in debug and "hand-lock-in-nmi" not in default
    assert debug[:len(default)] == default
    assert set(kernel.all_mutants()) >= set(debug)


def collected(*args) -> list:
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          "--collect-only", "-q", "scenarios", *args],
                         cwd=paths.REPO, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_a_smoke_flavor_keeps_s1_and_the_golden_scenarios_only():
    every = collected("--profile", "rt")
    smoke = collected("--profile", "rt", "--smoke-flavor", "vanilla")
    patched = [t for t in every if "[patched" in t]
    assert patched and [t for t in smoke if "[patched" in t] == patched
    vanilla = [t for t in smoke if "[vanilla" in t]
    assert "scenarios/test_boot.py::test_s1_boot[vanilla]" in vanilla
    golden_vanilla = [t for t in collected("--profile", "rt", "--flavor", "vanilla", "-m", "golden")
                      if "[vanilla" in t]
    assert set(vanilla) == set(golden_vanilla) | {"scenarios/test_boot.py::test_s1_boot[vanilla]"}
    assert len(vanilla) < len([t for t in every if "[vanilla" in t])


def test_only_the_chosen_flavors_tests_run_those_written_for_one_included():
    patched = collected("--profile", "debug", "--flavor", "patched")
    assert patched and not [t for t in patched if "vanilla" in t]
    assert "scenarios/test_kernel_patches.py::test_nmi_error_reaches_the_wire_ahead_of_the_backlog" \
        in patched
    vanilla = collected("--profile", "debug", "--flavor", "vanilla")
    assert ("scenarios/test_kernel_patches.py::"
            "test_vanilla_runs_the_module_and_prints_in_the_callers_context") in vanilla
    assert not [t for t in vanilla if "patched" in t.split("::")[-1]]
    assert len(collected("--profile", "debug")) == len(patched) + len(vanilla)
