"""pytest --kernel (a user's bzImage and build directory as the flavor
"custom") and pytest-xdist runs: the checks that name what a user's build
lacks, and real suite runs in a subprocess, on the rig's own patched build
given as if it were the user's, and on two workers at once."""
import json
from pathlib import Path

import pytest

from rig import config
from rig.artifacts import built as artifacts, custom
from rig.artifacts.runner import BuildError
from rig.inputs import BadInput
from rig.tests.helpers import run_suite


def bzimage_bytes(payload: bytes) -> bytes:
    """Bytes with the x86 setup header's boot flag and magic, then payload."""
    head = bytearray(0x206)
    head[0x1FE:0x200], head[0x202:0x206] = b"\x55\xaa", b"HdrS"
    return bytes(head) + payload


def fake_build(tmp_path, config="CONFIG_PRINTK=y\n", symvers=True):
    build = tmp_path / "linux"
    (build / "arch/x86/boot").mkdir(parents=True)
    (build / "include/config").mkdir(parents=True)
    image = build / "arch/x86/boot/bzImage"
    image.write_bytes(bzimage_bytes(b"not really a kernel"))
    (build / ".config").write_text(config)
    (build / "include/config/kernel.release").write_text("6.12.0-mine\n")
    if symvers:
        (build / "Module.symvers").write_text("")
    return image, build


def test_build_dir_is_found_above_the_image(tmp_path):
    image, build = fake_build(tmp_path)
    assert custom.build_dir_of(image) == build.resolve()
    other = tmp_path / "vmlinuz"
    other.write_bytes(b"")
    with pytest.raises(BuildError, match="--kernel-build"):
        custom.build_dir_of(other)


def test_missing_image_and_module_symvers_are_named(tmp_path, monkeypatch):
    image, build = fake_build(tmp_path, symvers=False)
    monkeypatch.setenv(config.VARIABLES["custom_kernel"], str(tmp_path / "nope"))
    monkeypatch.delenv(config.VARIABLES["custom_build"], raising=False)
    with pytest.raises(BadInput, match=r"^kernel image .*/nope: no such file$"):
        custom.kernel()
    with pytest.raises(BuildError, match="no Module.symvers .*make modules"):
        custom.check(image, build)


def test_missing_config_options_are_named_with_the_reason(tmp_path):
    image, build = fake_build(tmp_path, config="CONFIG_PRINTK=y\nCONFIG_SERIAL_8250=y\n"
                                               "# CONFIG_MODULES is not set\n")
    with pytest.raises(BuildError) as e:
        custom.check(image, build)
    assert "CONFIG_MODULES (the test module is loaded at start)" in str(e.value)
    assert "CONFIG_SERIAL_8250_CONSOLE" in str(e.value)
    assert "CONFIG_SERIAL_8250 (" not in str(e.value)


def test_key_follows_the_image(tmp_path, monkeypatch):
    image, build = fake_build(tmp_path, config="".join(f"{n}=y\n" for n in custom.REQUIRED))
    monkeypatch.setenv(config.VARIABLES["custom_kernel"], str(image))
    monkeypatch.delenv(config.VARIABLES["custom_build"], raising=False)
    first = custom.kernel()
    assert first["outputs"]["kernel_release"] == "6.12.0-mine"
    assert artifacts.Artifact(first).path("bzImage") == image.resolve()
    image.write_bytes(bzimage_bytes(b"rebuilt"))
    assert custom.kernel()["key"] != first["key"]


@pytest.mark.boots
def test_scenarios_run_on_a_user_kernel(tmp_path):
    """The patched build, handed over as a user's bzImage and build directory."""
    kernel = artifacts.kernel("patched")
    got, proc = run_suite(tmp_path, [
        "--kernel", str(kernel.path("bzImage")), "--kernel-build", str(kernel.path("build_dir")),
        "scenarios/test_boot.py", "scenarios/test_s02_cpu_tagging.py"])
    assert got and all(v == "passed" for v in got.values()), (got, proc.stdout[-3000:])
    assert all(t.endswith("[custom]") for t in got), got
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/summary.json")]
    assert summaries and all(s["flavor"] == "custom" for s in summaries)
    assert {s["kernel"]["release"] for s in summaries} == {kernel["outputs"]["kernel_release"]}


@pytest.mark.boots
def test_a_vanilla_user_kernel_is_judged_like_vanilla(tmp_path):
    kernel = artifacts.kernel("vanilla")
    got, proc = run_suite(tmp_path, ["--kernel", str(kernel.path("bzImage")),
                                     "--kernel-build", str(kernel.path("build_dir")),
                                     "--kernel-like", "vanilla",
                                     "scenarios/test_s02_cpu_tagging.py"])
    assert set(got.values()) == {"xfailed"}, (got, proc.stdout[-3000:])


@pytest.mark.boots
def test_two_xdist_workers_do_not_collide(tmp_path):
    # Scenarios on the icount clock: the two workers boot at the same time
    # (host-clock boots would take turns on the host lock).
    got, proc = run_suite(tmp_path, ["-n", "2", "scenarios/test_s03_emergency_immediacy.py",
                                     "scenarios/test_s07_nmi_mid_line.py"])
    assert len(got) == 4 and set(got.values()) == {"passed", "xfailed"}, (
        got, proc.stdout[-3000:])
    runs = sorted(Path(tmp_path / "runs").iterdir())
    assert len(runs) == 4, f"run directories: {[r.name for r in runs]}"
    pids = {r.name.rsplit("-", 2)[1] for r in runs}     # <stamp>-<name>-<flavor>-<pid>-<n>
    assert len(pids) == 2, f"not two workers: run directories {[r.name for r in runs]}"
    assert all((r / "summary.json").is_file() and (r / "uart.log").is_file() for r in runs)


def test_a_scenarios_own_config_need_names_the_option_and_the_file(tmp_path):
    with pytest.raises(BuildError, match=r"has no .*\.config to tell: give --kernel-build"):
        custom.require_option(tmp_path, "CONFIG_SERIAL_EARLYCON", "S23 boots with earlycon")
    (tmp_path / ".config").write_text("CONFIG_SERIAL_8250=y\n# CONFIG_SERIAL_EARLYCON is not set\n")
    with pytest.raises(BuildError) as e:
        custom.require_option(tmp_path, "CONFIG_SERIAL_EARLYCON", "S23 boots with earlycon")
    assert str(e.value).startswith(f"CONFIG_SERIAL_EARLYCON is not set in {tmp_path}/.config: "
                                   "S23 boots with earlycon. Enable it")
    custom.require_option(tmp_path, "CONFIG_SERIAL_8250", "the console")
