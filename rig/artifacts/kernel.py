"""Kernel flavors: vanilla (the source as shipped) and patched (+ kernel-patches/series).

Each flavor is built from its own source copy into OBJDIR inside it, from
tinyconfig merged with kernel-patches/rig.config (and the kernel profile's
fragment, kernel-patches/profile-NAME.config, after it), with a fixed build
timestamp, user and host so that the banner, and with it the transcript, is
reproducible. Every kernel build of the rig (the flavors, the series check,
the golden test's and the gate's kernels) shares most of its source with
another: a build starts from the tree of the nearest one already built
(rig.artifacts.kbuild_reuse), and ccache sits in front of gcc for the rest.
"""
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from rig import config, paths
from rig.artifacts import custom, kbuild_plan, kbuild_reuse
from rig.artifacts.cache import Step, dpkg_version, ensure, sha256_bytes, sha256_file, toolchain_id
from rig.artifacts.locate import Artifact, locate
from rig.artifacts.patching import apply_patch, apply_series, read_series
from rig.artifacts.runner import BuildError, kbuild_done, kbuild_progress, run_logged
from rig.vm import hostshare

CONFIG_FRAGMENT = paths.KERNEL_PATCHES / "rig.config"
SERIES = paths.KERNEL_PATCHES / "series"
MUTANTS = paths.KERNEL_PATCHES / "mutants"


def mutant_series(profile: Optional[str] = None) -> List[str]:
    """The mutants `rig mutants` runs on a profile (by default the current
    one): those of kernel-patches/mutants/series, which the scenarios catch
    on every profile, then those of series.PROFILE, which only that
    profile's own checks can catch (the debug profile's lockdep)."""
    extra = MUTANTS / f"series.{profile or paths.profile()}"
    return series_names(MUTANTS / "series") + (series_names(extra) if extra.is_file() else [])


def all_mutants() -> List[str]:
    """Every mutant of every profile's series."""
    return series_names(MUTANTS / "series") + [
        name for extra in sorted(MUTANTS.glob("series.*")) for name in series_names(extra)]


def series_names(series: Path) -> List[str]:
    """The mutants a series file lists, by name."""
    return [p.stem for p in read_series(series)]


def mutant() -> Optional[Path]:
    """RIG_MUTANT=NAME puts kernel-patches/mutants/NAME.patch on top of the
    patched flavor (make mutants), RIG_MUTANT=PATH that patch file; unset,
    the patched flavor is the series."""
    name = config.current().mutant
    if not name:
        return None
    if "/" in name:     # a patch file of its own (a test's kernel change)
        patch = Path(name).resolve()
        if not patch.is_file():
            raise BuildError(f"RIG_MUTANT={name}: no such patch file")
        return patch
    patch = MUTANTS / (name if name.endswith(".patch") else f"{name}.patch")
    if not patch.is_file():
        known = ", ".join(all_mutants())
        raise BuildError(f"RIG_MUTANT={name}: no {patch}; mutants: {known}")
    return patch

# Everything about how we build that is not a file: part of the cache key.
BUILD_ENV = {
    "KBUILD_BUILD_TIMESTAMP": "Sat Jan  1 00:00:00 UTC 2000",
    "KBUILD_BUILD_USER": "rig",
    "KBUILD_BUILD_HOST": "printk-rig",
}
# The object directory, a subdirectory of the source tree: Kbuild then makes
# srctree "..", so no absolute path reaches the compiler and ccache can reuse
# an object compiled in another tree (in another cache step).
OBJDIR = "kbuild"
RECIPE = "tinyconfig + rig.config (merge_config -m), olddefconfig, make " \
    "LOCALVERSION=-rig-FLAVOR all in SRC/" + OBJDIR + "; env " + \
    " ".join(f"{k}={v}" for k, v in sorted(BUILD_ENV.items()))
CCACHE_WRAPPERS = Path("/usr/lib/ccache")


