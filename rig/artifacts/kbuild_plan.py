"""How many objects and directories a configured kernel tree will compile,
read from its Kbuild makefiles and .config: the total a first build's
progress counts against, when no earlier build of the step says.

An estimate: obj-y/obj-m/lib-y lists (and obj-$(CONFIG_X) ones for options
set to y or m), composite objects counted by their parts, subdirectories
followed; conditionals are not evaluated, and objects built outside the
lists (the boot image, vDSO, host tools) are not counted. Progress never
says more than 99% before make ends."""
import re
from pathlib import Path
from typing import Dict, Set, Tuple

ASSIGN = re.compile(r"^([A-Za-z0-9_.-]+)-(y|m|objs|\$\((CONFIG_[A-Za-z0-9_]+)\))\s*[:+]?=\s*(.*)$")
LISTS = ("obj", "lib")
TOP_LISTS = ("libs", "drivers", "core")


def read_config(path: Path) -> Dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
    return out


def logical_lines(text: str):
    """Makefile lines with comments dropped and backslash continuations joined."""
    pending = ""
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield (pending + line).strip()
        pending = ""


def assignments(directory: Path, config: Dict[str, str]) -> Dict[str, list]:
    """NAME -> the words assigned to NAME-y, NAME-objs or an enabled
    NAME-$(CONFIG_X) in the directory's Kbuild file (or Makefile)."""
    makefile = directory / "Kbuild"
    return assignments_of(makefile if makefile.is_file() else directory / "Makefile", config)


def assignments_of(makefile: Path, config: Dict[str, str]) -> Dict[str, list]:
    try:
        text = makefile.read_text(errors="replace")
    except OSError:
        return {}
    out: Dict[str, list] = {}
    for line in logical_lines(text):
        m = ASSIGN.match(line)
        if m and (m.group(3) is None or config.get(m.group(3)) in ("y", "m")):
            out.setdefault(m.group(1), []).extend(m.group(4).split())
    return out


def count(directory: Path, config: Dict[str, str], arch: str,
          seen: Set[Path]) -> Tuple[int, int]:
    """(objects, directories) under directory, itself included."""
    if directory in seen or not directory.is_dir():
        return 0, 0
    seen.add(directory)
    found = assignments(directory, config)
    objects, dirs = 0, 1
    for name in LISTS:
        for item in found.get(name, []):
            item = item.replace("$(SRCARCH)", arch)
            if "$" in item:
                continue
            if item.endswith("/"):
                o, d = count(directory / item, config, arch, seen)
                objects, dirs = objects + o, dirs + d
            elif item.endswith(".o"):
                parts = [p for p in found.get(item[:-2], []) if p.endswith(".o")]
                objects += len(parts) or 1
    return objects, dirs


def top_directories(tree: Path, config: Dict[str, str], arch: str) -> list:
    """The directories the top Makefile and the arch's add to vmlinux besides
    the top Kbuild's obj-y (libs-y := lib/, drivers-$(CONFIG_PCI) += arch/x86/pci/)."""
    out = []
    for makefile_dir in (tree, tree / "arch" / arch):
        found = assignments_of(makefile_dir / "Makefile", config)
        out += [tree / item for name in TOP_LISTS for item in found.get(name, [])
                if item.endswith("/") and "$" not in item]
    return out


def planned_commands(tree: Path, config_file: Path, arch: str = "x86") -> int:
    """The number of CC and AR commands the tree's build will run, estimated."""
    config, seen = read_config(config_file), set()
    return sum(sum(count(directory, config, arch, seen))
               for directory in [tree] + top_directories(tree, config, arch))
