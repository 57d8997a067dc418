"""The rig's modules import each other without a circle, counting the
imports inside functions too: a circle hidden in a function-level import is
still a circle to the next engineer."""
import ast

from rig import paths


def module_imports():
    mods = {}
    for path in (paths.REPO / "rig").rglob("*.py"):
        rel = path.relative_to(paths.REPO).with_suffix("")
        if "tests" in rel.parts:
            continue
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        mods[name] = path
    graph = {}
    for name, path in mods.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rig"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in mods else node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("rig")}
        graph[name] = {m for m in found if m in mods and m != name}
    return graph


def test_no_import_circle():
    graph = module_imports()
    state, circles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                circles.append(" -> ".join(stack[stack.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == [], "import circles among the rig's modules"
