"""Where libvirt's unprivileged QEMU reads its inputs and writes its evidence.

libvirtd runs QEMU as its own user (libvirt-qemu on Debian, qemu.conf's
`user`) with its own DAC labels: it cannot enter the harness's build cache
(under a 0700 home) nor its 0700 run directory. So a boot stages, on the
libvirt host's side:

    STAGE_ROOT/inputs/   the QEMU binary, kernel, initramfs and firmware
                         directory, hard links (or copies) of the cache's files
                         named by the file they are
    STAGE_ROOT/runs/X/   a directory of QEMU's user, mode 0700, where QEMU
                         writes the console log, register logs, side channel,
                         trace log and its sockets

STAGE_ROOT and its two directories are root's, mode 0711: QEMU's user can
pass through them to what it is given, and list nothing. The run directory
holds symlinks to the staged evidence while QEMU runs (the harness reads
through them), and the files themselves once the domain is gone. The stage
of a harness that was killed first is removed by the next boot's.
"""
import grp
import hashlib
import os
import pwd
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Tuple

STAGE_ROOT = Path("/var/lib/printk-rig/libvirt")
QEMU_CONF = Path("/etc/libvirt/qemu.conf")
DEFAULT_USER = DEFAULT_GROUP = "libvirt-qemu"      # Debian's build of libvirt
PASS_MODE = 0o711


def qemu_ids(conf: Path = QEMU_CONF) -> Tuple[int, int]:
    """uid and gid libvirtd runs QEMU as (qemu.conf's user and group)."""
    text = conf.read_text() if conf.is_file() else ""

    def setting(name, default):
        m = re.search(rf'^\s*{name}\s*=\s*"([^"]+)"', text, re.M)
        return m.group(1) if m else default
    user, group = setting("user", DEFAULT_USER), setting("group", DEFAULT_GROUP)
    uid = int(user[1:]) if user.startswith("+") else pwd.getpwnam(user).pw_uid
    gid = int(group[1:]) if group.startswith("+") else grp.getgrnam(group).gr_gid
    return uid, gid


def passable(path: Path) -> Path:
    """A root directory others may pass through and not list."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, PASS_MODE)
    return path


def stage_input(path: Path) -> Path:
    """The file as QEMU's user reaches it: a hard link (a copy across
    filesystems) named after the file's identity, made once."""
    st = path.stat()
    ident = hashlib.sha256(f"{path.resolve()}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
                           .encode()).hexdigest()[:16]
    inputs = passable(passable(STAGE_ROOT) / "inputs")
    staged = inputs / f"{ident}-{path.name}"
    if not staged.exists():
        tmp = inputs / f".{staged.name}.{os.getpid()}"
        try:
            os.link(path, tmp)
        except OSError:
            shutil.copy2(path, tmp)
        os.chmod(tmp, st.st_mode | 0o444)      # readable by QEMU's user
        os.replace(tmp, staged)
    return staged


def stage_directory(path: Path, names) -> Path:
    """The files names of a directory (QEMU's -L firmware directory) as
    QEMU's user reaches them: a staged directory of the same file names,
    made once (keyed by those files alone: a cache entry's own files, its
    manifest and .used, change at every use)."""
    files = [path / n for n in sorted(names)]
    ident = hashlib.sha256("".join(f"{f.name}:{f.stat().st_ino}:{f.stat().st_size}:"
                                   f"{f.stat().st_mtime_ns}\n" for f in files)
                           .encode()).hexdigest()[:16]
    inputs = passable(passable(STAGE_ROOT) / "inputs")
    staged = inputs / f"{ident}-{path.name}"
    if not staged.exists():
        tmp = inputs / f".{staged.name}.{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for f in files:
            try:
                os.link(f, tmp / f.name)
            except OSError:
                shutil.copy2(f, tmp / f.name)
            os.chmod(tmp / f.name, f.stat().st_mode | 0o444)
        os.chmod(tmp, 0o755)
        try:
            os.replace(tmp, staged)
        except OSError:             # another boot staged it first
            shutil.rmtree(tmp, ignore_errors=True)
    return staged


HARNESS_PID = "harness.pid"
ORPHAN_AGE_S = 3600          # a stage without a harness pid this old is left over


def prune() -> None:
    """Remove the stage directories of harnesses that are gone (killed
    before they could collect): their domains went with them."""
    runs = STAGE_ROOT / "runs"
    for stage in runs.iterdir() if runs.is_dir() else []:
        try:
            os.kill(int((stage / HARNESS_PID).read_text()), 0)
            continue                    # its harness still runs
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            # No pid yet (being made), or none at all: gone once it is old.
            if time.time() - stage.stat().st_mtime < ORPHAN_AGE_S:
                continue
        shutil.rmtree(stage, ignore_errors=True)


def run_stage(name: str) -> Path:
    """A fresh directory of QEMU's user for one boot's output."""
    prune()
    runs = passable(passable(STAGE_ROOT) / "runs")
    stage = Path(tempfile.mkdtemp(prefix=f"{name[:40]}-", dir=runs))
    (stage / HARNESS_PID).write_text(f"{os.getpid()}\n")
    uid, gid = qemu_ids()
    os.chown(stage, uid, gid)
    return stage


def stage_output(path: Path, stage: Path) -> None:
    """A copy in stage, as QEMU's user's, of a file the run directory
    already holds (a restore's evidence up to the snapshot point, which QEMU
    appends to; init's parameters, which it reads)."""
    if path.is_file() and not path.is_symlink():
        staged = stage / path.name
        shutil.copyfile(path, staged)
        os.chown(staged, *qemu_ids())


def collect(run_dir: Path, stage: Path) -> None:
    """Replace the run directory's symlinks into stage by the files, then
    remove stage."""
    for link in run_dir.iterdir():
        if link.is_symlink() and stage in Path(os.readlink(link)).parents:
            target = Path(os.readlink(link))
            link.unlink()
            if target.is_file():
                shutil.copyfile(target, link)
                os.chmod(link, 0o600)
    shutil.rmtree(stage, ignore_errors=True)
