"""The version is written once, the changelog has its section, and packaging/release.sh
refuses a version the tree does not carry (before it builds anything)."""

from __future__ import annotations

import re
import subprocess
import tomllib
from importlib.metadata import version
from pathlib import Path

import yaml

import podsync

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_written_once_in_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "podsync.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", podsync.__version__)
    assert version("podsync") == podsync.__version__


RELEASE_COMMIT = re.compile(r"^Version set in commit `([0-9a-f]{7,40})`", re.MULTILINE)


def test_the_changelog_says_what_this_version_adds() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    sections = re.findall(r"^## (\S+)", changelog, re.MULTILINE)
    assert sections[0] == podsync.__version__
    # For people: no issue numbers, and no commit hashes but each release's own.
    assert not re.search(r"#\d+|\b[0-9a-f]{7,40}\b", RELEASE_COMMIT.sub("", changelog))


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_changelog_names_the_commit_that_set_each_release_s_version() -> None:
    """Each release (the top section may wait for its commit: a commit cannot name
    itself) names the commit where the version became its own."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    parts = re.split(r"^## (\S+)\n", changelog, flags=re.MULTILINE)[1:]
    for index, (release, body) in enumerate(zip(parts[::2], parts[1::2], strict=True)):
        found = RELEASE_COMMIT.search(body)
        if found is None and index == 0:
            continue
        assert found is not None, f"## {release} names no commit"
        commit = found.group(1)
        assert _carries(commit, release), f"{release}: commit {commit} does not carry it"
        parent = _git("rev-parse", "--verify", "--quiet", f"{commit}^")
        if parent.returncode == 0:
            assert not _carries(f"{commit}^", release), f"{release} before {commit}"


def _carries(revision: str, release: str) -> bool:
    """Whether the tree of `revision` says it is version `release`."""
    files = [_git("show", f"{revision}:{path}").stdout for path in _VERSION_FILES]
    return any(f'"{release}"' in text for text in files)


# Where the version has been written: pyproject.toml until 0.2.0, then podsync/__init__.py.
_VERSION_FILES = ("pyproject.toml", "podsync/__init__.py")


def test_release_refuses_a_version_the_tree_does_not_carry(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "packaging" / "release.sh"), "v9.9.9"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert f"the tree is version {podsync.__version__}, not 9.9.9" in done.stderr
    assert not (ROOT / "dist" / "release" / "9.9.9").exists()


def test_the_release_workflow_runs_release_sh_on_a_version_tag() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    # YAML 1.1 reads the key `on` as True.
    trigger = workflow.get("on") or workflow[True]
    assert trigger == {"push": {"tags": ["v*.*.*"]}}
    runs = [step.get("run", "") for step in workflow["jobs"]["release"]["steps"]]
    assert any('packaging/release.sh "${GITHUB_REF_NAME#v}"' in run for run in runs)