def ccache_env() -> Dict[str, str]:
    """gcc through ccache (Debian's wrapper directory first on PATH), with its
    store in the rig's cache. Objects do not depend on it: not a key input.
    No base_dir: the paths are relative already (OBJDIR). The sloppiness
    lets freshly unpacked or generated headers hit by content, not mtime."""
    if not (CCACHE_WRAPPERS / "gcc").exists():
        return {}
    return {
        "PATH": f"{CCACHE_WRAPPERS}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "CCACHE_DIR": str(paths.cache_root() / "ccache"),
        "CCACHE_MAXSIZE": "10G",
        "CCACHE_NOHASHDIR": "1",
        "CCACHE_SLOPPINESS": "include_file_mtime,include_file_ctime,time_macros",
    }


def kbuild_env() -> Dict[str, str]:
    return dict(BUILD_ENV, **ccache_env())


@dataclass
class KernelSource:
    """Where a flavor's pristine source comes from, and a digest of it."""
    kind: str      # "debian" or "tree"
    path: Path
    version: str   # what goes into every result

    def digest(self) -> str:
        if self.kind == "debian":
            return f"{self.version} sha256:{sha256_file(self.path)}"
        return f"{self.version} {tree_digest(self.path)}"

    def copy_to(self, dst: Path, log: Path) -> None:
        dst.mkdir(parents=True)
        if self.kind == "debian":
            run_logged("kernel-src", ["tar", "-C", str(dst), "--strip-components=1",
                                      "-xf", str(self.path)], log)
        else:
            run_logged("kernel-src", ["sh", "-c", 'tar -C "$0" --exclude=.git -cf - . | '
                                      'tar -C "$1" -xf -', str(self.path), str(dst)], log)


def tree_digest(tree: Path) -> str:
    """Cheap but faithful digest of a kernel tree given by KERNEL_SRC."""
    if (tree / ".git").exists():
        git = ["git", "-C", str(tree)]
        head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        diff = subprocess.run(git + ["diff", "HEAD", "--binary"], capture_output=True,
                              check=True).stdout
        return f"git:{head} diff:{sha256_bytes(diff)[:16]}"
    entries = []
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            st = os.lstat(os.path.join(root, name))
            rel = os.path.relpath(os.path.join(root, name), tree)
            entries.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
    return "files:" + sha256_bytes("\n".join(entries).encode())[:16]


def kernel_source() -> KernelSource:
    """KERNEL_SRC=/path/to/tree wins; otherwise Debian's linux-source-6.12."""
    tree = config.current().kernel_src
    if tree:
        p = Path(tree).expanduser().resolve()
        if not (p / "Makefile").is_file() or not (p / "kernel" / "printk").is_dir():
            raise BuildError(f"KERNEL_SRC={tree} is not a Linux source tree "
                             "(no Makefile or kernel/printk/ there)")
        return KernelSource("tree", p, f"tree {p} (make kernelversion: {make_version(p)})")
    tar = paths.LINUX_SOURCE_TARBALL
    pkg_ver = dpkg_version(paths.LINUX_SOURCE_PKG)
    if not tar.is_file() or pkg_ver is None:
        raise BuildError(f"{tar} is missing: run `make deps` (installs "
                         f"{paths.LINUX_SOURCE_PKG}) or set KERNEL_SRC=/path/to/linux")
    return KernelSource("debian", tar, f"Debian {paths.LINUX_SOURCE_PKG} {pkg_ver}")


def make_version(tree: Path) -> str:
    text = (tree / "Makefile").read_text(errors="replace")
    fields = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION) = ?(.*)$",
                             text, re.M))
    return "{}.{}.{}{}".format(fields.get("VERSION", "?"), fields.get("PATCHLEVEL", "?"),
                               fields.get("SUBLEVEL", "?"), fields.get("EXTRAVERSION", ""))


