"""docs/architecture.md is the floor plan a newcomer reads first: every path it
names exists, and every package under podsync/ is named there (a package added
without a word in it fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "podsync"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

# A file's path, as prose names it: a URL path (`/api/2/devices/alice.json`) is not one.
FILE = re.compile(r"(?<![\w/.:<>{}-])((?:[\w-]+/)*[\w-][\w.-]*\.(?:py|toml|md|sql|sh))\b")
# A folder, as prose names it in code: `web/opa/`.
FOLDER = re.compile(r"`((?:[\w-]+/)+)`")
TREE_FOLDER = re.compile(r"^( *)([\w-]+)/(?:\s|$)")


def _text() -> str:
    return ARCHITECTURE.read_text("utf-8")


def _tree(text: str) -> list[str]:
    """The folders of the tree at the top (`podsync/` and what it nests), as paths
    relative to the repository."""
    block = text.split("```\n", 2)[1]
    assert block.startswith("podsync/"), "the tree of podsync/ comes first"
    stack: list[str] = []
    found = []
    for line in block.splitlines():
        match = TREE_FOLDER.match(line)
        if match is None:
            continue
        depth = len(match.group(1)) // 2
        stack[depth:] = [match.group(2)]
        found.append("/".join(stack))
    return found


def _exists(name: str) -> bool:
    """A name with a folder is under the repository or podsync/; a bare file name,
    which the tree lists under its folder, is anywhere in podsync/, at the top or
    (a link) beside docs/architecture.md."""
    if "/" in name.rstrip("/"):
        return (ROOT / name).exists() or (PACKAGE / name).exists()
    beside = (ROOT / name, ARCHITECTURE.parent / name)
    return any(path.exists() for path in beside) or any(PACKAGE.rglob(name.rstrip("/")))


def test_every_path_the_floor_plan_names_exists() -> None:
    text = _text()
    named = set(FILE.findall(text)) | set(FOLDER.findall(text))
    assert len(named) > 50  # the walk found the paths
    assert sorted(name for name in named if not _exists(name)) == []


def test_every_folder_of_the_tree_exists() -> None:
    tree = _tree(_text())
    assert len(tree) > 10
    assert [path for path in tree if not (ROOT / path).is_dir()] == []


def test_every_package_is_named() -> None:
    text = _text()
    named = {f"podsync/{path}" for path in FOLDER.findall(text)} | {
        f"{path}/" for path in _tree(text)
    }
    packages = {
        f"{init.parent.relative_to(ROOT).as_posix()}/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE
    }
    assert sorted(packages - named) == []
