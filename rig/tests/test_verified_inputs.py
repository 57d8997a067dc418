"""Every cached file a boot uses is checked against the sha256 its manifest
recorded (rig.artifacts.cache), on real boots and a real cache: a byte
flipped in the kernel, the initramfs or QEMU stops the boot before QEMU
starts, names the entry and the file, removes the entry and says which
command builds it again (exit 2); a damaged manifest likewise. The
firmware and a snapshot template, which any boot can make again, are
rebuilt, and the run uses the new copy, never the damaged one.

Each test works on a cache of its own: copies of the real cache's entries
(their manifest and recorded files), so that flipping a byte there leaves
the real cache alone."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rig import paths
from rig.artifacts import initramfs, qemu
from rig.artifacts.cache import MANIFEST, sha256_file
from rig.artifacts.firmware import firmware_step
from rig.artifacts.kernel import kernel_step
from rig.tests.test_leftovers import processes_naming

pytestmark = pytest.mark.boots
FLAVOR = "patched"


def copy_entry(step, cache: Path) -> Path:
    """The entry's manifest and recorded files, copied into cache."""
    entry = cache / step.name / step.key
    m = json.loads(step.manifest_path.read_text())
    for name in m.get("files", {}):
        rel = m["outputs"][name]
        (entry / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(step.dir / rel, entry / rel)
    (entry / MANIFEST).write_text(step.manifest_path.read_text())
    return entry


@pytest.fixture
def own_cache(tmp_path):
    """A cache holding copies of the kernel, initramfs and QEMU entries."""
    cache = tmp_path / "cache"
    steps = {"kernel": kernel_step(FLAVOR), "initramfs": initramfs.initramfs_step(FLAVOR),
             "qemu": qemu.qemu_step()}
    for step in steps.values():
        if not step.is_built():
            pytest.skip(f"needs {step.name} built (make build)")
        step.manifest()             # the real entry is whole, its files recorded
        copy_entry(step, cache)
    src = paths.cache_root() / "src"
    (cache / "src").symlink_to(src)       # QEMU's source memo: no apt call per test
    return cache, steps


def rig_boot(cache: Path, runs: Path, *args):
    proc = subprocess.run([sys.executable, "-m", "rig", "boot", "--quiet", "--flavor", FLAVOR,
                           "--clock", "icount", *args], cwd=paths.REPO,
                          env={**os.environ, "RIG_CACHE": str(cache), "RIG_RUNS": str(runs)},
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def flip(path: Path, offset: int, count: int = 64) -> None:
    """count bytes flipped in place from offset: same size, same name."""
    with open(path, "r+b") as f:
        f.seek(offset)
        data = f.read(count)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in data))


def entry_file(cache: Path, step, name: str) -> Path:
    m = json.loads((cache / step.name / step.key / MANIFEST).read_text())
    return cache / step.name / step.key / m["outputs"][name]


def assert_nothing_ran(runs: Path, cache: Path) -> None:
    """No QEMU started, no run directory written, nothing left running."""
    made = list(runs.iterdir()) if runs.exists() else []
    assert made == [], f"a run was written: {made}"
    assert processes_naming(str(cache)) == [], "left running"


@pytest.mark.parametrize("what,output,make", [
    ("kernel", "bzImage", "make kernel"),
    ("initramfs", "initramfs", "make initramfs"),
    ("qemu", "qemu-system-x86_64", "make qemu"),
])
def test_a_flipped_byte_in_a_built_input_stops_the_boot_by_name(own_cache, tmp_path, what,
                                                                output, make):
    cache, steps = own_cache
    step = steps[what]
    target = entry_file(cache, step, output)
    flip(target, target.stat().st_size // 2)
    rc, out = rig_boot(cache, tmp_path / "runs")
    assert rc == 2, out
    first = next(ln for ln in out.splitlines() if ln.startswith("error: "))
    assert first.startswith(f"error: [{step.name}] cache entry {cache / step.name / step.key} "
                            f"is damaged: its {output} ({target}) has sha256 "), out
    assert "when it was built: changed since" in first and f"`{make}`" in first, out
    assert "Traceback" not in out
    assert not (cache / step.name / step.key).exists(), "the damaged entry is still there"
    assert_nothing_ran(tmp_path / "runs", cache)


def test_a_damaged_manifest_stops_the_boot_by_name(own_cache, tmp_path):
    cache, steps = own_cache
    manifest = cache / steps["kernel"].name / steps["kernel"].key / MANIFEST
    manifest.write_text(manifest.read_text()[:100])
    rc, out = rig_boot(cache, tmp_path / "runs")
    assert rc == 2, out
    assert f"error: [kernel-{FLAVOR}] cache entry {manifest.parent} is damaged: manifest.json " \
           "is not valid JSON" in out, out
    assert "Traceback" not in out
    assert_nothing_ran(tmp_path / "runs", cache)


def test_damaged_firmware_is_copied_again_and_the_boot_loads_the_copy(own_cache, tmp_path):
    cache, _ = own_cache
    step = firmware_step()
    assert rig_boot(cache, tmp_path / "runs1", "--snapshot", "off")[0] == 0
    bios = cache / step.name / step.key / "bios-256k.bin"
    flip(bios, 4096)
    rc, out = rig_boot(cache, tmp_path / "runs2", "--snapshot", "off")
    assert rc == 0, out
    assert f"[firmware] cache entry {bios.parent} is damaged: its bios-256k.bin" in out, out
    assert "removing it and building again" in out
    (run,) = (tmp_path / "runs2").iterdir()
    b = json.loads((run / "bundle.json").read_text())
    assert b["inputs"]["firmware"]["files"]["bios-256k.bin"] == \
        sha256_file(Path("/usr/share/seabios/bios-256k.bin"))


def test_a_damaged_snapshot_template_is_made_again_never_restored(own_cache, tmp_path):
    cache, _ = own_cache
    rc, out = rig_boot(cache, tmp_path / "runs1")
    assert rc == 0, out
    (template,) = (cache / f"snapshot-{FLAVOR}").glob("*/vmstate")
    good = sha256_file(template)
    for offset in (4096, template.stat().st_size // 3, template.stat().st_size // 2,
                   template.stat().st_size - 4096):
        flip(template, offset)
    damaged = sha256_file(template)
    rc, out = rig_boot(cache, tmp_path / "runs2")
    assert rc == 0, out
    assert f"[snapshot-{FLAVOR}] cache entry {template.parent} is damaged: its vmstate " \
           f"({template}) has sha256 {damaged[:16]}..., {good[:16]}... when it was built" in out
    assert "removing it and building again" in out
    (run,) = (tmp_path / "runs2").iterdir()
    used = json.loads((run / "bundle.json").read_text())["inputs"]["snapshot"]["sha256"]
    assert used == sha256_file(template) != damaged
