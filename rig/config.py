"""The rig's configuration: the one module that reads the environment for it.

What a run uses besides its boot request is one Config: which kernel the
patched flavor is (a mutant on top of the series), the kernel profile, a
user's own kernel, the backend and its libvirt URIs, where builds, runs
and golden files live, the host lock, and the kernel source tree. Command-line options and
pytest options set it; the environment only carries it to pytest-xdist
workers and to child processes (the pytest runs of `rig mutants`, the
gate and `rig determinism`), so that they run with the same settings.

current() reads it; use() sets it in this process and its children;
environ() is a child's environment with some fields changed.
"""
import contextlib
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Dict, Iterator, MutableMapping, Optional, Tuple

# Each field's environment variable; a field is None (or empty) when unset.
VARIABLES = {
    "cache_root": "RIG_CACHE",            # the build cache (default ~/.cache/printk-rig)
    "runs_root": "RIG_RUNS",              # run directories (default runs/ in the repo)
    "golden_dir": "RIG_GOLDEN_DIR",       # golden transcripts (default golden/)
    "mutant": "RIG_MUTANT",               # a mutant's name, or a patch file, on the series
    "profile": "RIG_PROFILE",             # kernel profile: default, rt or debug
    "custom_kernel": "RIG_CUSTOM_KERNEL",  # a user's bzImage (pytest --kernel)
    "custom_build": "RIG_CUSTOM_BUILD",   # and its build directory
    "backend": "RIG_BACKEND",             # direct or libvirt
    "libvirt_uris": "RIG_LIBVIRT_URI",    # comma-separated
    "hosts_file": "RIG_HOSTS",            # a fleet's hosts file (rig.fleet.hosts)
    "host_slots": "RIG_HOST_SLOTS",       # slots of each --libvirt-uri host
    "host_lock": "RIG_HOST_LOCK",         # the host lock's path (rig.vm.hostshare)
    "host_lock_log": "RIG_HOST_LOCK_LOG",  # where the lock's holders are logged
    "kernel_src": "KERNEL_SRC",           # a Linux tree instead of Debian's source
}


@dataclass(frozen=True)
class Config:
    cache_root: Optional[str] = None
    runs_root: Optional[str] = None
    golden_dir: Optional[str] = None
    mutant: Optional[str] = None
    profile: Optional[str] = None
    custom_kernel: Optional[str] = None
    custom_build: Optional[str] = None
    backend: Optional[str] = None
    libvirt_uris: Tuple[str, ...] = ()
    hosts_file: Optional[str] = None
    host_slots: Optional[str] = None
    host_lock: Optional[str] = None
    host_lock_log: Optional[str] = None
    kernel_src: Optional[str] = None


def current() -> Config:
    """The configuration this process runs with."""
    values = {}
    for f in fields(Config):
        raw = os.environ.get(VARIABLES[f.name]) or None
        if f.name == "libvirt_uris":
            values[f.name] = tuple(u for u in (raw or "").split(",") if u)
        else:
            values[f.name] = raw
    return Config(**values)


def _variables(cfg: Config) -> Dict[str, Optional[str]]:
    """Each variable's value for cfg; None: unset."""
    out = {}
    for f in fields(Config):
        value = getattr(cfg, f.name)
        if f.name == "libvirt_uris":
            value = ",".join(value) or None
        out[VARIABLES[f.name]] = str(value) if value is not None else None
    return out


def _write(env: MutableMapping[str, str], **changes) -> None:
    """Write the configuration, changed as given, into env."""
    for var, value in _variables(replace(current(), **changes)).items():
        if value is None:
            env.pop(var, None)
        else:
            env[var] = value


def environ(**changes) -> Dict[str, str]:
    """This process's environment with the configuration changed as given:
    for a child process that must run with those settings."""
    env = dict(os.environ)
    _write(env, **changes)
    return env


def set_fields(**changes) -> None:
    """Change the configuration of this process and of its children from now on."""
    _write(os.environ, **changes)


@contextlib.contextmanager
def use(**changes) -> Iterator[Config]:
    """The configuration changed as given for the duration of the block."""
    before = current()
    set_fields(**changes)
    try:
        yield current()
    finally:
        set_fields(**{f.name: getattr(before, f.name) for f in fields(Config)})


def path_or(value: Optional[str], default: Path) -> Path:
    """A configured directory, or the default."""
    return Path(value).expanduser().resolve() if value else default


# What pytest and pytest-xdist tell a test process about itself.
def pytest_current_test() -> Optional[str]:
    """The pytest node id while a test runs."""
    current_test = os.environ.get("PYTEST_CURRENT_TEST")
    return current_test.rsplit(" (", 1)[0] if current_test else None


def xdist_worker() -> str:
    """This pytest-xdist worker's name (gw0, gw1, ...); gw0 without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "gw0")


def user_runtime_dir() -> Optional[str]:
    """$XDG_RUNTIME_DIR, the user's private runtime directory, if set."""
    return os.environ.get("XDG_RUNTIME_DIR")
