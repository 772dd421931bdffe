"""What an import from another server did, counted, and said in plain words (the
CLI prints `lines()`, the web UI shows the same lines).

The report is bounded whatever the remote sent: counts, then at most SHOWN named
feeds and SHOWN reasons, and "and N more". It is kept in the database as JSON
(`to_json`, `from_json`), so any process shows it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

SHOWN = 200  # feeds named, reasons named
SHOWN_CHARS = 200  # characters of a feed's address or a reason


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


@dataclass
class RemoteImportReport:
    server: str
    api: str = ""
    devices: int = 0
    feeds_read: int = 0
    feeds_unsubscribed_there: int = 0
    feeds_added: int = 0
    feeds_resubscribed: int = 0
    feeds_already: int = 0
    feeds_skipped: int = 0
    # (address, reason) of the first SHOWN skipped feeds
    skipped_feeds: list[tuple[str, str]] = field(default_factory=list)
    actions_read: int = 0
    actions_added: int = 0
    actions_already: int = 0
    # reason -> how many actions it kept out, for SHOWN reasons at most
    actions_skipped: Counter[str] = field(default_factory=Counter)
    # actions skipped for a reason past the SHOWN named ones
    actions_skipped_other: int = 0
    # where the episode actions were read from: the `since` of an earlier import
    # that stopped (its date shown), None from the start
    resumed: str | None = None
    # the failure or bound that stopped the import (what was applied before stays)
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error is None

    @property
    def changed_nothing(self) -> bool:
        return self.feeds_added + self.feeds_resubscribed + self.actions_added == 0

    @property
    def read_nothing(self) -> bool:
        return self.feeds_read == 0 and self.actions_read == 0

    def skip_feed(self, url: str, reason: str) -> None:
        self.feeds_skipped += 1
        if len(self.skipped_feeds) < SHOWN:
            self.skipped_feeds.append((_shown(url), _shown(reason)))

    def skip_actions(self, reasons: Counter[str]) -> None:
        for reason, count in reasons.items():
            if reason in self.actions_skipped or len(self.actions_skipped) < SHOWN:
                self.actions_skipped[_shown(reason)] += count
            else:
                self.actions_skipped_other += count

    def lines(self, final: bool = True) -> list[str]:
        """The report in words; `final` False for an import still running (counts
        so far, nothing said of how it ended)."""
        out = [f"Read from {self.server}" + (f" ({self.api} API)" if self.api else "") + ":"]
        devices = f" on {_n(self.devices, 'device')}" if self.devices else ""
        out.append(
            f"  {_n(self.feeds_read, 'subscription')}{devices}, "
            f"{_n(self.feeds_unsubscribed_there, 'feed')} unsubscribed there, "
            f"{_n(self.actions_read, 'episode action')}."
        )
        if self.resumed:
            out.append(f"  Episode actions read from where the import of {self.resumed} stopped.")
        out.append(
            f"Subscriptions: {self.feeds_added:,} added, {self.feeds_resubscribed:,} subscribed "
            f"again, {self.feeds_already:,} already there, {self.feeds_skipped:,} skipped."
        )
        for url, reason in self.skipped_feeds:
            out.append(f"  skipped {url}: {reason}")
        if self.feeds_skipped > len(self.skipped_feeds):
            out.append(f"  and {self.feeds_skipped - len(self.skipped_feeds):,} more skipped.")
        if self.feeds_unsubscribed_there:
            out.append(
                f"  {_n(self.feeds_unsubscribed_there, 'feed')} you had unsubscribed on "
                f"that server {'was' if self.feeds_unsubscribed_there == 1 else 'were'} "
                "not added."
            )
        skipped = sum(self.actions_skipped.values()) + self.actions_skipped_other
        out.append(
            f"Episode actions: {self.actions_added:,} added, {self.actions_already:,} already "
            f"there, {skipped:,} skipped."
        )
        for reason, count in sorted(self.actions_skipped.items(), key=lambda kv: -kv[1]):
            out.append(f"  {_n(count, 'action')} skipped: {reason}")
        if self.actions_skipped_other:
            out.append(
                f"  and {_n(self.actions_skipped_other, 'action')} skipped for other reasons."
            )
        if not final:
            return out
        if self.error is not None:
            out.append(
                f"The import stopped: {self.error}. What was added above is kept; run the "
                "import again to complete it."
            )
        elif self.changed_nothing:
            out.append("Nothing new: everything was already here.")
        return out

    def to_json(self) -> str:
        data: dict[str, Any] = dict(self.__dict__)
        data["actions_skipped"] = dict(self.actions_skipped)
        return json.dumps(data)  # ASCII: a lone surrogate cannot reach the database

    @classmethod
    def from_json(cls, text: str) -> RemoteImportReport:
        data = json.loads(text)
        data["actions_skipped"] = Counter(data.get("actions_skipped", {}))
        data["skipped_feeds"] = [tuple(pair) for pair in data.get("skipped_feeds", [])]
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


def _shown(text: str, limit: int = SHOWN_CHARS) -> str:
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
