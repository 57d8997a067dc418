"""Writer for the "newc" cpio format the kernel unpacks as an initramfs.

Written here rather than shelled out so that the archive is reproducible
(fixed owners, times and inode numbers, sorted entries) and needs no root for
device nodes.
"""
import stat
from dataclasses import dataclass
from typing import List

TRAILER = "TRAILER!!!"


@dataclass
class Entry:
    name: str          # path inside the archive, without a leading /
    mode: int          # full st_mode: file type bits | permissions
    data: bytes = b""  # file contents, or the target of a symlink
    rdev: tuple = (0, 0)


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


def _header(ino: int, e: Entry, namesize: int) -> bytes:
    fields = [ino, e.mode, 0, 0, 2 if stat.S_ISDIR(e.mode) else 1, 0, len(e.data),
              0, 0, e.rdev[0], e.rdev[1], namesize, 0]
    return b"070701" + b"".join(b"%08X" % f for f in fields)


def pack(entries: List[Entry]) -> bytes:
    """Archive bytes for entries, parents first, in a stable order."""
    out = bytearray()
    for ino, e in enumerate(sorted(entries, key=lambda x: x.name) + [Entry(TRAILER, 0)], 1):
        name = e.name.encode() + b"\0"
        hdr = _header(ino if e.name != TRAILER else 0, e, len(name))
        out += hdr + name + _pad4(len(hdr) + len(name))
        out += e.data + _pad4(len(e.data))
    return bytes(out)


def directory(name: str) -> Entry:
    return Entry(name, stat.S_IFDIR | 0o755)


def regular(name: str, data: bytes, perm: int = 0o755) -> Entry:
    return Entry(name, stat.S_IFREG | perm, data)


def symlink(name: str, target: str) -> Entry:
    return Entry(name, stat.S_IFLNK | 0o777, target.encode())


def chardev(name: str, major: int, minor: int) -> Entry:
    return Entry(name, stat.S_IFCHR | 0o600, rdev=(major, minor))
