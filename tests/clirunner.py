"""One CliRunner for the tests that invoke the `capicua` command in-process."""

from __future__ import annotations

from click.testing import CliRunner


def cli_runner() -> CliRunner:
    """A runner that keeps stderr apart from stdout on every supported click."""
    try:  # click 8.1 mixes stderr into stdout unless told not to; 8.2+ keeps them apart
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()
