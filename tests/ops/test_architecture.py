"""The floor plan holds: the import-linter contracts in pyproject.toml, no import
cycle anywhere in podsync/, and no module past the size a reader takes in."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "podsync"
MAX_LINES = 400


def test_the_import_contracts_are_kept() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.skip("lint-imports is not installed (pip install '.[test]')")
    result = subprocess.run(
        [lint_imports, "--no-cache"],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return groups


def test_no_module_of_podsync_imports_itself_back() -> None:
    graph = grimp.build_graph("podsync", exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_not_even_for_its_types() -> None:
    """An import under TYPE_CHECKING runs only for the checker, but a reader follows
    it all the same: a circle through one is still a circle (web/ops/metrics.py named
    web/ops/prometheus.py's Metrics that way)."""
    graph = grimp.build_graph("podsync", exclude_type_checking_imports=False, cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_loop() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.b", "a.c", "a.d"):
        graph.add_module(name)
    graph.add_import(importer="a.b", imported="a.c")
    graph.add_import(importer="a.c", imported="a.b")
    graph.add_import(importer="a.c", imported="a.d")
    assert _cycles(graph) == [["a.b", "a.c"]]


def test_no_module_is_past_the_size_a_reader_takes_in() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text("utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_domain_contract_names_every_module_at_the_package_root() -> None:
    """A domain module left out of the contract could import a layer unseen."""
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text("utf-8"))
    [domain] = [
        contract
        for contract in config["tool"]["importlinter"]["contracts"]
        if contract["name"] == "The domain modules at the package root import no layer"
    ]
    at_the_root = {
        f"podsync.{path.stem}"
        for path in PACKAGE.glob("*.py")
        if path.stem not in ("__init__", "__main__")
    }
    assert sorted(at_the_root - set(domain["source_modules"])) == []
