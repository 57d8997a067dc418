"""A kernel build starts from the nearest cached build (rig.artifacts.kbuild_reuse):
the listing of a tree, the choice of the base, and the tree it leaves for
Kbuild, on small trees of files. The real builds that start from a base are
the series check's, the gate's and the golden test's (their manifests say
so: test_kernel_series, test_gate, test_golden_kernel_change)."""
import json
import os
import time

import pytest

from rig.artifacts import kbuild_reuse
from rig.artifacts.cache import MANIFEST

SAME = {"config fragment rig.config": "c1", "toolchain": "gcc 12", "recipe": "r1"}


def tree_of(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def cached_build(cache, step, key, files, inputs=SAME, built_at="2026-12-06 10:00:00"):
    """A finished kernel build in cache: its tree (objects in kbuild/), its
    listing and its manifest, as rig.artifacts.kernel.build_source leaves them."""
    entry = cache / step / key
    src = tree_of(entry / "src", files)
    tree_of(src / "kbuild", {"a.o": "object of a", ".version": "1\n"})
    kbuild_reuse.write_listing(entry / kbuild_reuse.LISTING,
                               kbuild_reuse.source_listing(src, skip_top=["kbuild"]))
    (entry / MANIFEST).write_text(json.dumps({
        "step": step, "key": key, "inputs": dict(inputs), "built_at": built_at,
        "outputs": {"source_listing": kbuild_reuse.LISTING, "source_dir": "src"}}))
    return entry


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RIG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_listing_names_every_file_by_content_and_skips_the_objects(tmp_path):
    tree = tree_of(tmp_path / "t", {"a.c": "int a;", "sub/b.h": "#define B", "kbuild/a.o": "x"})
    os.symlink("a.c", tree / "link")
    os.chmod(tree / "a.c", 0o755)
    listing = kbuild_reuse.source_listing(tree, skip_top=["kbuild"])
    assert sorted(listing) == ["a.c", "link", "sub/b.h"]
    assert listing["a.c"].startswith("x") and listing["sub/b.h"].startswith("f")
    assert listing["link"].startswith("l")
    kbuild_reuse.write_listing(tmp_path / "l.txt", listing)
    assert kbuild_reuse.read_listing(tmp_path / "l.txt") == listing


def test_differing_names_changed_added_and_removed_files():
    a = {"same": "f1", "changed": "f2", "gone": "f3"}
    b = {"same": "f1", "changed": "f9", "new": "f4"}
    assert kbuild_reuse.differing(a, b) == ["changed", "gone", "new"]


def test_the_nearest_build_of_the_same_recipe_is_chosen(cache, tmp_path):
    files = {"a.c": "int a;", "b.c": "int b;", "c.c": "int c;"}
    cached_build(cache, "kernel-vanilla", "v", files)
    cached_build(cache, "kernel-patched", "p", dict(files, **{"a.c": "int a2;"}))
    new = dict(files, **{"a.c": "int a2;", "b.c": "int b2;"})
    cached_build(cache, "kernel-gate", "other-config", new,
                 inputs=dict(SAME, **{"config fragment rig.config": "c2"}))
    want = kbuild_reuse.source_listing(tree_of(tmp_path / "new", new))
    base = kbuild_reuse.nearest(want, SAME)
    assert (base.step, base.differing) == ("kernel-patched", ["b.c"]), \
        "another configuration is never a base, however near its source"
    assert kbuild_reuse.nearest(want, dict(SAME, toolchain="gcc 13")) is None


def test_too_far_a_source_builds_from_scratch(cache, tmp_path, monkeypatch):
    cached_build(cache, "kernel-vanilla", "v", {"a.c": "1", "b.c": "2"})
    monkeypatch.setattr(kbuild_reuse, "MAX_DIFFERING_FILES", 1)
    want = kbuild_reuse.source_listing(tree_of(tmp_path / "n", {"a.c": "x", "b.c": "y"}))
    assert kbuild_reuse.nearest(want, SAME) is None


def test_the_tree_is_the_base_with_only_the_differing_files_new(cache, tmp_path):
    base = cached_build(cache, "kernel-patched", "p",
                        {"same.c": "same", "changed.c": "old", "gone.c": "gone"})
    old = time.time() - 3600
    for p in (base / "src").rglob("*"):
        os.utime(p, (old, old), follow_symlinks=False)
    fresh = tree_of(tmp_path / "out" / "fresh",
                    {"same.c": "same", "changed.c": "new", "new/added.c": "added"})
    out = tmp_path / "out"
    got = kbuild_reuse.start_tree("t", fresh, out / "src", SAME, "kbuild", out / "log",
                                  out / kbuild_reuse.LISTING)
    tree = out / "src"
    assert got.describe() == "kernel-patched p (3 file(s) differ)"
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == \
        ["changed.c", "kbuild/a.o", "new/added.c", "same.c"]
    assert (tree / "changed.c").read_text() == "new"
    assert (tree / "kbuild/a.o").read_text() == "object of a", "the base's objects come along"
    # Kbuild's view: an unchanged source is older than its object, a changed one newer.
    assert (tree / "same.c").stat().st_mtime == pytest.approx(old)
    assert (tree / "changed.c").stat().st_mtime > old + 3000
    assert not (tree / "kbuild/.version").exists(), "the next link would not be #1"
    assert (base / "src/kbuild/.version").exists(), "the base's own objects were touched"
    # Sources are the base's files (hard links), objects a copy Kbuild may rewrite,
    # and the base keeps its own version of what changed.
    assert (tree / "same.c").stat().st_ino == (base / "src/same.c").stat().st_ino
    assert (tree / "kbuild/a.o").stat().st_ino != (base / "src/kbuild/a.o").stat().st_ino
    assert (base / "src/changed.c").read_text() == "old"
    assert (base / "src/gone.c").exists()
    assert not fresh.exists()
    assert kbuild_reuse.read_listing(out / kbuild_reuse.LISTING) == \
        kbuild_reuse.source_listing(tree, skip_top=["kbuild"])


def test_with_no_base_the_fresh_source_is_the_tree(cache, tmp_path):
    fresh = tree_of(tmp_path / "fresh", {"a.c": "1"})
    got = kbuild_reuse.start_tree("t", fresh, tmp_path / "src", SAME, "kbuild",
                                  tmp_path / "log", tmp_path / kbuild_reuse.LISTING)
    assert got is None and (tmp_path / "src/a.c").read_text() == "1" and not fresh.exists()


def test_of_equally_near_builds_the_same_flavor_then_the_newest_wins(cache, tmp_path):
    files = {"a.c": "1"}
    cached_build(cache, "kernel-patched", "p-old", files, dict(SAME, flavor="patched"),
                 built_at="2026-12-06 09:00:00")
    cached_build(cache, "kernel-patched", "p-new", files, dict(SAME, flavor="patched"),
                 built_at="2026-12-06 11:00:00")
    cached_build(cache, "kernel-gate", "g", files, dict(SAME, flavor="vanilla"),
                 built_at="2026-12-06 10:00:00")
    want = kbuild_reuse.source_listing(tree_of(tmp_path / "n", files))
    assert kbuild_reuse.nearest(want, dict(SAME, flavor="patched")).key == "p-new"
    assert kbuild_reuse.nearest(want, dict(SAME, flavor="vanilla")).key == "g"
