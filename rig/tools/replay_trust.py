"""What `rig replay` takes from a bundle, and only after checking it.

A bundle travels: it is what a CI job keeps and a developer replays, and
the replay runs as the rig's user (often root). So nothing in it is run or
written to as given:

- every input comes from the build cache, by the step and key the bundle
  names, checked against that entry's manifest (rig.artifacts.cache), and
  must have the recorded sha256: QEMU and its firmware are the rig's own
  builds, by content. Only a kernel of the user's own (step "custom") may be
  another file, and it must be a bzImage with the recorded sha256;
- the boot request is rebuilt from the bundle's typed fields, each checked
  (the kernel parameters as `rig boot` checks them, the UART's trigger
  properties, a QMP command that is an NMI and nothing else);
- QEMU's command line is the one the rig makes for that request
  (rig.vm.qemu_argv); the recorded one must equal it, path for path once
  the recorded paths are mapped to the replay's, or the bundle is refused;
- the replay writes into a new run directory of its own, never the
  recorded one (nor any other the bundle names).
"""
import dataclasses
import math
import re
from pathlib import Path
from typing import Dict, List

from rig import bundle, inputs as request_check, paths
from rig.artifacts import custom
from rig.artifacts.cache import CacheEntryError, Entry, sha256_file
from rig.boot import LITERAL_RE, BootRequest
from rig.inputs import BadInput

# role -> the cache steps its input may come from ({flavor} filled in)
ROLE_STEPS = {
    "qemu": ("qemu",),
    "firmware": ("firmware",),
    "kernel": ("kernel-{kernel}",),
    "initramfs": ("initramfs-{flavor}", "initramfs-bench-{flavor}"),
    "snapshot": ("snapshot-{flavor}",),
}
REQUIRED_ROLES = ("qemu", "firmware", "kernel", "initramfs")
# The rig-serial properties a request may set (rig.vm.snapshot's triggers,
# and the device's logging of reads) and what their values look like.
UART_PROPS = {
    "nmi-cpu": re.compile(r"^-?\d{1,3}$"),
    "nmi-pattern-offset": re.compile(r"^\d{1,9}$"),
    "nmi-after-thr": re.compile(r"^\d{1,18}$"),
    "nmi-pattern": re.compile(LITERAL_RE.pattern.decode()),
    "log-reads": re.compile(r"^(on|off)$"),
}
FIELD_TYPES = {f.name: f.type for f in dataclasses.fields(BootRequest)}


class UntrustedBundle(bundle.BundleError):
    """The bundle asks for something the rig would not do; names it."""


def refuse(why: str) -> UntrustedBundle:
    return UntrustedBundle(f"refused: {why}")


def flavor_of(b: Dict) -> str:
    flavor = b.get("flavor")
    if flavor not in paths.FLAVORS + (custom.CUSTOM,):
        raise refuse(f"flavor {flavor!r} is none of {', '.join(paths.FLAVORS)}, "
                     f"{custom.CUSTOM}")
    return flavor


def profile_of(b: Dict) -> str:
    """The bundle's kernel profile (a bundle from before profiles: the default)."""
    profile = b.get("profile") or paths.DEFAULT_PROFILE
    if profile not in paths.PROFILES:
        raise refuse(f"profile {profile!r} is none of {', '.join(paths.PROFILES)}")
    return profile


def rebuild_command(role: str, flavor: str) -> str:
    """How to make the input again, in the rig's words (not the bundle's)."""
    what = {"qemu": "qemu", "kernel": "kernel", "initramfs": "initramfs"}.get(role)
    if what is None:        # the firmware and the snapshot: any boot of the request makes them
        return "rerun the boot (python3 -m rig boot, or the test) from the same rig checkout"
    return bundle.rebuild_command(flavor, what)


