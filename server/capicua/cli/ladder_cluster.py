"""A server's ladders when several server processes share one PostgreSQL (``capicua serve
--db``): each ladder's runner (the arena's hosted ladder) runs in the process that leads it
(:class:`capicua.server.shared.Leadership`), and moves to another process when that one
stops or dies."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from capicua.server import errors
from capicua.server.app import App
from capicua.server.ladders import LadderDef
from capicua.server.matches import FINISHED
from capicua.server.shared import SYNC_S, Leadership, node_name, relay_targets

if TYPE_CHECKING:
    from capicua.arena.ladder.config import Ladder

log = structlog.get_logger("capicua.cli.ladder_cluster")


async def run_led(
    app: App,
    ladders: list[tuple[LadderDef, Ladder]],
    *,
    db: str,
    advertise: str | None,
    run_one: Callable[[LadderDef, Ladder], asyncio.Future[None]],
) -> None:
    """Until cancelled: run ``run_one(ladder)`` for each ladder this process leads, and
    stop it as soon as this process no longer does (its database session lost). A runner
    that fails ends this with its error (the server stops with it, as without ``--db``)."""
    by_id = {d.ladder_id: (d, lad) for d, lad in ladders}
    await _void_restored(app, [lad for _, lad in ladders])
    leadership = Leadership(db, list(by_id), node=node_name(), address=advertise or app.address)
    runs: dict[str, asyncio.Future[None]] = {}
    failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def watch(run: asyncio.Future[None]) -> None:
        if not run.cancelled() and run.exception() is not None and not failed.done():
            failed.set_exception(run.exception())  # type: ignore[arg-type]

    async def on_change(led: set[str]) -> None:
        for ladder_id in [i for i in runs if i not in led]:
            log.info("ladder_runner_stopping", ladder=ladder_id, why="no longer its leader")
            await _cancel(runs.pop(ladder_id))
        for ladder_id in sorted(led - runs.keys()):
            log.info("ladder_runner_starting", ladder=ladder_id, node=leadership.node)
            run = runs[ladder_id] = run_one(*by_id[ladder_id])
            run.add_done_callback(watch)

    leading = asyncio.ensure_future(leadership.run(on_change))
    relaying = asyncio.ensure_future(_relay(app, leadership))
    try:
        await asyncio.wait([leading, failed, relaying], return_when=asyncio.FIRST_COMPLETED)
        if failed.done():
            failed.result()
        leading.result()
    finally:
        await _cancel(relaying)
        await _cancel(leading)
        for run in runs.values():
            await _cancel(run)
        await asyncio.to_thread(leadership.close)


async def _relay(app: App, leadership: Leadership) -> None:
    """Keep the relays of the bots connected here pointed at their ladders' leaders."""
    assert app.relays is not None, "serve --db relays"
    while True:
        app.relays.want(relay_targets(leadership.leaders, app.ladders.roster, leadership.node))
        await asyncio.sleep(SYNC_S)


async def _void_restored(app: App, ladders: list[Ladder]) -> None:
    """The ladder matches this process's journal brought back (it was killed while it led):
    cancelled before anything else, whether or not it leads again, since a ladder counts a
    match once it is in the shared results, and the process leading the ladder now (it or
    another) voids them there (docs/ladder.md, "When the server stops"). Left alone, they
    would be played out on this process for nobody's results."""
    from capicua.arena.runner import tag_of

    tags = {tag_of(lad.name) for lad in ladders}
    for match in list(app.registry.matches.values()):
        if match.status != FINISHED and tags.intersection(match.settings.tags):
            log.info("ladder_match_voided", match=match.name)
            with contextlib.suppress(errors.ApiError):  # it ended meanwhile
                await match.cancel("voided: the server leading its ladder stopped")


async def _cancel(task: asyncio.Future[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
