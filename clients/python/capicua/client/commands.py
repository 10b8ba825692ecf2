"""What ``capicua bot ...`` runs: load a bot, configure logging, play until done.

The click commands live in :mod:`capicua.cli.bot`; this module holds their work so that it
is typed and tested with the SDK.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import logging
import os
import shutil
import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from .bot import Bot, ClientError, as_bot
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


def load_bot(spec: str) -> Bot:
    """The bot named ``module:Class`` (or ``path/to/file.py:Class``), instantiated with no
    arguments; an object with ``choose`` (e.g. a built-in engine bot) is wrapped."""
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
        try:
            target = target()
        except TypeError as e:
            if _in_bot_code(e):
                raise _bot_failed(spec, f"{attr}() failed", e) from None
            raise ClientError(f"{spec!r}: cannot create {attr}() with no arguments: {e}") from None
        except Exception as e:
            raise _bot_failed(spec, f"{attr}() failed", e) from None
    return as_bot(target)


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


def play(bot: Bot, **options: Any) -> Summary:
    """Run ``bot`` until SIGINT/SIGTERM or its ``matches`` (see :class:`Session`)."""
    session = Session(bot, **options)

    async def main() -> Summary:
        with _signals(session):
            return await session.run()

    try:
        summary = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):  # a second Ctrl+C
        raise SystemExit(130) from None
    return summary