def profile_fragments() -> List[Path]:
    """The config fragments of this process's profile, merged in this order:
    rig.config, then the profile's own (none for the default profile)."""
    name = paths.profile()
    if name not in paths.PROFILES:
        raise BuildError(f"unknown kernel profile {name!r}: choose one of "
                         f"{', '.join(paths.PROFILES)}")
    if name == paths.DEFAULT_PROFILE:
        return [CONFIG_FRAGMENT]
    own = paths.profile_fragment(name)
    if not own.is_file():
        raise BuildError(f"kernel profile {name}: {own} is missing")
    return [CONFIG_FRAGMENT, own]


def kernel_inputs(flavor: str, src: KernelSource) -> Dict[str, str]:
    if flavor not in paths.FLAVORS:
        raise BuildError(f"unknown flavor {flavor!r}: choose one of {', '.join(paths.FLAVORS)}")
    inputs = {
        "kernel source": src.digest(),
        "config fragment rig.config": sha256_file(CONFIG_FRAGMENT),
        "toolchain": toolchain_id(),
        "recipe": sha256_bytes(RECIPE.encode())[:16],
        "flavor": flavor,
    }
    # Only a profile other than the default adds inputs: the default
    # profile's kernels keep the keys they had before profiles existed.
    for extra in profile_fragments()[1:]:
        inputs["profile fragment"] = f"{extra.name} {sha256_file(extra)}"
    if flavor == "patched":
        inputs["series file"] = sha256_file(SERIES) if SERIES.is_file() else "absent"
        for p in read_series(SERIES):
            inputs[f"patch {p.name}"] = sha256_file(p)
        if mutant() is not None:
            inputs["mutant"] = f"{mutant().name} {sha256_file(mutant())}"
    return inputs


