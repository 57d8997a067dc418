"""A snapshot template's saved VM as an image a remote host loads by path.

A local restore hands QEMU the template's migration stream as a file
descriptor (rig.vm.snapshot); libvirt's monitor passthrough carries no
descriptors, and QEMU 7.2 has no file: migration. What QEMU loads by path
is an internal snapshot of a qcow2 image (QMP snapshot-load, into a QEMU
started paused). So the template's state is converted once, here: a local
QEMU of the same machine loads the vmstate as a restore does and saves it
with snapshot-save into a qcow2 image (cache step state-image-FLAVOR,
keyed by the template). A restore from it gives the same evidence, byte
for byte, as a restore from the vmstate (rig/tests/test_remote_backend.py).

The qcow2 image sits behind a 4 KiB header inside a file libvirt sees as
raw: a host copies the image for each run (loading a snapshot writes the
image), and libvirt copies a volume it recognises as qcow2 with qemu-img
convert, which drops internal snapshots, or not at all without qemu-img.
QEMU opens it as a raw node at offset 4096 with the qcow2 node above.
"""
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

from rig.artifacts.cache import Step, ensure, sha256_bytes, sha256_file
from rig.vm.machine import Machine
from rig.vm.qemu_argv import MachineConfig
from rig.vm.qmp import QMPError

HEADER_BYTES = 4096
HEADER = b"printk-rig VM state: a qcow2 image at offset 4096, internal snapshot 'rig'\n"
TAG = "rig"
FILE_NODE, RAW_NODE, NODE = "rigstate-file", "rigstate-raw", "rigstate"
IMAGE = "state.img"
RECIPE = "v1: vmstate loaded by fd, snapshot-save to qcow2 behind a 4 KiB header"
JOB_TIMEOUT_S = 120.0


def open_nodes(qmp, path: str) -> None:
    """The image's nodes in a running QEMU: file, raw window, qcow2. No
    guest device uses them: the guest sees nothing of the image."""
    qmp.execute("blockdev-add", {"driver": "file", "filename": path, "node-name": FILE_NODE})
    qmp.execute("blockdev-add", {"driver": "raw", "file": FILE_NODE, "offset": HEADER_BYTES,
                                 "node-name": RAW_NODE})


def run_job(qmp, command: str, args: dict, what: str) -> None:
    """Start a QMP job and wait until it concludes; QMPError on its error."""
    job = f"rig-{command}"
    qmp.execute(command, {"job-id": job, **args})
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        for j in qmp.execute("query-jobs") or []:
            if j.get("id") == job and j.get("status") == "concluded":
                qmp.execute("job-dismiss", {"id": job})
                if j.get("error"):
                    raise QMPError(f"{what}: {j['error']}")
                return
        time.sleep(0.02)
    raise QMPError(f"{what}: the {command} job did not end within {JOB_TIMEOUT_S:.0f} s")


def load(qmp, path: str) -> None:
    """Load the image's snapshot into a QEMU started paused (-S); it stays paused."""
    open_nodes(qmp, path)
    qmp.execute("blockdev-add", {"driver": "qcow2", "file": RAW_NODE, "node-name": NODE})
    run_job(qmp, "snapshot-load", {"tag": TAG, "vmstate": NODE, "devices": [NODE]},
            f"loading the saved VM from {path}")


def step(snap_dir: Path) -> Step:
    template = json.loads((snap_dir / "manifest.json").read_text())
    flavor = template["step"][len("snapshot-"):]
    return Step(f"state-image-{flavor}", {"template": template["key"],
                                          "vmstate": template["outputs"]["vmstate_sha256"],
                                          "recipe": sha256_bytes(RECIPE.encode())[:16]})


def image(snap_dir: Path, restore_cfg: MachineConfig) -> Path:
    """The state image of the template in snap_dir, converted on a cache
    miss by a local QEMU of restore_cfg's machine."""
    st = step(snap_dir)
    ensure(st, lambda out: convert(out, snap_dir / "vmstate", restore_cfg))
    return st.dir / IMAGE


def convert(out: Path, vmstate: Path, restore_cfg: MachineConfig) -> dict:
    work = out / "load"
    work.mkdir(parents=True)
    path = out / IMAGE
    path.write_bytes(HEADER.ljust(HEADER_BYTES, b"\0"))
    cfg = replace(restore_cfg, run_dir=work)
    with Machine(cfg, []) as m:
        m.open_qmp()
        m.load_state(vmstate)
        open_nodes(m.qmp, str(path))
        run_job(m.qmp, "blockdev-create", {"options": {"driver": "qcow2", "file": RAW_NODE,
                                                        "size": 0}},
                f"creating the qcow2 image in {path}")
        m.qmp.execute("blockdev-add", {"driver": "qcow2", "file": RAW_NODE, "node-name": NODE})
        run_job(m.qmp, "snapshot-save", {"tag": TAG, "vmstate": NODE, "devices": [NODE]},
                f"saving the VM into {path}")
        for node in (NODE, RAW_NODE, FILE_NODE):       # closing flushes the image
            m.qmp.execute("blockdev-del", {"node-name": node})
    shutil.rmtree(work)
    return {"image": IMAGE, "image_sha256": sha256_file(path),
            "image_bytes": path.stat().st_size}
