"""What every benchmark shares: its error, and the description of the machine and the
Python that a report carries (``python`` and ``machine`` in the JSON)."""

from __future__ import annotations

import os
import platform
from typing import Any

from capicua.common.errors import CapicuaError


class BenchError(CapicuaError):
    """A benchmark cannot run as asked (bad options, a missing optional package, a server
    that does not start...): one ``capicua: error:`` line and exit code 2."""


def python_info() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def cpu_count() -> int:
    """CPUs this process may run on (what ``nproc`` prints)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def machine_info() -> dict[str, Any]:
    return {
        "system": f"{platform.system()} {platform.release()}",
        "arch": platform.machine(),
        "cpu": _cpu_model(),
        "nproc": cpu_count(),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
