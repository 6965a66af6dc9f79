"""The package's rooms and the one direction of their imports (docs/architecture.md).

Read from the source with `ast`, so a new import that runs upward or
sideways fails here, with the line that does it, before it becomes habit.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "unified_exec_kernel"

# What each room may import of the package (itself always).
ALLOWED = {
    "core": set(),
    "screen": {"core"},
    "protocol": {"core"},
    "jupyter": {"core"},
    "notebook": {"core", "screen", "protocol", "jupyter"},
    "live": {"core", "screen", "protocol", "jupyter"},
    "server": {"protocol"},
    "mcp": {"core", "protocol"},
}
# Third-party names the engine must never import: it runs in any asyncio program.
JUPYTER = {"IPython", "ipykernel", "ipywidgets", "anywidget", "jupyter_client", "jupyter_server", "comm", "traitlets", "tornado", "zmq"}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, path.relative_to(PACKAGE).parts


def room_of(parts: tuple[str, ...]) -> str | None:
    return parts[0] if len(parts) > 1 else None  # top-level modules are the composition root


def imports(path: Path, parts: tuple[str, ...]):
    """(line, absolute module) for every import in the file, the package's resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = ["unified_exec_kernel", *parts[:-1]]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                # `from . import x`: x is a module of that package
                names = [f"{module}.{alias.name}" for alias in node.names] if not node.module else [module]
            else:
                names = [node.module]
            for name in names:
                yield node.lineno, name


def internal_room(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] != "unified_exec_kernel" or len(parts) < 2:
        return None
    candidate = PACKAGE / parts[1]
    return parts[1] if candidate.is_dir() else ""  # "" = a top-level module


@pytest.mark.parametrize("path,parts", list(modules()), ids=lambda value: "/".join(value) if isinstance(value, tuple) else "")
def test_imports_only_go_down(path, parts):
    room = room_of(parts)
    if room is None:
        return  # the composition root may import every room
    wrong = []
    for line, name in imports(path, parts):
        target = internal_room(name)
        if target is None:
            if room == "core" and name.split(".")[0] in JUPYTER:
                wrong.append(f"line {line}: the engine imports {name}")
            continue
        if target != room and target not in ALLOWED[room]:
            wrong.append(f"line {line}: {room}/ imports {name}")
    assert not wrong, f"{'/'.join(parts)}: " + "; ".join(wrong)


def module_name(parts: tuple[str, ...]) -> str:
    name = ".".join(("unified_exec_kernel", *parts)).removesuffix(".py")
    return name.removesuffix(".__init__")


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in the file (a function's imports too).

    An import of a package the module sits in is left out: Python imports it first anyway."""
    known = {module_name(parts): (path, parts) for path, parts in modules()}
    graph = {}
    for name, (path, parts) in known.items():
        targets = set()
        for _line, imported in imports(path, parts):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]  # `from .x import f`: the module x
            if imported and imported != name and not name.startswith(imported + "."):
                targets.add(imported)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle: the strongly connected groups of more than one module (Tarjan)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_no_two_modules_import_each_other():
    """Imports go one way also between modules of one room and at the top: the kernel composes the
    extension, which knows nothing of the kernel (it imported it in a function, and kernel.py it)."""
    assert circles(import_graph()) == []


def test_the_circle_check_catches_a_circle():
    graph = import_graph()
    graph["unified_exec_kernel.extension"] = graph["unified_exec_kernel.extension"] | {"unified_exec_kernel.kernel"}
    graph["unified_exec_kernel.kernel"] = graph["unified_exec_kernel.kernel"] | {"unified_exec_kernel.extension"}
    assert circles(graph) == [["unified_exec_kernel.extension", "unified_exec_kernel.kernel"]]


def test_every_room_is_known():
    rooms = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert rooms == set(ALLOWED)


def test_the_rule_catches_a_sideways_import(tmp_path):
    """The check itself can fail: a notebook module importing the live face is caught."""
    fake = PACKAGE / "notebook" / "cell_run.py"
    lines = list(imports(fake, ("notebook", "cell_run.py")))
    lines.append((1, "unified_exec_kernel.live.widget"))
    offending = [name for _, name in lines if internal_room(name) not in (None, "notebook", *ALLOWED["notebook"])]
    assert offending == ["unified_exec_kernel.live.widget"]
