"""`podsync opml ...`: import and export a user's subscriptions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import click

from podsync import timestamps
from podsync.cli.base import Context, pass_context, run_with_services
from podsync.errors import Unavailable
from podsync.opml import OpmlError, parse_opml
from podsync.services.opml_io import ImportReport
from podsync.storage.maintenance import create_owner_only

if TYPE_CHECKING:  # click's progress bar class is private; only its type is needed
    from click._termui_impl import ProgressBar

    from podsync.services.compose.rare import RareServices

# Files with more feeds than this show a progress bar on a terminal.
PROGRESS_THRESHOLD = 300


@click.group()
def opml() -> None:
    """Import or export a user's subscriptions as OPML.

    \b
    Example:
      podsync opml import alice antennapod-export.opml
      podsync opml export alice -o alice.opml
    """


@opml.command("import", short_help="Subscribe a user to the feeds of an OPML file.")
@click.argument("name")
@click.argument("file", type=click.File("rb"))
@pass_context
def opml_import(ctx: Context, name: str, file: BinaryIO) -> None:
    """Subscribe NAME to every feed in the OPML FILE ('-' reads standard input).

    Feeds already subscribed are left alone, unsubscribed ones are subscribed
    again; invalid URLs and repeats are skipped. The whole file is checked
    first: a file that is not OPML imports nothing. Then feeds are saved in
    transactions of 1000, so a running server is never held up for long; an
    interrupted import can simply be run again.

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

    async def run(services: RareServices) -> ImportReport:
        service = services.opml
        user = await service.require_user(name)
        now = timestamps.now_us()
        if not show_bar:
            return await service.apply(user, service.plan(feeds, now), now)
        with click.progressbar(length=len(feeds), label="checking feeds", file=sys.stderr) as bar:
            plan = service.plan(feeds, now, progress=_advance(bar))
        with click.progressbar(
            length=len(plan.subscribes), label="saving feeds", file=sys.stderr
        ) as bar:
            return await service.apply(user, plan, now, progress=_advance(bar))

    async def run_resumable(services: RareServices) -> ImportReport:
        try:
            return await run(services)
        except Unavailable as exc:
            # Chunks written before the failure stay; a second run finishes the job.
            raise Unavailable(
                f"{exc.reason}; feeds saved so far are kept, run the import again to finish",
                exc.retry_after,
            ) from exc

    report = run_with_services(config, run_resumable)
    click.echo(f"added: {report.added}")
    click.echo(f"resubscribed: {report.resubscribed}")
    click.echo(f"already subscribed: {report.already_subscribed}")
    click.echo(f"skipped: {len(report.skipped)}")
    # Every feed not added, each on its own line (contract 14): a feed refused by a
    # limit must not hide behind "... and N more".
    for skipped in report.skipped:
        click.echo(f"  {_shown(skipped.url)}: {skipped.reason}")


def _shown(url: str, limit: int = 200) -> str:
    """A URL from the file, safe to print on one line: escapes for what is not
    printable (a &#10; in an attribute), cut when very long."""
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in url)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _advance(bar: ProgressBar[int]) -> Callable[[int], None]:
    def update(done: int) -> None:
        bar.update(done - bar.pos)

    return update


@opml.command("export", short_help="Write a user's feeds as OPML 2.0.")
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
@click.option("--force", is_flag=True, help="Overwrite the -o file when it exists.")
@pass_context
def opml_export(
    ctx: Context, name: str, output: str | None, include_unsubscribed: bool, force: bool
) -> None:
    """Write NAME's subscribed feeds as OPML 2.0 to standard output or a file.

    The file is readable by its owner only; an existing one is refused unless
    --force is given; a failed export leaves nothing behind.

    \b
    Example:
      podsync opml export alice -o alice.opml
      podsync opml export alice --include-unsubscribed > everything.opml
    """
    if output is not None and os.path.lexists(output) and not force:
        raise click.ClickException(f"{output} already exists; add --force to overwrite it")

    async def run(services: RareServices) -> bytes:
        service = services.opml
        user = await service.require_user(name)
        return await service.export(user, include_unsubscribed)

    document = run_with_services(ctx.config, run)
    if output is None:
        sys.stdout.buffer.write(document)
        sys.stdout.flush()
        return
    temporary = Path(f"{output}.partial")
    try:
        temporary.unlink(missing_ok=True)
        create_owner_only(temporary)
        with temporary.open("wb") as out:
            out.write(document)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, output)
    except OSError as exc:
        temporary.unlink(missing_ok=True)  # a full disk must not leave half a file
        raise click.ClickException(f"cannot write {output}: {exc.strerror}") from None
