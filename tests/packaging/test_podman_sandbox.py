"""The container tests' own podman (tests/support/podman_sandbox.py) closes cleanly.

`podman system reset` removes the sandbox's tmp_dir while a container's cleanup
process (started by its conmon when the reset stops it) may still write an event
there: the reset then fails with "unlinkat DIR/tmp/events: directory not empty" (a
known podman race). Here, stand-ins for those processes write into the events
directory for a few seconds while the sandbox closes (or start only once a quick
reset has finished, as they do on a loaded machine); it must close without error
and leave nothing behind. Run with RUN_PACKAGING_TESTS=1 (tests/conftest.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.packaged_support import cannot_run
from tests.support.podman_sandbox import Machine, Sandbox

pytestmark = [pytest.mark.container]

# A stand-in for `podman container cleanup`: it names the directory it writes to in
# its command line, as the real one names the sandbox's paths.
STRAGGLER = """
import os, sys, time
time.sleep(float(sys.argv[3]))
events, end, i = sys.argv[1], time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    try:
        os.makedirs(events, exist_ok=True)
        open(os.path.join(events, f"event-{os.getpid()}-{i}"), "w").close()
    except OSError:
        pass
    i += 1
"""


@pytest.mark.parametrize("late", [0, 8], ids=["during-the-reset", "after-the-reset"])
def test_the_sandbox_closes_while_cleanup_processes_write_events(
    tmp_path: Path, late: float
) -> None:
    if shutil.which("podman") is None:
        cannot_run("needs podman (apt-get install podman runc)")
    if os.geteuid() != 0:
        cannot_run("the container tests run podman as root")
    sandbox = Sandbox(tmp_path / "podman", Machine(listing={}, token=""))
    sandbox.podman("info", plain=True)
    events = sandbox.dir / "tmp" / "events"
    stragglers = [
        subprocess.Popen([sys.executable, "-c", STRAGGLER, str(events), "4", str(late)])
        for _ in range(3)
    ]
    try:
        sandbox.close()
    finally:
        codes = [straggler.wait(timeout=30) for straggler in stragglers]
    assert codes == [0, 0, 0]
    assert not sandbox.dir.exists()
