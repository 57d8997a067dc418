"""rig.config: the one place that reads the rig's settings from the
environment, and hands them on to xdist workers and child processes."""
import re
import subprocess
import sys

from rig import config, paths


def test_a_setting_reaches_a_child_process_and_is_undone_after_use(monkeypatch):
    for var in config.VARIABLES.values():
        monkeypatch.delenv(var, raising=False)
    assert config.current() == config.Config()
    with config.use(mutant="ier-not-restored", libvirt_uris=("qemu:///a", "qemu:///b")):
        assert config.current().mutant == "ier-not-restored"
        child = subprocess.run(
            [sys.executable, "-c", "from rig import config; c = config.current(); "
             "print(c.mutant, ','.join(c.libvirt_uris), c.runs_root)"],
            env=config.environ(runs_root="/tmp/elsewhere"), cwd=paths.REPO,
            capture_output=True, text=True, check=True)
        assert child.stdout.split() == ["ier-not-restored", "qemu:///a,qemu:///b",
                                        "/tmp/elsewhere"]
    assert config.current() == config.Config()


def test_environ_unsets_a_field_set_to_none(monkeypatch):
    monkeypatch.setenv(config.VARIABLES["mutant"], "emergency-deferred")
    assert config.VARIABLES["mutant"] not in config.environ(mutant=None)


# Reading the environment outside rig.config: only variables that are not
# the rig's own, passed on to a child process whole.
ENV_READ = re.compile(r"os\.environ(\.get\(|\[)|os\.getenv\(")


def test_no_module_but_config_reads_a_setting_from_the_environment():
    readers = []
    for path in sorted((paths.REPO / "rig").rglob("*.py")):
        rel = path.relative_to(paths.REPO)
        if rel.parts[1] == "tests" or rel.name == "config.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if ENV_READ.search(line) and "'PATH'" not in line:
                readers.append(f"{rel}:{n}: {line.strip()}")
    assert readers == [], "read rig settings through rig.config"
