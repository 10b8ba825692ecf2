"""Declared configuration schemas: the one way a file (a tournament, an experiment) is
checked and converted.

Each file is a pydantic model (:class:`ConfigModel`) whose fields are declared with the
types below. pydantic walks the data and reports every problem with its location; this
module turns the first one into the project's one line, ``bots.x.options: expected a
table, got 3`` (the path exactly as the key is written in the file: ``a.b``, ``a[2]``),
raised as the caller's :class:`~capicua.common.errors.CapicuaError` subclass, never a
traceback. The same models give the JSON Schema an editor checks the files against
(``capicua schema``).

The field types validate with the project's checks (:mod:`capicua.common.checks`, which
the engine's knobs use too) rather than pydantic's phrasing ("Input should be a valid
integer"), so that an error says what is expected in the file's terms: ``expected an
integer from 50 to 3600000, got 'x'``; each also declares its JSON Schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    model_validator,
)
from pydantic import ValidationError as _ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from . import checks
from .checks import Invalid
from .errors import CapicuaError, unknown_name

M = TypeVar("M", bound="ConfigModel")

#: The error type of a check of ours (its message is ours, whole).
_OURS = "capicua"
#: The error type of an unknown key (the message names the key at its own path).
_UNKNOWN = "capicua_unknown_key"


def refuse(message: str) -> NoReturn:
    """Refuse a table from a model's own validator (``message``: the whole line, its key
    first)."""
    raise PydanticCustomError(_OURS, "{text}", {"text": message})


@dataclass(frozen=True, eq=False)  # hashed by identity: typing hashes Annotated's metadata
class Checked:
    """pydantic metadata of a field type: ``check`` converts a value or raises
    :class:`~capicua.common.checks.Invalid`; ``json`` is its JSON Schema."""

    check: Callable[[Any], Any]
    json: Mapping[str, Any] = field(default_factory=dict)

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self._run)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return dict(self.json)

    def _run(self, value: Any) -> Any:
        try:
            return self.check(value)
        except Invalid as e:
            raise PydanticCustomError(_OURS, "{text}", {"text": str(e)}) from None


# -- the field types ------------------------------------------------------------------------


def integer(low: int, high: int) -> Checked:
    """An integer from ``low`` to ``high``."""
    return Checked(
        lambda value: checks.integer(value, low, high),
        {"type": "integer", "minimum": low, "maximum": high},
    )


def one_of(choices: Sequence[str]) -> Checked:
    """One of the strings ``choices``."""
    return Checked(lambda value: checks.choice(value, choices), {"enum": list(choices)})


def text(expected: str = "a string") -> Checked:
    """A string; ``expected`` says what it holds (``HOST:PORT``)."""
    return Checked(lambda value: checks.text(value, expected), {"type": "string"})


def texts(example: str) -> Checked:
    """A list of strings (``example``: one written as in the file)."""
    return Checked(
        lambda value: checks.texts(value, example),
        {"type": "array", "items": {"type": "string"}},
    )


def table(expected: str, values: Mapping[str, Any] | None = None) -> Checked:
    """A table of any keys (checked by its user); ``values``: its values' JSON Schema."""

    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise Invalid(f"expected {expected}, got {value!r}")
        return value

    json: dict[str, Any] = {"type": "object"}
    if values is not None:
        json["additionalProperties"] = dict(values)
    return Checked(check, json)


# -- the models ------------------------------------------------------------------------------


class ConfigModel(BaseModel):
    """A table of a configuration file: its keys are its fields, any other is refused
    (naming the closest known key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            refuse(f"expected a table, got {data!r}")
        known = sorted(cls.model_fields)
        for key in data:
            if key not in cls.model_fields:
                message = unknown_name("key", str(key), known)
                raise PydanticCustomError(_UNKNOWN, "{text}", {"text": message, "key": str(key)})
        return data


def path(loc: Sequence[int | str]) -> str:
    """A location as the file writes it: ``bots.x.options``, ``values[2]``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def one_line(error: _ValidationError) -> str:
    """The first problem of ``error`` as ``path: what was expected, what was got``."""
    first = error.errors(include_url=False)[0]
    loc: list[int | str] = list(first["loc"])
    ctx = first.get("ctx") or {}
    if first["type"] == _UNKNOWN:
        loc.append(ctx["key"])
        message = ctx["text"]
    elif first["type"] == _OURS:
        message = ctx["text"]
    elif first["type"] == "missing":
        message = "missing"
    else:  # a type of pydantic's own: its words
        message = first["msg"]
    where = path(loc)
    return f"{where}: {message}" if where else message


def parse(model: type[M], data: Mapping[str, Any], error: type[CapicuaError]) -> M:
    """``data`` checked and converted by ``model``; its first problem raises ``error``
    with one line naming the path."""
    try:
        return model.model_validate(data)
    except _ValidationError as e:
        raise error(one_line(e)) from None


#: The JSON Schema dialect of every schema ``capicua schema`` prints.
DRAFT = "https://json-schema.org/draft/2020-12/schema"


class _TomlSchema(GenerateJsonSchema):
    """TOML has no null: an optional key is a key left out, so its schema is its value's."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def _without_nulls(value: Any) -> Any:
    """``value`` without the ``None`` defaults of optional keys (no TOML file writes one)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def json_schema(model: type[ConfigModel], title: str) -> dict[str, Any]:
    """The JSON Schema of ``model`` (draft 2020-12), for editors."""
    schema: dict[str, Any] = _without_nulls(model.model_json_schema(schema_generator=_TomlSchema))
    schema.pop("title", None)
    return {"$schema": DRAFT, "title": title} | schema