def resolve(role: str, entry: Dict, flavor: str) -> Path:
    """The input's file (the firmware's directory) in the cache, checked."""
    if not isinstance(entry, dict):
        raise refuse(f"input {role!r} is not a record")
    step, key = entry.get("step"), entry.get("key")
    if role == "kernel" and step == "custom":
        if flavor != custom.CUSTOM:
            raise refuse(f"a {flavor} run's kernel comes from the cache, not from a file "
                         "of the user's own")
        return custom_kernel(entry)
    kernel = paths.kernel_name(flavor, paths.profile())
    steps = tuple(s.format(flavor=flavor, kernel=kernel) for s in ROLE_STEPS.get(role, ()))
    if not steps:
        raise refuse(f"input {role!r} is not one a boot has ({', '.join(ROLE_STEPS)})")
    if step not in steps:
        raise refuse(f"the {role} must come from the cache step {' or '.join(steps)}, "
                     f"not {step!r}")
    try:
        cached = Entry(step, str(key))
    except CacheEntryError as e:
        raise refuse(f"the {role}: {e}") from None
    why_missing = f"the run's {role} ({step} {key}) is not in the build cache"
    if not cached.is_built():
        raise bundle.BundleError(f"{why_missing}: rebuild it from the same rig checkout "
                                 f"with `{rebuild_command(role, flavor)}`")
    try:
        m = cached.manifest()               # every file of the entry checked
    except CacheEntryError as e:
        raise bundle.BundleError(f"{e}: rebuild it with `{rebuild_command(role, flavor)}`") \
            from None
    if role == "firmware":
        files = {name: rec["sha256"] for name, rec in sorted(m["files"].items())}
        if files != entry.get("files"):
            raise bundle.BundleError(f"the run's firmware differs from cache entry "
                                     f"{cached.dir}'s")
        return cached.dir
    outputs = {v: k for k, v in m["outputs"].items() if isinstance(v, str)}
    name = outputs.get(entry.get("file")) if isinstance(entry.get("file"), str) else None
    if name not in m["files"]:
        raise refuse(f"the {role} file {entry.get('file')!r} is not one of cache entry "
                     f"{cached.dir}'s files")
    if m["files"][name]["sha256"] != entry.get("sha256"):
        raise bundle.BundleError(
            f"the run's {role} ({step} {key}, sha256 {str(entry.get('sha256'))[:16]}...) "
            f"differs from the cache's {cached.dir / entry['file']} (rebuilt from other "
            f"inputs): rebuild it from the same rig checkout with "
            f"`{rebuild_command(role, flavor)}`")
    return cached.dir / entry["file"]


def custom_kernel(entry: Dict) -> Path:
    """A kernel of the user's own: a bzImage with the recorded sha256."""
    path = Path(str(entry.get("path")))
    try:
        request_check.check_kernel_image(path)
    except BadInput as e:
        raise refuse(f"the custom kernel: {e}") from None
    if sha256_file(path) != entry.get("sha256"):
        raise bundle.BundleError(f"the run's kernel {path} has another sha256 now: it was "
                                 "rebuilt or replaced")
    return path


def resolve_inputs(b: Dict) -> Dict[str, Path]:
    flavor = flavor_of(b)
    given = b["inputs"]
    if not isinstance(given, dict):
        raise refuse("'inputs' is not a record")
    missing = [r for r in REQUIRED_ROLES if r not in given]
    if missing:
        raise refuse(f"no {', '.join(missing)} among its inputs")
    return {role: resolve(role, entry, flavor) for role, entry in given.items()}


# Bounds of the request's numbers: finite, and no timeout a replay would
# wait on forever (a day at most).
LIMITS = {"init_timeout_s": (0.1, 86400.0), "lock_timeout_s": (0.0, 86400.0),
          "icount_shift": (0, 10), "min_free_mb": (0, 1 << 40)}
MAX_PATTERN = 200


def typed(name: str, value):
    """value, if it has the BootRequest field's type."""
    kind = FIELD_TYPES[name]
    ok = {str: isinstance(value, str), int: type(value) is int,
          float: isinstance(value, (int, float)) and not isinstance(value, bool),
          bool: isinstance(value, bool)}.get(kind)
    if ok is None:      # Optional and container fields are checked by request()
        return value
    if not ok:
        raise refuse(f"request field {name}={value!r} is not a {kind.__name__}")
    return value


