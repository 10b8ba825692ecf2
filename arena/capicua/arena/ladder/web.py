"""The ladder's leaderboard in the browser: an ASGI app (Starlette) over one or more
:class:`~capicua.arena.ladder.board.LadderBoard`, served by uvicorn as a task on the event
loop that runs the ladder (docs/ladder.md, "The leaderboard in the browser").

Pages are the arena's Jinja2 templates (``templates/ladder/``, in the reports' layout);
htmx and its server-sent-events extension, vendored in ``static/`` (no CDN: the pages work
offline), swap the table and the matches playing now as the board changes. Every URL of a
ladder holds its slug (``/ladders/SLUG/...``, ``/api/ladders/SLUG/...``), so that one app
serves several ladders. Reads of the store run in Starlette's threads (each on a
read-only connection of its own), never on the event loop.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import socket
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from capicua.client.lobby import Lobby, LobbyError
from capicua.client.spectator import Spectator
from capicua.common.errors import CapicuaError

from ..charts import history_svg
from ..report import asset, compact_replay, render_fragment, render_page, script_json
from ..store import COUNTED, RATED_SET, MatchRow, Results, ladder_rated
from . import table
from .board import Closed, LadderBoard, Snapshot

#: Sets per page of the JSON API at most (``limit=``), and an entry's recent matches.
PAGE_LIMIT = 1000
RECENT = 20
#: Sets read per query while the export streams (memory stays this small).
EXPORT_BATCH = 200


# -- what the pages and the API say of the data ------------------------------------------------


def match_json(m: MatchRow, mark: int | None = None) -> dict[str, Any]:
    """A finished match as the API and the export give it (its replay's URL relative to the
    ladder's)."""
    out = asdict(m)
    out.pop("replay_path")
    out["counted"] = m.termination in COUNTED
    out["rated"] = ladder_rated(m)
    out["replay"] = f"matches/{quote(m.key)}" if m.replay_path else None
    if mark is not None:
        out["mark"] = mark
    return out


def entry_json(snap: Snapshot, name: str) -> dict[str, Any] | None:
    """An entry's line of the table, its history, head-to-head, failure rates and think
    time (None: no such entry)."""
    line = next((e for e in table.to_dict(snap.table)["entries"] if e["name"] == name), None)
    if line is None:
        return None
    decisions, total_us = snap.think.get(name, (0, 0))
    return {
        **line,
        "history": [_rounded(asdict(p)) for p in snap.history.get(name, [])],
        "head_to_head": {
            other: {**asdict(m), "verdict": m.verdict}
            for other, m in sorted(snap.meetings.get(name, {}).items())
        },
        "rates": rates(snap, name),
        "think": {
            "decisions": decisions,
            "mean_ms": round(total_us / decisions / 1000, 3) if decisions else None,
        },
    }


def _versions(snap: Snapshot, versions: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The versions of an entry's bot, oldest first: each one's label and its line of the
    table (its rating, interval, sets, status), or None before it played."""
    lines = {e["name"]: e for e in table.to_dict(snap.table)["entries"]}
    return [{"entry": n, "version": v, "line": lines.get(n)} for n, v in versions]


def _online(board: LadderBoard, name: str) -> dict[str, Any] | None:
    """Whether the entry's bot is connected now and its uptime (a server's ladder only)."""
    if board.online is None:
        return None
    connected, uptime = board.online().get(name, (False, 0.0))
    return {"connected": connected, "uptime": uptime}


def _rounded(point: dict[str, Any]) -> dict[str, Any]:
    """Elo to 0.1, as the table's."""
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in point.items()}


def rates(snap: Snapshot, name: str) -> dict[str, float | None]:
    """The share of an entry's matches lost by timeout and by disconnect, and its crashes
    per match (from the failures recorded)."""
    entry = snap.entry(name)
    played = entry.matches if entry is not None else 0
    forfeits = entry.forfeits if entry is not None else {}
    crashes = snap.failures.get(name, {}).get("crash", 0)
    counts = {"timeout": forfeits.get("timeout", 0), "crash": crashes,
              "disconnect": forfeits.get("disconnect", 0)}  # fmt: skip
    return {k: (round(n / played, 4) if played else None) for k, n in counts.items()}


