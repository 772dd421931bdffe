"""The README and docs/ as a reader meets them: the README is short, starts with
how to get the code, then exactly two set-up commands (install and serve in a
virtualenv, which Debian 12 allows; install the test extra and run the very
command CI runs), every relative
link leads to a file that exists, and nothing of the build machine leaks in."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# Written on their own branches, linked from here already.
ELSEWHERE = {"docs/install.md", "docs/limits.md"}


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.DOTALL)


def test_the_readme_is_short_and_starts_with_the_two_set_up_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    head = text.split("\n## ", 1)[0]
    clone, install, tests = (block.strip() for block in shell_blocks(head))
    # First how to get the code, and into it: the commands below run in the clone.
    assert re.fullmatch(r"git clone \S.* podsync && cd podsync", clone), clone
    assert "feeds.allow_private" in head  # feeds on the home network need it
    # Debian 12 refuses `pip install .` outside a virtualenv: the first command makes one.
    assert install.startswith("python3 -m venv ")
    assert "pip install . " in install and install.endswith("podsync serve")
    assert tests.startswith("python3 -m venv ") and "pip install '.[test]'" in tests
    ci = (ROOT / ".ci" / "run").read_text()
    [ci_tests] = re.findall(r"^python -m pytest .*$", ci, re.MULTILINE)
    assert tests.endswith(ci_tests)
    assert "pip install --quiet '.[test]'" in ci


def test_relative_links_lead_to_files_that_exist() -> None:
    missing = []
    for page in [README, *DOCS]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            path = (page.parent / target).resolve()
            name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
            if not path.exists() and name not in ELSEWHERE:
                missing.append(f"{page.name}: {target}")
    assert missing == []


def test_nothing_of_the_build_machine_or_the_tracker_leaks_in() -> None:
    for page in [README, *DOCS]:
        text = page.read_text()
        assert "/work/" not in text, page.name
        assert not re.search(r"\bissue #?\d+", text, re.IGNORECASE), page.name
        assert not re.search(r"\b(main|commit) at [0-9a-f]{7,}\b", text), page.name


def test_the_documented_proxy_recipes_are_the_tested_files() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text()
    nginx = (ROOT / "packaging" / "nginx.conf").read_text()
    caddy = (ROOT / "packaging" / "Caddyfile").read_text()
    [nginx_shown] = re.findall(r"```nginx\n(.*?)```", operations, re.DOTALL)
    for line in nginx_shown.strip().splitlines():
        assert line.strip() in nginx, line
    [caddy_shown] = re.findall(r"```caddyfile\n(.*?)```", operations, re.DOTALL)
    for line in caddy_shown.strip().splitlines():
        assert line.strip() in caddy, line


def test_every_script_the_docs_run_is_executable_in_git() -> None:
    """`packaging/container.sh build` as the docs write it needs the mode in git, not
    only on this checkout (a fresh clone gets "Permission denied" otherwise)."""
    import subprocess

    text = "\n".join(p.read_text() for p in [README, *DOCS, *sorted(ROOT.glob("packaging/*"))])
    scripts = set(re.findall(r"\bpackaging/[\w.-]+\.sh\b", text))
    assert {"packaging/container.sh", "packaging/build.sh", "packaging/release.sh"} <= scripts
    listed = subprocess.run(
        ["git", "ls-files", "-s", "--", *sorted(scripts)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    modes = {line.split("\t")[1]: line.split()[0] for line in listed.splitlines()}
    assert set(modes) == scripts, f"not in git: {scripts - set(modes)}"
    assert {path for path, mode in modes.items() if mode != "100755"} == set()
