"""Cache keys: what changes a key, what does not, and what a miss says; a
damaged entry is named and rebuilt, never used."""
import json
import shutil

import pytest

from rig import paths
from rig.artifacts import cache, kernel, qemu
from rig.artifacts.cache import Step, describe_change, ensure


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RIG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_key_depends_on_inputs_only():
    a = Step("x", {"src": "1", "cfg": "2"})
    assert a.key == Step("x", {"cfg": "2", "src": "1"}).key
    assert a.key != Step("x", {"src": "1", "cfg": "3"}).key


def test_describe_change_names_inputs():
    assert describe_change(None, {"a": "1"}) == "never built with this cache"
    msg = describe_change({"a": "1", "b": "2", "gone": "x"}, {"a": "1", "b": "3", "new": "y"})
    assert msg == "b changed, gone removed, new added"


def test_ensure_builds_once_and_reports_hit(tmp_cache, capsys):
    calls = []

    def build(out):
        calls.append(out)
        (out / "artifact").write_text("x")
        return {"artifact": "artifact"}

    step = Step("demo", {"src": "1"})
    ensure(step, build)
    ensure(step, build)
    assert len(calls) == 1
    out = capsys.readouterr().out
    assert "[demo] cache miss: never built with this cache" in out
    assert f"[demo] cache hit {step.key}" in out
    ensure(Step("demo", {"src": "2"}), build)
    assert "[demo] cache miss: src changed" in capsys.readouterr().out


def test_failed_build_leaves_no_manifest_and_is_redone(tmp_cache):
    step = Step("demo", {"src": "1"})

    def boom(out):
        raise RuntimeError("compiler died")

    with pytest.raises(RuntimeError):
        ensure(step, boom)
    assert not step.is_built()
    ensure(step, lambda out: {})
    assert step.is_built()


def built_entry(payload: bytes = b"kernel image") -> Step:
    step = Step("demo", {"src": "1"})
    ensure(step, lambda out: (out / "image").write_bytes(payload) and {"image": "image",
                                                                       "version": "1.0"})
    return step