def live_json(board: LadderBoard) -> list[dict[str, Any]]:
    """The matches playing now: who plays which side of which set, nothing else (no seed,
    no deal, no score: what a spectator may know of a match before it ends)."""
    return [
        {
            "set": m.seq + 1,
            "rated": m.set_key.startswith(RATED_SET),
            "rotation": m.rotation,
            "sides": list(m.sides),
            "seats": list(m.seats),
            "watch": f"watch/{quote(m.key)}" if m.key in board.watchable else None,
        }  # fmt: skip
        for m in board.live()
    ]


def table_json(board: LadderBoard, snap: Snapshot) -> dict[str, Any]:
    out = table.to_dict(snap.table)
    busy = board.busy()
    for e in out["entries"]:
        e["playing_now"] = e["name"] in busy
    out["slug"] = board.slug
    out["live"] = live_json(board)
    return out


# -- rendering ---------------------------------------------------------------------------------


def _meeting_style(m: table.Meeting) -> str:
    """A head-to-head cell's shade: green (ahead) or red (behind) only where the 95%
    interval excludes an even score, stronger the further the mean is from it; grey
    otherwise (as the ACPC's crosstable)."""
    if m.verdict == "even":
        return "background:#eef1f5"
    strength = min(1.0, abs(m.score - 0.5) * 2)
    hue = 120 if m.verdict == "ahead" else 0
    return f"background:hsl({hue}, 60%, {88 - 28 * strength:.0f}%)"


def _table_fragment(board: LadderBoard, snap: Snapshot) -> str:
    return render_fragment(
        "ladder/table_fragment.html.j2", board=board, t=snap.table, busy=board.busy(),
        live=board.live(),
    )  # fmt: skip


def _live_fragment(board: LadderBoard) -> str:
    return render_fragment("ladder/live_fragment.html.j2", board=board, live=board.live())


def _page(template: str, board: LadderBoard | None, **context: Any) -> HTMLResponse:
    return HTMLResponse(render_page(template, board=board, **context))


