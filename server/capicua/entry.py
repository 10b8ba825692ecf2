"""The ``capicua`` command's entry point: everything, imports included, runs under one
guard, so Ctrl-C at any moment (even while the command's modules are still loading) ends
it with one line and exit code 130, never a traceback (:mod:`capicua.common.interrupt`).
This module imports nothing itself: an import here would run before the guard."""

from __future__ import annotations


def main() -> None:
    try:
        from capicua.cli import main as cli

        cli(prog_name="capicua")
    except KeyboardInterrupt as e:
        # imported here, where a Ctrl-C that cut its first import short is caught too
        from capicua.common import interrupt

        interrupt.exit_interrupted(e)
