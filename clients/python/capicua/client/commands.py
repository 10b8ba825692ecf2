"""What ``capicua bot ...`` runs: load a bot, configure logging, play until done.

The click commands live in :mod:`capicua.cli.bot`; this module holds their work so that it
is typed and tested with the SDK.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import keyword
import logging
import os
import shutil
import signal
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from capicua.common import interrupt
from capicua.engine.rules import parse_assignment

from .bot import Bot, ClientError, as_bot
from .lobby import Lobby
from .session import Session, Summary, _signals

log = logging.getLogger("capicua.client")


def configure_logging(level: str = "info") -> None:
    """Plain lines on stderr: ``12:00:01 WARNING capicua.client: ...``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    )
    root = logging.getLogger("capicua.client")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


def parse_options(items: Sequence[str]) -> dict[str, Any]:
    """``--option KEY=VALUE`` items as keyword arguments: VALUE is a TOML literal (``3``,
    ``0.5``, ``true``, ``"text"``, ``[1, 2]``) or a bare word taken as a string, exactly as
    ``--set`` reads it; a later KEY wins."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, _ = item.partition("=")
        key = key.strip()
        # a keyword argument's name, so that a typo is this line, not a TypeError later
        if not sep or not key.isidentifier() or keyword.iskeyword(key):
            raise ClientError(
                f"--option {item!r}: expected KEY=VALUE with KEY a keyword argument's name "
                "and VALUE a TOML literal, e.g. --option iterations=50"
            )
        out[key] = parse_assignment(item)[1]
    return out


def describe_options(options: Mapping[str, Any]) -> str:
    """``depth=3, name='x'``: the keyword arguments as a call would show them."""
    return ", ".join(f"{k}={v!r}" for k, v in options.items())


def load_bot(spec: str, **options: Any) -> Bot:
    """The bot named ``module:Class`` (or ``path/to/file.py:Class``), instantiated with
    ``options`` as keyword arguments (none by default); an object with ``choose`` (e.g. a
    built-in engine bot) is wrapped, and takes no options."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ClientError(f"{spec!r}: expected module:Class, e.g. mybot:MyBot")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the current folder's modules
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise ClientError(f"{spec!r}: no file {module_name}")
            found = importlib.util.spec_from_file_location(path.stem, path)
            assert found is not None and found.loader is not None
            module = importlib.util.module_from_spec(found)
            sys.modules[path.stem] = module
            found.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise ClientError(f"{spec!r}: cannot import {module_name}: {e}") from None
    except Exception as e:  # the bot's own code failed: show where, then one line
        raise _bot_failed(spec, "its module failed to import", e) from None
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ClientError(f"{spec!r}: {module_name} has no {attr}") from None
    if inspect.isclass(target):
        target = _create(spec, attr, target, options)
    elif options:
        raise ClientError(
            f"{spec!r}: {attr} is not a class, so it cannot take options "
            f"({describe_options(options)})"
        )
    return as_bot(target)


def _create(spec: str, attr: str, cls: type, options: dict[str, Any]) -> Any:
    """``cls(**options)``; a constructor that refuses them is one line naming the bot."""
    call = f"{attr}({describe_options(options)})"
    try:
        return cls(**options)
    except TypeError as e:
        if _in_bot_code(e):
            raise _bot_failed(spec, f"{call} failed", e) from None
        how = "with no arguments" if not options else f"as {call}"
        raise ClientError(f"{spec!r}: cannot create {attr}() {how}: {e}") from None
    except Exception as e:
        raise _bot_failed(spec, f"{call} failed", e) from None


def _bot_frames(e: BaseException) -> TracebackType | None:
    """The traceback of ``e`` from the first frame of the bot's own code on: without this
    module's frames and importlib's."""
    tb = e.__traceback__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename in (__file__, importlib.__file__)
        or tb.tb_frame.f_code.co_filename.startswith("<frozen ")
    ):
        tb = tb.tb_next
    return tb


def _in_bot_code(e: BaseException) -> bool:
    """Whether ``e`` was raised inside the bot's code (not by the call itself)."""
    return _bot_frames(e) is not None


def _bot_failed(spec: str, what: str, e: Exception) -> ClientError:
    """Print where the bot's code failed (its frames only; a SyntaxError shows the line)
    on stderr and return the one-line error."""
    sys.stderr.write("".join(traceback.format_exception(type(e), e, _bot_frames(e))))
    return ClientError(f"{spec!r}: {what}: {type(e).__name__}: {e}")


def find_command(command: list[str]) -> None:
    """Fail early and clearly if the stdio child cannot be found."""
    if not command:
        raise ClientError("no command: give the bot's command after --, e.g. -- perl bot.pl")
    program = command[0]
    if os.sep in program:
        if not os.path.isfile(program):
            raise ClientError(f"cannot find {program}")
    elif shutil.which(program) is None:
        raise ClientError(f"cannot find {program!r} on the PATH")


#: What running ``capicua bot ...`` again after a Ctrl-C does.
BOT_RERUN = (
    "the server keeps the bot's seats until their turns' deadlines (then each match's timeout "
    "policy plays them): the same command plays them again"
)


async def join_ladder(session: Session, ladder: str, version: str, matches_at_once: int) -> None:
    """Join ``ladder`` as ``version`` with the session's token and server, before its Play
    stream opens (the ladder's matches then come on it). Waits for the server as the
    session would; a refusal is a :class:`~capicua.client.lobby.LobbyError` (one line)."""
    async with Lobby(session.address, token=session.token, tls=session.tls) as lobby:
        # --connect-timeout 0 waits for ever, as the session does
        await lobby.wait_ready(session.connect_timeout, forever=session.connect_timeout is None)
        entry = await lobby.join_ladder(ladder, version, max_concurrent_matches=matches_at_once)
    log.info(
        "joined %s as %s (%d matches at once)",
        ladder,
        entry.name.removeprefix(f"{ladder}/entries/"),
        entry.max_concurrent_matches,
    )


def play(
    bot: Bot,
    *,
    again: str = BOT_RERUN,
    ladder: str | None = None,
    version: str = "",
    matches_at_once: int = 1,
    **options: Any,
) -> Summary:
    """Run ``bot`` until SIGINT/SIGTERM or its ``matches`` (see :class:`Session`). SIGTERM
    is a normal stop; Ctrl-C (SIGINT) stops as cleanly and then raises
    :class:`~capicua.common.interrupt.Interrupted` saying ``again``, what running the
    same command again does. With ``ladder`` ("ladders/ID"), the bot first joins that
    ladder as ``version``, playing at most ``matches_at_once`` of its matches at once."""
    interrupt.rerun(again)
    session = Session(bot, **options)
    if ladder is not None:
        asyncio.run(join_ladder(session, ladder, version, matches_at_once))
    signals: list[int] = []

    async def main() -> Summary:
        with _signals(session) as received:
            try:
                return await session.run()
            finally:
                signals.extend(received)

    try:
        summary = asyncio.run(main())
    except asyncio.CancelledError:  # a second signal: stop at once
        raise interrupt.Interrupted() from None
    if signal.SIGINT in signals:
        raise interrupt.Interrupted()
    return summary
