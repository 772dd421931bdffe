"""A podman of the container tests' own, beside the machine's.

The machine's podman may hold someone's compose install: the image
localhost/podsync:latest and the volume podsync-data, with their data in it. The
container tests build, tag, run and remove things under those very names, so they
do it in a store of their own, under a temporary directory, which every podman they
start (podman-compose, `podman system service`, packaging/container.sh) reads from
two variables it inherits:

- CONTAINERS_STORAGE_CONF: images, containers, volumes and podman's database
  (graphroot, runroot) under DIR;
- CONTAINERS_CONF: podman's tmp_dir under DIR (exit codes, events, the marker of a
  store already refreshed since boot), locks in files there instead of the
  machine-wide shared memory (podman frees every lock in that memory when it
  refreshes a store), network definitions under DIR, and a default network of its
  own made here: the default one (bridge podman0) is shared by every store, and a
  store's last container leaving a network tears it down.

Two such configuration files: `plain`, podman as a person runs it
(tests/packaging/test_compose_run.py), and `packaging`, with packaging/podman-cgroups-v1.conf's
settings added on a host with cgroups v1, which packaging/lib.sh would have used.
Shared with the machine still: the kernel's bridges and firewall rules (under
names of the sandbox's own, on subnets not in use), podman's address book of its
networks (by network name) and /var/tmp for image copies.

Before anything runs in it, the machine's store gets decoys where it has no podsync
of its own: a volume podsync-data holding a file and an image tagged
localhost/podsync:latest. `Machine.changes()` lists what is no longer as it was:
the decoys (or the machine's own volume and image of those names) and the lists of
images, volumes, containers and networks. At the end `podman system reset` empties
the sandbox and its directory is removed; the decoys go too.
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
import subprocess
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.packaged_support import ROOT

CONTAINER_SH = ROOT / "packaging" / "container.sh"
CGROUPS_V1_CONF = ROOT / "packaging" / "podman-cgroups-v1.conf"
VOLUME = "podsync-data"  # docs/install.md's names
LATEST = "localhost/podsync:latest"
DECOY_LABEL = "podsync.test-decoy"
RESETS = 3  # attempts at `podman system reset` when the sandbox closes (Sandbox.close)


def cgroups_v1() -> bool:
    """The test packaging/lib.sh makes (no unified hierarchy: v1 or hybrid)."""
    return not Path("/sys/fs/cgroup/cgroup.controllers").exists()


def _toml(tables: dict[str, dict[str, Any]]) -> str:
    def value(item: Any) -> str:
        if isinstance(item, list):
            return "[" + ", ".join(value(i) for i in item) + "]"
        if isinstance(item, int):
            return str(item)
        return '"' + str(item).replace("\\", "\\\\").replace('"', '\\"') + '"'

    return "".join(
        f"[{name}]\n" + "".join(f"{key} = {value(v)}\n" for key, v in table.items()) + "\n"
        for name, table in tables.items()
    )


class Sandbox:
    """podman with its own storage, state, locks and networks under `directory`."""

    def __init__(self, directory: Path, machine: Machine) -> None:
        self.machine = machine  # the machine's store as it was found
        self.dir = directory
        directory.mkdir()
        self.network = f"podsync-test-{secrets.token_hex(4)}"
        self.storage_conf = directory / "storage.conf"
        self.storage_conf.write_text(
            _toml({"storage": {"graphroot": str(directory / "root"),
                               "runroot": str(directory / "run")}})
        )  # fmt: skip
        self.plain_conf = directory / "plain.conf"
        self.packaging_conf = directory / "packaging.conf"
        self._write_confs(default_network=False)
        # Made before it is named the default: podman refuses to make the default one.
        self.podman("network", "create", "--disable-dns", self.network, plain=True)
        self._write_confs(default_network=True)

    def _write_confs(self, default_network: bool) -> None:
        engine = {"tmp_dir": str(self.dir / "tmp"), "lock_type": "file"}
        network = {"network_config_dir": str(self.dir / "networks")}
        if default_network:
            network["default_network"] = self.network
        self.plain_conf.write_text(_toml({"engine": engine, "network": network}))
        tables: dict[str, dict[str, Any]] = {"engine": {}, "network": network}
        if cgroups_v1():
            tables.update(tomllib.loads(CGROUPS_V1_CONF.read_text()))
        tables["engine"] = {**tables["engine"], **engine}
        self.packaging_conf.write_text(_toml(tables))

    def env(self, plain: bool = False, **extra: str) -> dict[str, str]:
        """This process's environment with the sandbox's two variables: for podman as
        a person runs it (`plain`) or as the packaging scripts do."""
        conf = self.plain_conf if plain else self.packaging_conf
        return {
            **os.environ,
            "CONTAINERS_STORAGE_CONF": str(self.storage_conf),
            "CONTAINERS_CONF": str(conf),
            **extra,
        }

    def podman(
        self,
        *args: str,
        plain: bool = False,
        input: str | None = None,
        timeout: float = 120,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """podman in the sandbox: as the packaging scripts run it (`container.sh
        podman`), or `plain` as a person does."""
        command = ["podman"] if plain else ["bash", str(CONTAINER_SH), "podman"]
        done = subprocess.run(
            [*command, *args], env=self.env(plain), input=input, capture_output=True,
            text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)}: {done.returncode}\n{done.stderr}")
        return done

    def close(self) -> None:
        """Remove everything podman made here (it unmounts the layers), then the rest.

        A container the reset stops has its conmon start `podman container cleanup`,
        which may write an event into tmp_dir while the reset removes that directory:
        the reset then fails with "unlinkat DIR/tmp/events: directory not empty" (a
        known podman race, podman issue 17957) after it has removed the store. So a
        failed reset runs again once no process names this directory any more; the
        last failure is raised. A reset that succeeds may still leave such a process
        writing (on a loaded machine it outlives a quick reset): the rest is removed
        only once none is left, or it makes the directory again."""
        try:
            for _ in range(RESETS - 1):
                done = self.podman(
                    "system", "reset", "--force", plain=True, timeout=600, check=False
                )
                if done.returncode == 0:
                    return
                self._wait_for_stragglers()
            self.podman("system", "reset", "--force", plain=True, timeout=600)
        finally:
            self._wait_for_stragglers()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _wait_for_stragglers(self, timeout: float = 60.0) -> None:
        """Until no process but this one has the sandbox's directory in its command
        line (conmon, `podman container cleanup`), or `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _a_process_names(str(self.dir)):
            time.sleep(0.2)


def _a_process_names(text: str) -> bool:
    """Whether a process (not this one) has `text` in its command line."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                return True
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return False


def machine_podman(*args: str, check: bool = True) -> str:
    """podman as this machine has it (its own store)."""
    done = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=120, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done.stdout


def machine_listing() -> dict[str, list[str]]:
    """What `podman images`, `volume ls`, `ps -a` and `network ls` show."""
    lists = {
        "images": ("images", "--all", "--no-trunc", "--format", "{{.ID}} {{.Repository}}:{{.Tag}}"),
        "volumes": ("volume", "ls", "--format", "{{.Name}}"),
        "containers": ("ps", "--all", "--no-trunc", "--format", "{{.ID}} {{.Names}} {{.Image}}"),
        "networks": ("network", "ls", "--format", "{{.Name}}"),
    }
    return {name: sorted(machine_podman(*args).splitlines()) for name, args in lists.items()}


@dataclass
class Machine:
    """The machine's store as the container tests found it, with decoys planted
    where it had no podsync-data volume or localhost/podsync:latest image."""

    listing: dict[str, list[str]]
    token: str
    volume_created: str = ""
    image_id: str = ""
    decoy_volume: bool = False
    decoy_image: bool = False
    removed: list[str] = field(default_factory=list)

    @classmethod
    def plant(cls, scratch: Path) -> Machine:
        machine = cls(machine_listing(), secrets.token_hex(8))
        label = f"{DECOY_LABEL}={machine.token}"
        if not _exists("volume", VOLUME):
            machine_podman("volume", "create", "--label", label, VOLUME)
            mountpoint = machine_podman("volume", "inspect", "--format", "{{.Mountpoint}}", VOLUME)
            (Path(mountpoint.strip()) / "decoy").write_text(machine.token)
            machine.decoy_volume = True
        machine.volume_created = _volume_created()
        if not _exists("image", LATEST):
            archive = scratch / "decoy.tar"
            with tarfile.open(archive, "w") as tar:
                data = machine.token.encode()
                info = tarfile.TarInfo("decoy")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            machine_podman("import", "--quiet", "--change", f"LABEL {label}", str(archive), LATEST)
            machine.decoy_image = True
        machine.image_id = _image_id()
        return machine

    def changes(self) -> list[str]:
        """What is not as it was: the volume and the image of those names."""
        found = []
        if not _exists("volume", VOLUME) or _volume_created() != self.volume_created:
            found.append(f"the volume {VOLUME} was removed or made anew")
        elif self.decoy_volume:
            mountpoint = machine_podman("volume", "inspect", "--format", "{{.Mountpoint}}", VOLUME)
            decoy = Path(mountpoint.strip()) / "decoy"
            if not decoy.exists() or decoy.read_text() != self.token:
                found.append(f"the file in the volume {VOLUME} changed")
        if not _exists("image", LATEST) or _image_id() != self.image_id:
            found.append(f"{LATEST} was removed or names another image")
        return found

    def remove_decoys(self) -> None:
        if self.decoy_volume and _label("volume", VOLUME) == self.token:
            machine_podman("volume", "rm", VOLUME)
        if self.decoy_image and _exists("image", self.image_id):
            machine_podman("rmi", "--force", self.image_id)

    def listing_changes(self) -> list[str]:
        now = machine_listing()
        found = []
        for name, was in self.listing.items():
            gone, new = sorted(set(was) - set(now[name])), sorted(set(now[name]) - set(was))
            if gone or new:
                found.append(f"{name}: {gone} went, {new} came")
        return found


def _exists(kind: str, name: str) -> bool:
    done = subprocess.run(["podman", kind, "exists", name], capture_output=True, timeout=60)
    return done.returncode == 0


def _volume_created() -> str:
    return machine_podman("volume", "inspect", "--format", "{{.CreatedAt}}", VOLUME).strip()


def _image_id() -> str:
    return machine_podman("image", "inspect", "--format", "{{.Id}}", LATEST).strip()


def _label(kind: str, name: str) -> str:
    template = '{{index .Labels "' + DECOY_LABEL + '"}}'
    return machine_podman(kind, "inspect", "--format", template, name, check=False).strip()


@contextmanager
def sandbox_beside_decoys() -> Iterator[Sandbox]:
    """A sandbox under $TMPDIR (else /var/tmp: images take a gigabyte or more, more
    than a /tmp in memory may hold), with the machine's store's decoys planted
    first; afterwards, what changed there raises AssertionError."""
    parent = os.environ.get("TMPDIR") or "/var/tmp"
    directory = Path(tempfile.mkdtemp(prefix="podsync-podman-", dir=parent))
    try:
        machine = Machine.plant(directory)
        sandbox = Sandbox(directory / "podman", machine)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    try:
        yield sandbox
    finally:
        try:
            sandbox.close()
        finally:
            changed = machine.changes()
            machine.remove_decoys()
            changed += machine.listing_changes()
            shutil.rmtree(directory, ignore_errors=True)
    if changed:
        raise AssertionError("the machine's podman store changed: " + "; ".join(changed))
