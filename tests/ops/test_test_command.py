"""The README's test command itself: run in parallel (`-n auto`), it still says which
packaging tests it left out and how to run them, and why a test skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    # As a person runs it: no CI settings (REQUIRE_ALL_TESTS would fail the skip).
    left_out = ("RUN_PACKAGING_TESTS", "REQUIRE_ALL_TESTS", "PYTEST_XDIST_WORKER")
    env = {k: v for k, v in os.environ.items() if k not in left_out}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_in_parallel_the_summary_says_why_a_test_skipped_and_what_was_left_out(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import pytest\n\n\ndef test_needs_a_tool() -> None:\n"
        "    pytest.skip('needs a tool that is not installed (apt-get install tool)')\n"
    )
    done = _pytest(
        "-n",
        "2",
        "tests/packaging/test_release_files.py",
        "tests/packaging/test_executable.py",
        str(probe),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    # Why the probe skipped, in the short summary (-rs in pytest's addopts).
    assert any(
        "SKIPPED" in x and "needs a tool that is not installed (apt-get install tool)" in x
        for x in lines
    ), done.stdout
    # The packaging tests the workers left out, counted, by file, and how to run them.
    [line] = [x for x in lines if "not selected" in x]
    assert int(line.split()[0]) > 0
    assert "test_executable.py" in line and "RUN_PACKAGING_TESTS=1" in line
    assert "passed" in lines[-1] and "1 skipped" in lines[-1] and "failed" not in lines[-1]