def _missing(request: Request, what: str) -> Response:
    """A clear 404: JSON under /api, a page elsewhere."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": what}, status_code=404)
    return HTMLResponse(render_page("ladder/missing.html.j2", board=None, what=what),
                        status_code=404)  # fmt: skip


_NOT_WATCHABLE = (
    "no match {key!r} to watch now in ladder {ladder!r}: only the last match of a set is "
    "shown live, while it is played (a set's earlier matches deal its later ones' tiles)"
)


def sse_event(kind: str, data: str) -> str:
    """One server-sent event (every line of ``data`` its own ``data:`` field)."""
    lines = "".join(f"data: {line}\n" for line in data.splitlines() or [""])
    return f"event: {kind}\n{lines}\n"


# -- the app -----------------------------------------------------------------------------------


class Site:
    """The routes over ``boards`` (by slug)."""

    def __init__(self, boards: Sequence[LadderBoard]) -> None:
        self.boards: Mapping[str, LadderBoard] = {b.slug: b for b in boards}
        if len(self.boards) < len(boards):  # two names, one URL: one would be unreachable
            slugs = [b.slug for b in boards]
            twice = sorted({s for s in slugs if slugs.count(s) > 1})
            raise CapicuaError(f"ladders share a URL: {', '.join(twice)} (rename one)")

    def board(self, request: Request) -> LadderBoard:
        found = self.boards.get(request.path_params["slug"])
        if found is None:
            raise HTTPException(404, f"no ladder {request.path_params['slug']!r} here")
        return found

    async def index(self, request: Request) -> Response:
        if len(self.boards) == 1:
            (only,) = self.boards.values()
            return RedirectResponse(f"/ladders/{only.slug}/", status_code=307)
        return _page("ladder/index.html.j2", None, boards=list(self.boards.values()))

    async def table_page(self, request: Request) -> Response:
        board = self.board(request)
        snap = await board.snapshot()
        return _page("ladder/table.html.j2", board, fragment=Markup(_table_fragment(board, snap)))

    async def events(self, request: Request) -> Response:
        """The board's changes as server-sent events: ``table`` (the table's fragment,
        rendered anew) and ``live`` (the matches playing now)."""
        board = self.board(request)

        async def stream() -> AsyncIterator[str]:
            watcher = board.watch()
            try:
                yield ": following\n\n"  # the stream is open: the page may rely on it
                while not watcher.closed:
                    await watcher.wake.wait()
                    watcher.wake.clear()
                    kinds, watcher.pending = watcher.pending, set()
                    if "table" in kinds or "live" in kinds:
                        snap = await board.snapshot()
                        yield sse_event("table", _table_fragment(board, snap))
                    if "live" in kinds:
                        yield sse_event("live", _live_fragment(board))
            finally:
                board.unwatch(watcher)

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def watch_page(self, request: Request) -> Response:
        """A match playing now, followed as a spectator (a set's last match only)."""
        board = self.board(request)
        key = request.path_params["key"]
        if key not in board.watchable or key not in board.playing:
            return _missing(request, _NOT_WATCHABLE.format(key=key, ladder=board.name))
        return _page("ladder/watch.html.j2", board, m=board.playing[key], key=key)

    async def watch_events(self, request: Request) -> Response:
        """The match's public events as server-sent ``line`` events (one ``<li>`` each),
        read from the server as any spectator reads them (WatchMatch), until it ends."""
        board = self.board(request)
        key = request.path_params["key"]
        name = board.watchable.get(key)
        if name is None or board.watch_from is None:
            return _missing(request, _NOT_WATCHABLE.format(key=key, ladder=board.name))
        address = board.watch_from

        async def stream() -> AsyncIterator[str]:
            spectator = Spectator(name)
            yield ": following\n\n"
            async with Lobby(address) as lobby:
                try:
                    async for message in lobby.watch_match(name):
                        lines = spectator.fold(message)
                        if message.HasField("view"):  # where it stands (at first, each hand)
                            lines = [spectator.state_text()]
                        for line in lines:
                            yield sse_event("line", str(Markup("<li>{}</li>").format(line)))
                except LobbyError as e:
                    yield sse_event("line", str(Markup("<li>{}</li>").format(e.details)))
            yield sse_event("over", "")

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def live_page(self, request: Request) -> Response:
        board = self.board(request)
        return _page("ladder/live.html.j2", board, fragment=Markup(_live_fragment(board)))

    async def entry_page(self, request: Request) -> Response:
        board = self.board(request)
        name = request.path_params["name"]
        snap = await board.snapshot()
        entry = snap.entry(name)
        if entry is None:
            return _missing(request, f"no entry {name!r} in ladder {board.name!r}")
        recent = await run_in_threadpool(board.read, functools.partial(_recent, name=name))
        versions = await run_in_threadpool(board.read, lambda r: r.versions(name))
        points = [(p.sets, p.rating, p.lo, p.hi) for p in snap.history.get(name, [])]
        decisions, total_us = snap.think.get(name, (0, 0))
        others = [e.name for e in snap.table.entries if e.name in snap.meetings]
        return _page(
            "ladder/entry.html.j2", board, e=entry, recent=recent, rates=rates(snap, name),
            chart=history_svg(points) if points else None, meetings=snap.meetings,
            others=others, style=_meeting_style, playing_now=name in board.busy(),
            think_ms=total_us / decisions / 1000 if decisions else None, decisions=decisions,
            versions=_versions(snap, versions), online=_online(board, name),
        )  # fmt: skip

    async def match_page(self, request: Request) -> Response:
        board = self.board(request)
        key = request.path_params["key"]
        found = await run_in_threadpool(_replay_of, board, key)
        if found is None:
            return _missing(request, f"no finished match {key!r} with a replay in {board.name!r}")
        m, replay = found
        return _page(
            "ladder/match.html.j2", board, m=m, matches=[m],
            replay_data=Markup(script_json([replay])), js=Markup(asset("report.js")),
        )  # fmt: skip

    # -- the JSON API ----------------------------------------------------------------------

    async def api_table(self, request: Request) -> Response:
        board = self.board(request)
        return JSONResponse(table_json(board, await board.snapshot()))

    async def api_entry(self, request: Request) -> Response:
        board = self.board(request)
        name = request.path_params["name"]
        found = entry_json(await board.snapshot(), name)
        if found is None:
            return _missing(request, f"no entry {name!r} in ladder {board.name!r}")
        found["playing_now"] = name in board.busy()
        versions = await run_in_threadpool(board.read, lambda r: r.versions(name))
        found["versions"] = _versions(await board.snapshot(), versions)
        found["online"] = _online(board, name)
        return JSONResponse(found)

    async def api_matches(self, request: Request) -> Response:
        """The matches of whole sets, ``limit`` sets at a time after the mark ``after``,
        by set (each match's ``mark`` is its set's; the reply's ``next`` asks for the
        page after it)."""
        board = self.board(request)
        after = _int_arg(request, "after", 0, 0, 2**62)
        limit = _int_arg(request, "limit", 50, 1, PAGE_LIMIT)
        page = await run_in_threadpool(board.read, lambda r: r.whole_sets_page(after, limit))
        items = [match_json(m, mark) for mark, m in page if table.public(m)]
        return JSONResponse({"matches": items, "next": page[-1][0] if page else after})

    async def api_export(self, request: Request) -> Response:
        """Every finished match with its hands, one JSON object a line, streamed from the
        store a batch at a time (never the whole export in memory)."""
        board = self.board(request)
        name = f"{board.slug}-games.ndjson"
        headers = {"Content-Disposition": f'attachment; filename="{name}"'}
        return StreamingResponse(_export(board), media_type="application/x-ndjson",
                                 headers=headers)  # fmt: skip


def _int_arg(request: Request, key: str, default: int, lo: int, hi: int) -> int:
    text = request.query_params.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise HTTPException(400, f"{key}: a whole number, not {text!r}") from None
    if not lo <= value <= hi:
        raise HTTPException(400, f"{key}: from {lo} to {hi}, not {value}")
    return value


def _public(results: Results, m: MatchRow | None) -> MatchRow | None:
    """``m`` if the public may see it: not a private gauntlet's (its owner's alone), and
    its set whole (a match of a set still being played shares its deal with the matches
    to come, the same tiles with the seats rotated, so none of the set's records is shown
    before the last one ends)."""
    if m is None or not table.public(m) or not results.whole_sets([m.set_key]):
        return None
    return m


def _recent(results: Results, *, name: str) -> list[MatchRow]:
    """An entry's last public matches of whole sets (:func:`_public`), the latest first."""
    recent = [m for m in results.recent_matches(name, RECENT) if table.public(m)]
    whole = results.whole_sets({m.set_key for m in recent})
    return [m for m in recent if m.set_key in whole]


def _replay_of(board: LadderBoard, key: str) -> tuple[MatchRow, dict[str, Any]] | None:
    """A finished match and its replay in the viewer's form (None: not stored, no replay
    kept, or its replay unreadable)."""
    return board.read(lambda r: _public_replay(r, key))


def _public_replay(results: Results, key: str) -> tuple[MatchRow, dict[str, Any]] | None:
    m = _public(results, results.match(key))
    if m is None or m.replay_path is None:
        return None
    try:
        replay = results.replay(m)
    except (CapicuaError, OSError):
        return None
    return m, compact_replay(replay, m)


async def _export(board: LadderBoard) -> AsyncIterator[bytes]:
    """The export's lines, :data:`EXPORT_BATCH` matches at a time, each batch read in a
    thread on a connection of its own: the matches stored when it began (a running ladder
    stores more meanwhile; the next export has them)."""
    after, end = 0, await run_in_threadpool(board.read, Results.mark)
    while after < end:
        batch = functools.partial(_export_batch, after=after, end=end)
        after, text = await run_in_threadpool(board.read, batch)
        yield text


def _export_batch(results: Results, *, after: int, end: int) -> tuple[int, bytes]:
    """The export's lines of the matches after the mark ``after`` up to ``end``, and the
    last one's mark (``end`` once none is left)."""
    page = [(mark, m) for mark, m in results.whole_sets_page(after, EXPORT_BATCH) if mark <= end]
    if not page:
        return end, b""
    last = page[-1][0]
    page = [(mark, m) for mark, m in page if table.public(m)]
    hands: dict[str, list[dict[str, Any]]] = {}
    for h in results.hands_of([m.key for _, m in page]):
        hands.setdefault(h.match_key, []).append(
            {
                "hand": h.hand,
                "winner_side": h.winner_side,
                "blocked": h.blocked,
                "points": list(h.points),
            }  # fmt: skip
        )
    lines = (
        json.dumps({**match_json(m, mark), "hand_results": hands.get(m.key, [])})
        for mark, m in page
    )
    return last, ("\n".join(lines) + "\n").encode() if page else b""


async def _stopping(request: Request, exc: Exception) -> Response:
    """A page asked for as the server stops, before the first snapshot: 503."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": str(exc)}, status_code=503)
    page = render_page("ladder/missing.html.j2", board=None, what=str(exc))
    return HTMLResponse(page, status_code=503)


async def _not_found(request: Request, exc: Exception) -> Response:
    detail = exc.detail if isinstance(exc, HTTPException) else "not found"
    if isinstance(exc, HTTPException) and exc.status_code != 404:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": detail}, status_code=exc.status_code)
        return HTMLResponse(render_page("ladder/missing.html.j2", board=None, what=detail),
                            status_code=exc.status_code)  # fmt: skip
    return _missing(request, detail if detail != "Not Found" else f"no page {request.url.path}")


def make_app(boards: Sequence[LadderBoard]) -> Starlette:
    """The leaderboard's ASGI app over ``boards`` (each started and closed with the app:
    its cached table is computed from the start)."""
    site = Site(boards)
    ladder = "/ladders/{slug}"
    api = "/api/ladders/{slug}"
    routes = [
        Route("/", site.index),
        # a browser asks for one on every site: no icon, and no 404 in its console
        Route("/favicon.ico", lambda _: Response(status_code=204)),
        Route(ladder + "/", site.table_page),
        Route(ladder + "/events", site.events),
        Route(ladder + "/live", site.live_page),
        Route(ladder + "/watch/{key}", site.watch_page),
        Route(ladder + "/watch/{key}/events", site.watch_events),
        Route(ladder + "/entries/{name}", site.entry_page),
        Route(ladder + "/matches/{key}", site.match_page),
        Route(api, site.api_table),
        Route(api + "/entries/{name}", site.api_entry),
        Route(api + "/matches", site.api_matches),
        Route(api + "/export.ndjson", site.api_export),
        Mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        for b in boards:
            b.start()
        try:
            yield
        finally:
            for b in boards:
                await b.close()

    return Starlette(routes=routes, lifespan=lifespan,
                     exception_handlers={HTTPException: _not_found, Closed: _stopping})  # fmt: skip


# -- serving it on the running loop -----------------------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (``port`` 0: a free one, which the URL then names); one line
    of error when it cannot be had."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as e:
        reason = e.strerror or e
        raise CapicuaError(f"--http {host}:{port}: cannot listen there: {reason}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


class _OneLine(logging.Handler):
    """The web server's warnings and errors on stderr as one line each, the exception's
    type and text in place of its traceback (a command's output stays lines)."""

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f": {type(error).__name__}: {error}"
        sys.stderr.write(f"capicua: leaderboard: {text}\n")


def _one_line_logs() -> None:
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        log = logging.getLogger(name)
        log.handlers = [_OneLine(logging.WARNING)]
        log.propagate = False


@contextlib.asynccontextmanager
async def serving(boards: Sequence[LadderBoard], host: str, port: int) -> AsyncIterator[str]:
    """Serve the leaderboard of ``boards`` on ``host:port`` on the running event loop while
    inside; yields its URL. The server takes no signal: Ctrl-C stays the command's
    (:mod:`capicua.common.interrupt`), which ends the run, then this."""
    import asyncio

    import uvicorn

    _one_line_logs()
    sock = bind(host, port)
    config = uvicorn.Config(
        make_app(boards), log_config=None, log_level="warning", access_log=False,
        lifespan="on", timeout_graceful_shutdown=2, ws="none",
    )  # fmt: skip
    config.load()
    # uvicorn's serve() would take SIGINT and SIGTERM for itself: its parts are run here
    # instead (the app's startup, the loop that answers, the shutdown), with no handler
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    answering = asyncio.get_running_loop().create_task(server.main_loop())
    try:
        yield url_of(sock)
    finally:
        for b in boards:
            await b.close()  # their event streams end: the shutdown need not wait for them
        server.should_exit = True
        await answering
        await server.shutdown(sockets=[sock])
