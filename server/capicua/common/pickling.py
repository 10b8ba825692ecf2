"""Frozen dataclasses that pickle (and copy) through their constructor.

In the compiled build (mypyc) a frozen dataclass is unpickled by setting its fields one by
one, which its frozen ``__setattr__`` refuses; rulesets, observations, actions and records
cross process boundaries (worker processes, the CPU seats, dask), so each module registers
its frozen dataclasses here, and both builds rebuild them through ``__init__``.
"""

from __future__ import annotations

import copyreg
import dataclasses
from collections.abc import Callable
from typing import Any


def _rebuild(cls: type[Any], fields: dict[str, Any]) -> Any:
    return cls(**fields)


def _reduce(obj: Any) -> tuple[Callable[..., Any], tuple[type[Any], dict[str, Any]]]:
    fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
    return _rebuild, (type(obj), fields)


def by_constructor(*classes: type[Any]) -> None:
    """Pickle and copy instances of ``classes`` (dataclasses) as a call of their class with
    their init fields."""
    for cls in classes:
        copyreg.pickle(cls, _reduce)