def parse_fragment(text: str) -> Dict[str, str]:
    """CONFIG_FOO=y lines and '# CONFIG_FOO is not set' lines of a config fragment."""
    wanted = {}
    for line in text.splitlines():
        m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
        if m:
            wanted[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^# (CONFIG_\w+) is not set$", line.strip())
        if m:
            wanted[m.group(1)] = "n"
    return wanted


def config_mismatches(fragment: str, config: str) -> List[str]:
    """Options the fragment (the fragments, concatenated in merge order: a
    later line wins) asks for that the final .config does not have."""
    have = parse_fragment(config)
    bad = []
    for opt, val in parse_fragment(fragment).items():
        got = have.get(opt, "n")
        if got != val:
            bad.append(f"{opt}: fragment wants {val}, .config has {got}")
    return bad


def configure(label: str, tree: Path, log: Path, flavor: str) -> List[str]:
    """tinyconfig + rig.config into tree/OBJDIR; every fragment option must
    survive. Returns the make command line for the configured tree. The
    release suffix is a make variable, not CONFIG_LOCALVERSION: in the
    config it would reach autoconf.h, which every object includes, and no
    object of one flavor could be reused for the other."""
    bld = tree / OBJDIR
    name = paths.kernel_name(flavor, paths.profile())
    make = ["make", "-C", str(tree), f"O={bld}", f"LOCALVERSION=-rig-{name}"]
    run_logged(label, make + ["tinyconfig"], log, env=kbuild_env())
    fragments = profile_fragments()
    run_logged(label, [str(tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(bld),
                       str(bld / ".config")] + [str(f) for f in fragments], log, cwd=tree)
    run_logged(label, make + ["olddefconfig"], log, env=kbuild_env())
    wanted = "\n".join(f.read_text() for f in fragments)
    bad = config_mismatches(wanted, (bld / ".config").read_text())
    if bad:
        names = " + ".join(f"kernel-patches/{f.name}" for f in fragments)
        raise BuildError(f"[{label}] {names} options did not survive "
                         "olddefconfig (unmet Kconfig dependencies?):\n  " + "\n  ".join(bad))
    return make


def planned(tree: Path) -> Tuple[int, str]:
    """A first build's total: the configured tree's own plan (rig.artifacts.kbuild_plan)."""
    return (kbuild_plan.planned_commands(tree, tree / OBJDIR / ".config"),
            "the tree's Kbuild makefiles")


def compile_tree(label: str, make: List[str], log: Path,
                 total: Tuple[Optional[int], str] = (None, "")) -> None:
    """make all on every core. It holds the host alone (rig/vm/hostshare.py), like
    a real-time boot: the kernels a cold `make test` builds inside tests (the
    gate's, the series check's) would otherwise stretch the real-time boots
    of the other worker past their timeouts."""
    print(f"[{label}] compiling with -j{os.cpu_count()} (log: {log})", flush=True)
    with hostshare.hold(alone=True, what=f"{label} kernel build"):
        run_logged(label, make + [f"-j{os.cpu_count()}", "all"], log, env=kbuild_env(),
                   progress=kbuild_progress(*total))


def build_source(flavor: str, src: KernelSource, out: Path, last_total: Optional[int],
                 label: str = "") -> dict:
    """Build src as flavor into out (the body of a kernel cache step)."""
    log = out / "build.log"
    label = label or f"kernel-{paths.kernel_name(flavor, paths.profile())}"
    fresh, tree = out / "fresh", out / "src"
    print(f"[{label}] unpacking {src.version}", flush=True)
    src.copy_to(fresh, log)
    applied = apply_series(fresh, SERIES, log) if flavor == "patched" else []
    if flavor == "patched":
        print(f"[{label}] applied {len(applied)} patch(es) from kernel-patches/series",
              flush=True)
        if mutant() is not None:
            apply_patch(fresh, mutant(), MUTANTS / "series", log)
            applied.append(f"mutants/{mutant().name}")
            print(f"[{label}] applied mutant {mutant().name}", flush=True)
    base = kbuild_reuse.start_tree(label, fresh, tree, kernel_inputs(flavor, src), OBJDIR, log,
                                   out / kbuild_reuse.LISTING)
    make = configure(label, tree, log, flavor)
    if base is not None:
        total: Tuple[Optional[int], str] = (None, "")   # what the differing files touch
    elif last_total:
        total = (last_total, "the last build of this step")
    else:
        total = planned(tree)
    compile_tree(label, make, log, total)
    release = subprocess.run(make + ["-s", "kernelrelease"], capture_output=True,
                             text=True, check=True).stdout.strip()
    objects, _ = kbuild_done(log)
    return {
        "bzImage": f"src/{OBJDIR}/arch/x86/boot/bzImage",
        "build_dir": f"src/{OBJDIR}",
        "source_dir": "src",
        "kernel_release": release,
        "source_version": src.version,
        "patches": applied,
        "build_objects": objects,
        "source_listing": kbuild_reuse.LISTING,
        "started_from": kbuild_reuse.started_from(base),
    }


def clean_build_total(step: Step) -> Optional[int]:
    """The commands of the step's last build, if it compiled everything."""
    last = step.last_outputs()
    return last.get("build_objects") if kbuild_reuse.compiled_everything(last) else None


def kernel_step(flavor: str, src: Optional[KernelSource] = None) -> Step:
    return Step(f"kernel-{paths.kernel_name(flavor, paths.profile())}",
                kernel_inputs(flavor, src or kernel_source()))


def build_kernel(flavor: str, force: bool = False) -> dict:
    src = kernel_source()
    step = kernel_step(flavor, src)
    last_total = clean_build_total(step)
    manifest = ensure(step, lambda out: build_source(flavor, src, out, last_total), force=force)
    manifest["dir"] = str(step.dir)
    return manifest


def kernel_artifact(flavor: str, build: bool = False, force: bool = False) -> Artifact:
    """The flavor's kernel build (building it on request); a user's kernel as is."""
    if flavor == custom.CUSTOM:
        return Artifact(custom.kernel())     # the user's build: never built by the rig
    return locate(kernel_step(flavor), lambda force: build_kernel(flavor, force),
                  build, force, f"the {flavor} kernel", "kernel")
