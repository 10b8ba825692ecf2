"""The ``capicua`` command's entry point: everything, imports included, runs under one
guard, so Ctrl-C at any moment (even while the command's modules are still loading) ends
it with one line and exit code 130, never a traceback."""

from __future__ import annotations

import sys
import warnings


def main() -> None:
    try:
        from capicua.cli import main as cli

        cli(prog_name="capicua")
    except KeyboardInterrupt:
        sys.stderr.write("capicua: interrupted\n")
        # What the interrupt left half-built is finalized as the process ends: an event loop
        # interrupted in its constructor fails in its __del__, a coroutine never started
        # warns. Both are the interrupt itself, already reported in the line above.
        sys.unraisablehook = lambda _: None
        warnings.simplefilter("ignore")
        sys.exit(130)
