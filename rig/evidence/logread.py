"""Reading a kernel log of any size, in bounded memory.

A log comes from a file, a run directory (its console.log), a pipe or '-'
(standard input), plain or xz/gzip-compressed. LogSource reads it a chunk
at a time and hands out its lines; it can be read again (a pipe or
standard input is spooled to a private temporary file first, never held),
so a reader that needs two passes costs disk, not memory. Before a line is read:

- binary data is refused by name (an ELF executable, a cpio archive, the
  UART's register log, an image, or anything of which more than a few
  percent of the first 64 KiB is control bytes): it is not a kernel log,
  and decoding it as one gives nonsense;
- decompression stops with a named error at MAX_DECOMPRESSED bytes, or once
  it has given more than BOMB_RATIO times what it read (past BOMB_FLOOR):
  an 18 MB gzip bomb would otherwise be 18 GB of work.

A line longer than MAX_LINE is cut into pieces of that size: no kernel
writes such lines, and one such "line" must not hold the whole file.
"""
import gzip
import lzma
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator, Optional

from rig.faults import RigFault
from rig.rundir import RunDir

CHUNK = 1 << 20
MAX_LINE = 64 * 1024
MAX_DECOMPRESSED = 4 << 30          # 4 GiB
# Kernel logs compress 10 to 50 times; a decompression bomb a thousand. Past
# BOMB_FLOOR bytes out, more than BOMB_RATIO times what was read stops it.
BOMB_RATIO = 200
BOMB_FLOOR = 64 << 20
SNIFF = 64 * 1024
# Control bytes (other than tab, CR, LF, ESC and form feed) a console log
# may hold now and then (line noise, a cut multi-byte character): above
# this share of the first SNIFF bytes, it is not text.
CONTROL_SHARE = 0.05
TEXT_CONTROLS = b"\t\n\r\x0c\x1b"
XZ_MAGIC, GZ_MAGIC = b"\xfd7zXZ\x00", b"\x1f\x8b"
BINARY_MAGIC = (
    (b"\x7fELF", "an ELF file (a program or a vmlinux, not its log)"),
    (b"RIGUART\x00", "the UART's register log (uart.log): read it with rig report or uartlog"),
    (b"070701", "a cpio archive (an initramfs)"),
    (b"070702", "a cpio archive (an initramfs)"),
    (b"QFI\xfb", "a qcow2 disk image"),
    (b"\x89PNG", "a PNG image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a zip archive"),
    (b"BZh", "bzip2 data (decompress it first)"),
    (b"\x28\xb5\x2f\xfd", "zstd data (decompress it first)"),
    (b"QEVM", "a QEMU saved VM state"),
)


class LogInputError(RigFault, ValueError):
    """A log that cannot be read as one; the message says which and why."""


def binary_problem(head: bytes) -> Optional[str]:
    """Why data starting with head is not a kernel log; None if it may be."""
    for magic, what in BINARY_MAGIC:
        if head.startswith(magic):
            return f"binary data, {what}"
    if len(head) >= 512 and head[0x1FE:0x200] == b"\x55\xaa" and b"HdrS" in head[:0x300]:
        return "binary data, a Linux kernel image (bzImage)"
    if not head:
        return None
    controls = sum(1 for b in head if (b < 0x20 and b not in TEXT_CONTROLS) or b == 0x7F)
    if controls > CONTROL_SHARE * len(head):
        return (f"binary data: {controls} of its first {len(head)} bytes are control bytes "
                f"(NUL and the like), more than a console log holds")
    return None


