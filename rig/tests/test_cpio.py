import subprocess

from rig.artifacts import cpio


def test_archive_lists_with_gnu_cpio(tmp_path):
    data = cpio.pack([cpio.directory("bin"), cpio.regular("bin/hello", b"#!/bin/sh\n"),
                      cpio.symlink("bin/sh", "busybox"), cpio.chardev("dev/console", 5, 1),
                      cpio.directory("dev")])
    assert len(data) % 4 == 0
    listing = subprocess.run(["cpio", "-itv"], input=data, capture_output=True).stdout.decode()
    names = [ln.split()[-1] if "->" not in ln else ln.split()[-3] for ln in listing.splitlines()]
    assert names == ["bin", "bin/hello", "bin/sh", "dev", "dev/console"]
    assert "5,   1" in listing and "busybox" in listing
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet", "bin/hello"], input=data, cwd=out, check=True)
    assert (out / "bin/hello").read_bytes() == b"#!/bin/sh\n"


def test_archive_is_reproducible():
    entries = [cpio.regular("b", b"2"), cpio.regular("a", b"1")]
    assert cpio.pack(entries) == cpio.pack(list(reversed(entries)))
