"""One composition root: services/compose/ builds podsync's services, and web/,
cli/ and serve/ ask it; none of them constructs a service itself. Also the floor
plan of web/: the process side (fork, signals, the listening socket) lives in
serve/, and web/ keeps a short list of shared modules."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "podsync"
COMPOSE = PACKAGE / "services" / "compose"
ASKERS = ("web", "cli", "serve")  # the layers that ask for services
MAX_SHARED_WEB_MODULES = 12


def _returned_types(module: Path) -> set[str]:
    """The class names the composition root's properties return: the services."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            for part in ast.walk(node.returns):
                if isinstance(part, ast.Name) and part.id[0].isupper():
                    names.add(part.id)
                elif isinstance(part, ast.Constant) and isinstance(part.value, str):
                    names.update(w for w in part.value.split(" | ") if w[:1].isupper())
    return names


def service_names() -> set[str]:
    names = _returned_types(COMPOSE / "core.py") | _returned_types(COMPOSE / "rare.py")
    names -= {"None", "T"}
    # The factories the composition root calls, and what a service is made of.
    return names | {"build_gpodder", "PasswordService", "ImportBounds", "UploadBounds"}


def constructions(root: Path, services: set[str]) -> list[str]:
    found = []
    for layer in ASKERS:
        for path in sorted((root / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                    name = func.value.id  # PasswordService.for_config(...)
                    if func.attr not in ("for_config",):
                        continue
                elif isinstance(func, ast.Name):
                    name = func.id
                else:
                    continue
                if name in services:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {name}")
    return found


def test_the_composition_root_names_the_services() -> None:
    names = service_names()
    for expected in ("AuthService", "SyncService", "Gpodder", "OpmlService", "ImportJobs"):
        assert expected in names


def test_web_cli_and_serve_construct_no_service() -> None:
    assert constructions(PACKAGE, service_names()) == []


def test_no_fork_signal_or_socket_under_web() -> None:
    """The process side is serve/'s: nothing under web/ forks, handles a signal
    or binds a listening socket."""
    found = []
    for path in sorted((PACKAGE / "web").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                call = f"{node.value.id}.{node.attr}"
                if call in ("os.fork", "signal.signal", "signal.pthread_sigmask", "socket.socket"):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {call}")
    assert found == []


def test_web_keeps_few_shared_modules() -> None:
    shared = sorted(p.name for p in (PACKAGE / "web").glob("*.py"))
    assert len(shared) <= MAX_SHARED_WEB_MODULES, shared
