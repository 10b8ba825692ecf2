"""The installed capicua's version, as the server reports it and results record it."""

from __future__ import annotations

from importlib import metadata


def version() -> str:
    """The version of the installed ``capicua`` distribution ("0+unknown" from a bare
    checkout that was never installed)."""
    try:
        return metadata.version("capicua")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "0+unknown"