class LogSource:
    """A kernel log to read, possibly more than once."""

    def __init__(self, path, stdin: Optional[BinaryIO] = None,
                 max_decompressed: int = MAX_DECOMPRESSED):
        self.max_decompressed = max_decompressed
        self._spool: Optional[Path] = None
        if str(path) == "-":
            self.name = "<stdin>"
            self.path = self._spooled(stdin or sys.stdin.buffer)
        else:
            self.path = Path(path)
            try:
                if self.path.is_dir():
                    self.path = RunDir(self.path).console_log
                if not self.path.exists():
                    raise LogInputError(f"{self.path}: no such file (give a log file or a run "
                                        f"directory with {RunDir.CONSOLE})")
                if not self.path.is_file():         # a pipe or process substitution
                    with open(self.path, "rb") as stream:
                        self.path = self._spooled(stream)
                head_of(self.path)
            except OSError as e:    # also where a directory on the way may not be searched
                raise LogInputError(f"{self.path}: cannot be read: {e.strerror or e}") from e
            self.name = str(self.path)
        magic = head_of(self.path)
        self.compression = ("xz" if magic.startswith(XZ_MAGIC) else
                            "gzip" if magic.startswith(GZ_MAGIC) else None)
        problem = binary_problem(self._head())
        if problem:
            self.close()
            raise LogInputError(f"{self.name}: {problem}, not a kernel log")

    def _spooled(self, stream: BinaryIO) -> Path:
        """Standard input in a private temporary file: read more than once,
        never held in memory."""
        fd, name = tempfile.mkstemp(prefix="rig-log-", suffix=".stdin")
        with os.fdopen(fd, "wb") as f:
            shutil.copyfileobj(stream, f, CHUNK)
        self._spool = Path(name)
        return self._spool

    def close(self) -> None:
        if self._spool is not None:
            self._spool.unlink(missing_ok=True)
            self._spool = None

    def __enter__(self) -> "LogSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _head(self) -> bytes:
        for chunk in self.chunks():
            return chunk[:SNIFF]
        return b""

    def chunks(self) -> Iterator[bytes]:
        """The log's bytes, decompressed, a chunk at a time."""
        try:
            with open(self.path, "rb") as f:
                if self.compression is None:
                    yield from iter(lambda: f.read(CHUNK), b"")
                    return
                yield from self._decompressed(f)
        except OSError as e:
            raise LogInputError(f"{self.name}: cannot be read: {e.strerror or e}") from e

    def _decompressed(self, f: BinaryIO) -> Iterator[bytes]:
        kind, total = self.compression, 0
        try:
            if kind == "xz":
                for out in xz_chunks(f):
                    total += len(out)
                    self._check_size(total, f.tell())
                    yield out
            else:
                with gzip.GzipFile(fileobj=f) as g:
                    for out in iter(lambda: g.read(CHUNK), b""):
                        total += len(out)
                        self._check_size(total, f.tell())
                        yield out
        except (lzma.LZMAError, EOFError, gzip.BadGzipFile) as e:
            raise LogInputError(f"{self.name}: truncated or corrupt {kind} data ({e}); give "
                                "the whole file or the log uncompressed") from None

    def _check_size(self, total: int, read: int) -> None:
        if total > self.max_decompressed:
            raise LogInputError(
                f"{self.name}: decompresses to more than {self.max_decompressed >> 20} MiB "
                f"({self.compression} data that large is no kernel log, or a "
                f"decompression bomb): decompress it yourself and give the part to read")
        if total > BOMB_FLOOR and total > BOMB_RATIO * max(read, 1):
            raise LogInputError(
                f"{self.name}: {self.compression} data that decompresses to more than "
                f"{BOMB_RATIO} times its size ({total >> 20} MiB from {read >> 10} KiB so far): "
                f"a decompression bomb, not a kernel log (kernel logs compress 10 to 50 "
                f"times); decompress it yourself if it is one")

    def lines(self) -> Iterator[str]:
        """The log's lines: CRLF or LF ends a line, stray CRs are dropped,
        bytes that are not UTF-8 are replaced; a line longer than MAX_LINE
        is cut into pieces."""
        return split_stream(self.chunks())


def split_stream(chunks: Iterator[bytes]) -> Iterator[str]:
    """Lines of a stream of chunks, as logparse.split_lines cuts a whole log."""
    rest = b""
    for chunk in chunks:
        data = rest + chunk
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            yield from pieces_of(data[start:end])
            start = end + 1
        rest = data[start:]
        while len(rest) > MAX_LINE:
            yield decode(rest[:MAX_LINE])
            rest = rest[MAX_LINE:]
    if rest:
        yield from pieces_of(rest)


def xz_chunks(f: BinaryIO) -> Iterator[bytes]:
    """xz data decompressed, at most CHUNK bytes at a time; streams that
    follow one another (xz -c a b) one after the other, stream padding
    skipped."""
    d = lzma.LZMADecompressor()
    data = f.read(CHUNK)
    while True:
        out = d.decompress(data, CHUNK)
        if out:
            yield out
        if d.eof:
            data = d.unused_data or f.read(CHUNK)
            while data and not data.strip(b"\0"):      # padding, then maybe more
                data = f.read(CHUNK)
            if not data:
                return
            d = lzma.LZMADecompressor()
            data = data.lstrip(b"\0")
        elif d.needs_input:
            data = f.read(CHUNK)
            if not data:
                raise EOFError("the compressed data ends before its end marker")
        else:
            data = b""


def file_lines(path: Path) -> Iterator[str]:
    """The lines of a run's own evidence file (a console log), streamed as
    LogSource.lines() streams them; what the guest sent is taken as it is,
    binary or not."""
    def chunks() -> Iterator[bytes]:
        with open(path, "rb") as f:
            yield from iter(lambda: f.read(CHUNK), b"")
    return split_stream(chunks())


def head_of(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(len(XZ_MAGIC))


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").replace("\r", "")


def pieces_of(raw: bytes) -> Iterator[str]:
    for at in range(0, max(len(raw), 1), MAX_LINE):
        yield decode(raw[at:at + MAX_LINE])
