"""What an import from another server did, counted, and said in plain words (the
CLI prints `lines()`, the web UI shows the same lines)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from podsync.services.opml_io import SkippedFeed


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


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
    feeds_skipped: list[SkippedFeed] = field(default_factory=list)
    actions_read: int = 0
    actions_added: int = 0
    actions_already: int = 0
    # reason -> how many actions it kept out
    actions_skipped: Counter[str] = field(default_factory=Counter)
    # the failure that stopped the import (what was applied before it stays)
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error is None

    @property
    def changed_nothing(self) -> bool:
        return self.feeds_added + self.feeds_resubscribed + self.actions_added == 0

    def lines(self) -> list[str]:
        out = [f"Read from {self.server}" + (f" ({self.api} API)" if self.api else "") + ":"]
        devices = f" on {_n(self.devices, 'device')}" if self.devices else ""
        out.append(
            f"  {_n(self.feeds_read, 'subscription')}{devices}, "
            f"{_n(self.feeds_unsubscribed_there, 'feed')} unsubscribed there, "
            f"{_n(self.actions_read, 'episode action')}."
        )
        out.append(
            f"Subscriptions: {self.feeds_added} added, {self.feeds_resubscribed} subscribed "
            f"again, {self.feeds_already} already there, {len(self.feeds_skipped)} skipped."
        )
        for feed in self.feeds_skipped:
            out.append(f"  skipped {_shown(feed.url)}: {feed.reason}")
        if self.feeds_unsubscribed_there:
            out.append(
                f"  {_n(self.feeds_unsubscribed_there, 'feed')} you had unsubscribed on "
                f"that server {'was' if self.feeds_unsubscribed_there == 1 else 'were'} "
                "not added."
            )
        skipped = sum(self.actions_skipped.values())
        out.append(
            f"Episode actions: {self.actions_added} added, {self.actions_already} already "
            f"there, {skipped} skipped."
        )
        for reason, count in sorted(self.actions_skipped.items(), key=lambda kv: -kv[1]):
            out.append(f"  {_n(count, 'action')} skipped: {reason}")
        if self.error is not None:
            out.append(
                f"The import stopped: {self.error}. What was added above is kept; run the "
                "import again to complete it."
            )
        elif self.changed_nothing:
            out.append("Nothing new: everything was already here.")
        return out


def _shown(url: str, limit: int = 200) -> str:
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in url)
    return text if len(text) <= limit else text[: limit - 3] + "..."