DAMAGED_MANIFESTS = {
    "truncated": (lambda text: text[:len(text) // 2], "manifest.json is not valid JSON"),
    "empty": (lambda text: "", "manifest.json is not valid JSON"),
    "not an object": (lambda text: "[1, 2]", "manifest.json holds a list, not a JSON object"),
    "without outputs": (lambda text: text.replace('"outputs"', '"outputz"'),
                        "manifest.json has no 'outputs'"),
    "bad file record": (lambda text: text.replace('"sha256"', '"sha1"'),
                        "manifest.json has a bad 'files' record"),
}


@pytest.mark.parametrize("case", list(DAMAGED_MANIFESTS))
def test_a_damaged_manifest_is_named_removed_and_rebuilt(case, tmp_cache, capsys):
    step = built_entry()
    damage, problem = DAMAGED_MANIFESTS[case]
    step.manifest_path.write_text(damage(step.manifest_path.read_text()))
    with pytest.raises(cache.CacheEntryError, match=f"cache entry {step.dir} is damaged: "
                                                    f"{problem}"):
        step.manifest()
    capsys.readouterr()
    rebuilt = []
    ensure(step, lambda out: rebuilt.append(1) or (out / "image").write_bytes(b"x") and
           {"image": "image"})
    assert rebuilt == [1]
    assert f"is damaged: {problem}" in capsys.readouterr().out
    assert step.manifest()["files"]["image"]["bytes"] == 1


def test_a_file_changed_since_its_build_is_named_and_the_entry_rebuilt(tmp_cache, capsys):
    step = built_entry()
    assert step.manifest()["files"] == {"image": {"sha256": cache.sha256_bytes(b"kernel image"),
                                                  "bytes": 12}}
    image = step.dir / "image"
    with open(image, "r+b") as f:           # one byte flipped in place, size unchanged
        f.seek(3)
        f.write(b"N")
    with pytest.raises(cache.CacheEntryError, match=rf"its image \({image}\) has sha256 "
                                                    r"\w+\.\.\., \w+\.\.\. when it was built"):
        step.manifest()
    image.write_bytes(b"short")
    with pytest.raises(cache.CacheEntryError, match=r"is 5 bytes, 12 when it was built"):
        step.manifest()
    capsys.readouterr()
    ensure(step, lambda out: (out / "image").write_bytes(b"kernel image") and {"image": "image"})
    assert "removing it and building again" in capsys.readouterr().out
    assert step.manifest()["files"]["image"]["bytes"] == 12


def test_locate_removes_a_damaged_entry_and_names_the_command(tmp_cache):
    from rig.artifacts.locate import locate
    step = built_entry()
    (step.dir / "image").write_bytes(b"kernel imagE")
    with pytest.raises(cache.CacheEntryError, match=r"The entry is removed; build the demo "
                                                    r"again with `make demo`"):
        locate(step, None, False, False, "the demo", "demo")
    assert not step.dir.exists()


def test_an_entry_from_before_file_records_gets_them_at_first_use(tmp_cache, capsys):
    step = built_entry()
    m = json.loads(step.manifest_path.read_text())
    del m["files"]
    step.manifest_path.write_text(json.dumps(m))
    assert step.manifest()["files"]["image"]["bytes"] == 12
    assert "recorded the sha256 of its 1 file(s)" in capsys.readouterr().out
    assert "files" in json.loads(step.manifest_path.read_text())


def fake_patches(tmp_path, monkeypatch):
    """A copy of kernel-patches/ with one patch, wired into the kernel module."""
    kp = tmp_path / "kernel-patches"
    shutil.copytree(paths.KERNEL_PATCHES, kp)
    (kp / "0001-demo.patch").write_text("--- a/x\n+++ b/x\n")
    (kp / "series").write_text("0001-demo.patch\n")
    monkeypatch.setattr(kernel, "SERIES", kp / "series")
    monkeypatch.setattr(kernel, "CONFIG_FRAGMENT", kp / "rig.config")
    return kp


def test_touching_a_patch_changes_only_the_patched_key(tmp_path, monkeypatch):
    kp = fake_patches(tmp_path, monkeypatch)
    src = kernel.KernelSource("tree", tmp_path, "tree for test")
    monkeypatch.setattr(kernel.KernelSource, "digest", lambda self: "fixed-source")
    before = {f: kernel.kernel_step(f, src).key for f in paths.FLAVORS}
    qemu_before = Step("qemu", qemu.qemu_inputs("7.2", "abc")).key
    (kp / "0001-demo.patch").write_text("--- a/x\n+++ b/x\n@@ changed @@\n")
    after = {f: kernel.kernel_step(f, src).key for f in paths.FLAVORS}
    assert after["vanilla"] == before["vanilla"]
    assert after["patched"] != before["patched"]
    assert Step("qemu", qemu.qemu_inputs("7.2", "abc")).key == qemu_before
    step = kernel.kernel_step("patched", src)
    assert "patch 0001-demo.patch" in step.inputs


def test_config_fragment_changes_both_flavors(tmp_path, monkeypatch):
    kp = fake_patches(tmp_path, monkeypatch)
    src = kernel.KernelSource("tree", tmp_path, "tree for test")
    monkeypatch.setattr(kernel.KernelSource, "digest", lambda self: "fixed-source")
    before = {f: kernel.kernel_step(f, src).key for f in paths.FLAVORS}
    with open(kp / "rig.config", "a") as f:
        f.write("CONFIG_PRINTK_CALLER=y\n")
    after = {f: kernel.kernel_step(f, src).key for f in paths.FLAVORS}
    assert all(after[f] != before[f] for f in paths.FLAVORS)


def test_device_sources_change_the_qemu_key(tmp_path, monkeypatch):
    dev = tmp_path / "src"
    (dev / "hw/char").mkdir(parents=True)
    monkeypatch.setattr(qemu, "DEVICE_SRC", dev)
    k1 = Step("qemu", qemu.qemu_inputs("7.2", "abc")).key
    (dev / "hw/char/rig-serial.c").write_text("/* device */\n")
    k2 = Step("qemu", qemu.qemu_inputs("7.2", "abc")).key
    (dev / "README.md").write_text("docs do not rebuild QEMU\n")
    k3 = Step("qemu", qemu.qemu_inputs("7.2", "abc")).key
    assert k1 != k2 == k3


def test_tree_digest_follows_file_changes(tmp_path):
    (tmp_path / "a").write_text("1")
    d1 = kernel.tree_digest(tmp_path)
    (tmp_path / "a").write_text("22")
    assert kernel.tree_digest(tmp_path) != d1


def test_sha256_tree_excludes(tmp_path):
    (tmp_path / "x").write_text("1")
    d = cache.sha256_tree(tmp_path)
    (tmp_path / "README.md").write_text("doc")
    assert cache.sha256_tree(tmp_path, exclude=["README.md"]) == d
    assert cache.sha256_tree(tmp_path) != d


def test_missing_artifact_says_what_to_run(tmp_cache):
    from rig.artifacts import built as artifacts
    from rig.artifacts.runner import BuildError
    with pytest.raises(BuildError, match=r"the patched kernel is not built .*run `make kernel`"):
        artifacts.kernel("patched")
    with pytest.raises(BuildError, match=r"initramfs is not built .*run `make initramfs`"):
        artifacts.initramfs("vanilla")


def test_qemu_source_release_is_asked_of_apt_again_only_when_its_lists_change(
        tmp_path, monkeypatch):
    import subprocess
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "deb.debian.org_Sources").write_text("1")
    monkeypatch.setattr(qemu, "APT_STATE", [lists])
    monkeypatch.setattr(qemu, "src_root", lambda: tmp_path / "src")
    asked = []

    def apt(argv, **_):
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 0, stderr="", stdout=(
            "'http://deb.debian.org/qemu_7.2+dfsg-7.dsc' qemu_7.2+dfsg-7.dsc 123 SHA256:ab12\n"))
    monkeypatch.setattr(qemu.subprocess, "run", apt)
    try:
        for _ in range(2):                   # a new process each time: the memo answers
            qemu.source_release.cache_clear()
            assert qemu.source_release() == ("7.2+dfsg-7", "ab12")
        assert len(asked) == 1
        (lists / "deb.debian.org_Sources").write_text("22")     # apt-get update
        qemu.source_release.cache_clear()
        qemu.source_release()
        assert len(asked) == 2
    finally:
        qemu.source_release.cache_clear()
