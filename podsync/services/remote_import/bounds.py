"""How far one import from another server may go (contract 16).

Everything an import reads comes from a server it does not control, so it is
bounded like an upload, by what the user may keep (their limits), never by what the
remote sends. Past a bound the import stops, keeps what it wrote, and its report
names the bound; a later run goes on from where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync.config import Config
from podsync.errors import PodsyncError

KIB = 1024
MIB = 1024 * KIB

DEADLINE_S = 30 * 60.0  # the whole import, from the sign-in to the last write
MAX_REQUESTS = 5000  # remote calls of one import
# Episode actions read, counting repeats and junk: a server that pages by time sends
# some twice; twice what may be kept is plenty for any real server.
ACTIONS_READ_FACTOR = 2
# One answer: oPodSync and Nextcloud send every action at once, a few hundred bytes
# each (oPodSync pretty-prints): 1 KiB per action the user may keep, at least 16 MiB.
ANSWER_BYTES_PER_ACTION = KIB
MIN_ANSWER_BYTES = 16 * MIB


class ImportBoundReached(PodsyncError):
    """The import went as far as one of its bounds; the message names it."""


@dataclass(frozen=True)
class ImportBounds:
    max_actions_read: int
    max_feeds: int  # distinct subscribed feeds kept from the remote's lists
    max_devices: int  # device lists read
    max_answer_bytes: int
    max_requests: int = MAX_REQUESTS
    deadline_s: float = DEADLINE_S

    @classmethod
    def for_config(cls, config: Config) -> ImportBounds:
        actions = config.gpodder.max_episode_actions_per_user
        return cls(
            max_actions_read=ACTIONS_READ_FACTOR * actions,
            max_feeds=config.sync.max_subscriptions_per_user,
            max_devices=config.gpodder.max_devices_per_user,
            max_answer_bytes=max(MIN_ANSWER_BYTES, ANSWER_BYTES_PER_ACTION * actions),
        )

    def actions_read_message(self) -> str:
        return (
            f"{self.max_actions_read:,} episode actions read, the most one import reads "
            f"(twice gpodder.max_episode_actions_per_user)"
        )

    def feeds_message(self) -> str:
        return (
            f"the server lists more than {self.max_feeds:,} feeds, the most an account "
            f"may subscribe to (sync.max_subscriptions_per_user); the first "
            f"{self.max_feeds:,} were read"
        )

    def devices_message(self) -> str:
        return (
            f"the server lists more than {self.max_devices:,} devices, the most an "
            f"account may have (gpodder.max_devices_per_user); the subscriptions of the "
            f"first {self.max_devices:,} were read"
        )

    def requests_message(self) -> str:
        return f"{self.max_requests:,} requests to that server, the most one import makes"

    def answer_message(self) -> str:
        return (
            f"the answer is larger than {self.max_answer_bytes // MIB} MiB, the most one "
            f"import reads in one answer (1 KiB per action of "
            f"gpodder.max_episode_actions_per_user, at least 16 MiB)"
        )

    def deadline_message(self) -> str:
        minutes = self.deadline_s / 60
        shown = f"{minutes:g} minutes" if minutes >= 1 else f"{self.deadline_s:g} seconds"
        return f"the import ran for {shown}, its deadline"
