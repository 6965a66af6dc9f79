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
