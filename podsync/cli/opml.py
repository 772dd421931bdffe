"""`podsync opml ...`: import and export a user's subscriptions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

import click

from podsync import timestamps
from podsync.cli.base import Context, pass_context, run_with_db
from podsync.engine import Engine
from podsync.opml import OpmlError, parse_opml
from podsync.services.opml_io import ImportReport, OpmlService
from podsync.services.sync import SyncService

if TYPE_CHECKING:  # click's progress bar class is private; only its type is needed
    from click._termui_impl import ProgressBar

# Files with more feeds than this show a progress bar on a terminal.
PROGRESS_THRESHOLD = 300
SKIPPED_SHOWN = 10


@click.group()
def opml() -> None:
    """Import or export a user's subscriptions as OPML."""


@opml.command("import")
@click.argument("name")
@click.argument("file", type=click.File("rb"))
@pass_context
def opml_import(ctx: Context, name: str, file: BinaryIO) -> None:
    """Subscribe NAME to every feed in the OPML FILE ('-' reads standard input).

    Feeds already subscribed are left alone, unsubscribed ones are subscribed
    again; invalid URLs and repeats are skipped. All or nothing: a file that is
    not OPML imports nothing.

    \b
    Example:
      podsync opml import alice overcast.opml
      curl -s https://example.org/list.opml | podsync opml import alice -
    """
    config = ctx.config
    try:
        feeds = parse_opml(file.read())
    except OpmlError as exc:
        raise click.ClickException(f"{file.name}: {exc}; nothing imported") from None
    show_bar = len(feeds) > PROGRESS_THRESHOLD and sys.stderr.isatty()

    async def run(db: Engine) -> ImportReport:
        service = OpmlService(db, SyncService(db, config.sync))
        user = await service.require_user(name)
        now = timestamps.now_us()
        if not show_bar:
            return await service.apply(user, service.plan(feeds, now), now)
        with click.progressbar(length=len(feeds), label="checking feeds", file=sys.stderr) as bar:
            plan = service.plan(feeds, now, progress=_advance(bar))
        click.echo(f"saving {len(plan.subscribes)} feeds in one transaction", err=True)
        return await service.apply(user, plan, now)

    report = run_with_db(config, run)
    click.echo(f"added: {report.added}")
    click.echo(f"resubscribed: {report.resubscribed}")
    click.echo(f"already subscribed: {report.already_subscribed}")
    click.echo(f"skipped: {len(report.skipped)}")
    for skipped in report.skipped[:SKIPPED_SHOWN]:
        click.echo(f"  {_shown(skipped.url)}: {skipped.reason}")
    if len(report.skipped) > SKIPPED_SHOWN:
        click.echo(f"  ... and {len(report.skipped) - SKIPPED_SHOWN} more")


def _shown(url: str, limit: int = 200) -> str:
    """A URL from the file, safe to print on one line: escapes for what is not
    printable (a &#10; in an attribute), cut when very long."""
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in url)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _advance(bar: ProgressBar[int]) -> Callable[[int], None]:
    def update(done: int) -> None:
        bar.update(done - bar.pos)

    return update


@opml.command("export")
@click.argument("name")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write to this file instead of standard output.",
)
@click.option(
    "--include-unsubscribed", is_flag=True, help="Also list feeds the user unsubscribed from."
)
@pass_context
def opml_export(ctx: Context, name: str, output: str | None, include_unsubscribed: bool) -> None:
    """Write NAME's subscribed feeds as OPML 2.0 to standard output or a file.

    \b
    Example:
      podsync opml export alice -o alice.opml
      podsync opml export alice --include-unsubscribed > everything.opml
    """

    async def run(db: Engine) -> bytes:
        service = OpmlService(db, SyncService(db, ctx.config.sync))
        user = await service.require_user(name)
        return await service.export(user, include_unsubscribed)

    document = run_with_db(ctx.config, run)
    if output is None:
        sys.stdout.buffer.write(document)
        sys.stdout.flush()
        return
    temporary = f"{output}.partial"
    try:
        with open(temporary, "wb") as out:
            out.write(document)
        os.replace(temporary, output)
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror}") from None
