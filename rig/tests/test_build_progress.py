"""Build progress: how far a long build is, out of which total, and the time
left; a first kernel build's total comes from its tree's Kbuild makefiles."""
import pytest

from rig.artifacts import built as artifacts
from rig.artifacts.kbuild_plan import planned_commands
from rig.artifacts.kbuild_reuse import compiled_everything
from rig.artifacts.runner import kbuild_done, kbuild_progress, ninja_progress

KBUILD_LOG = """  SYNC    include/config/auto.conf
  HOSTCC  scripts/basic/fixdep
  CC      init/main.o
  CC      init/version.o
  AR      init/built-in.a
  CC      kernel/printk/printk.o
  LD      vmlinux.o
"""


def test_kbuild_progress_counts_objects_and_directories_against_the_total(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(KBUILD_LOG)
    assert kbuild_done(log) == (4, None)
    line = kbuild_progress(40, "the last build of this step").line(log, 30.0)
    assert line == ("4/40 objects and directories (10%) (total from the last build of this "
                    "step), 0m30s so far, about 4m30s left")


def test_an_estimated_total_never_claims_the_end_before_make_does(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(KBUILD_LOG * 3)
    assert "12/10 objects and directories (99%)" in kbuild_progress(10, "plan").line(log, 9)


def test_without_a_total_the_count_and_the_time_so_far(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(KBUILD_LOG)
    assert kbuild_progress(None).line(log, 75) == "4 objects and directories, 1m15s so far"


def test_ninja_states_its_own_total(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("[1/800] Compiling C object a.o\n[200/800] Compiling C object b.o\n")
    assert ninja_progress.line(log, 60.0) == ("200/800 ninja steps (25%), 1m00s so far, "
                                              "about 3m00s left")


def test_the_plan_follows_enabled_lists_composites_and_subdirectories(tmp_path):
    (tmp_path / "Kbuild").write_text("obj-y += init/ kernel/\nobj-$(CONFIG_OFF) += off/\n")
    (tmp_path / "Makefile").write_text("libs-y := lib/\n")
    (tmp_path / "init").mkdir()
    (tmp_path / "init" / "Makefile").write_text("obj-y := main.o \\\n\tversion.o # two\n")
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "Makefile").write_text(
        "obj-y += fork.o printk/\nobj-$(CONFIG_ON) += both.o\nboth-y := a.o b.o\n"
        "obj-$(CONFIG_MOD) += m.o\n")
    (tmp_path / "kernel" / "printk").mkdir()
    (tmp_path / "kernel" / "printk" / "Makefile").write_text("obj-y = printk.o\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "Makefile").write_text("lib-y := sort.o\n")
    (tmp_path / "off").mkdir()
    (tmp_path / "off" / "Makefile").write_text("obj-y := never.o\n")
    config = tmp_path / ".config"
    config.write_text("CONFIG_ON=y\nCONFIG_MOD=m\n# CONFIG_OFF is not set\n")
    # objects: main version | fork a b m | printk | sort = 8; directories: 5
    assert planned_commands(tmp_path, config) == 8 + 5


@pytest.mark.builds
def test_the_plan_of_the_real_tree_is_within_ten_percent_of_its_build():
    """On a flavor's kernel the rig compiled from the fresh source (the
    other one may have started from its tree, rig.artifacts.kbuild_reuse):
    the plan from its tree and .config against the objects and directories
    its build log shows."""
    kernels = [artifacts.kernel(flavor, build=True) for flavor in ("vanilla", "patched")]
    fresh = [k for k in kernels if compiled_everything(k["outputs"])]
    if not fresh:
        pytest.skip("both flavors' kernels were built from other builds' trees: "
                    "no build log of a whole tree to hold the plan against")
    kernel = fresh[0]
    tree = kernel.path("source_dir")
    done, _ = kbuild_done(tree.parent / "build.log")
    plan = planned_commands(tree, kernel.path("build_dir") / ".config")
    assert abs(plan - done) <= done // 10, f"plan {plan}, build {done} objects and directories"


def test_the_series_check_says_the_time_left_from_its_incremental_builds():
    from rig.artifacts.series_check import time_left
    assert time_left([{"build_seconds": 600.0}], 11) == ""     # only the full build so far
    done = [{"build_seconds": 600.0}, {"build_seconds": 40.0}, {"build_seconds": 20.0}]
    assert time_left(done, 11) == " (about 4m00s left)"          # 8 patches at 30 s