def request(b: Dict) -> BootRequest:
    """The boot request of the bundle, every field checked."""
    fields = b["request"]
    if not isinstance(fields, dict):
        raise refuse("'request' is not a record")
    unknown = set(fields) - set(FIELD_TYPES)
    if unknown:
        raise refuse(f"request fields {', '.join(sorted(unknown))} are not a boot "
                     "request's")
    fields = {k: typed(k, v) for k, v in fields.items() if k not in ("rerun_of", "run_dir")}
    if fields.get("flavor", "patched") != b.get("flavor"):
        raise refuse(f"request flavor {fields.get('flavor')!r} is not the bundle's")
    props = fields.get("uart_props") or {}
    if not isinstance(props, dict):
        raise refuse("request field uart_props is not a record")
    for k, v in props.items():
        if k not in UART_PROPS or not isinstance(v, str) or not UART_PROPS[k].fullmatch(v):
            raise refuse(f"UART property {k}={v!r} is not one a boot request sets "
                         f"({', '.join(UART_PROPS)}, plain values)")
    qmp = fields.get("qmp_when")
    if qmp is not None:
        if not (isinstance(qmp, list) and len(qmp) == 3 and isinstance(qmp[0], str)
                and qmp[1] == "inject-nmi" and qmp[2] in ({}, None)):
            raise refuse(f"QMP action {qmp!r}: a boot sends inject-nmi and nothing else")
        # The console text it waits for: literal and short, as the scenarios
        # write it (a regular expression could take the harness forever).
        if len(qmp[0]) > MAX_PATTERN or not re.fullmatch(LITERAL_RE.pattern.decode(), qmp[0]):
            raise refuse(f"QMP trigger pattern {qmp[0][:80]!r}: a short literal console text")
        fields["qmp_when"] = (qmp[0].encode("latin-1"), "inject-nmi", {})
    if fields.get("initramfs", "") not in ("", "bench"):
        raise refuse(f"initramfs variant {fields['initramfs']!r}: '' or 'bench'")
    timeout = fields.get("lock_timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or
                                not isinstance(timeout, (int, float))):
        raise refuse(f"request field lock_timeout_s={timeout!r} is not a number")
    for name, (low, high) in LIMITS.items():
        value = fields.get(name)
        if value is not None and not (math.isfinite(value) and low <= value <= high):
            raise refuse(f"request field {name}={value!r}: from {low} to {high}")
    if not isinstance(b.get("machine"), dict):
        raise refuse("'machine' is not a record")
    req = BootRequest(**fields)
    try:
        request_check.check(req.smp, req.memory_mb, req.cmdline, {})
    except BadInput as e:
        raise refuse(str(e)) from None
    if b.get("machine", {}).get("accel", "tcg") not in ("tcg", "kvm"):
        raise refuse(f"accelerator {b['machine'].get('accel')!r}: tcg or kvm")
    return req


def same_argv(recorded, rebuilt: List[str], mapping: Dict[str, str]) -> None:
    """The recorded QEMU command line, its paths mapped to the replay's,
    must be the one the rig makes: refused at the first argument that is not."""
    if not isinstance(recorded, list) or not all(isinstance(a, str) for a in recorded):
        raise refuse("'argv' is not a list of strings")
    mapped = []
    for arg in recorded:
        for old, new in mapping.items():
            arg = arg.replace(old, new)
        mapped.append(arg)
    for i, (was, now) in enumerate(zip(mapped, rebuilt)):
        if was != now:
            raise refuse(f"its QEMU command line is not the one the rig makes for its "
                         f"request: argument {i} is {was!r}, the rig's is {now!r} (a bundle "
                         f"of another rig version, or edited)")
    if len(mapped) != len(rebuilt):
        raise refuse(f"its QEMU command line has {len(mapped)} arguments, the rig makes "
                     f"{len(rebuilt)} for its request")
