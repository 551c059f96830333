"""Data files checked against a schema declared on dataclasses: one class per mapping of
the file, each field's type saying what it holds and ``allowed(...)`` what else it accepts.

Types: ``str``, ``int`` (a whole number), ``float`` (any finite number), ``bool`` (true or
false, never ``"no"``), ``None`` in a union (null), a dataclass (a mapping checked as that
class), ``tuple[X, ...]`` (a list of X: a string is no list), ``dict[str, X]`` (a mapping of
names to X) and ``re.Pattern[str]`` (a regular expression: compiled, and refused where the
signature rules' safety check refuses it, failclass.matching.safety). A field without a
default is required and cannot be empty; a key the class does not declare is refused; a
class's ``__post_init__`` checks what spans its fields, raising ``Invalid``.

Every problem is one line, ``file: key.path: problem`` (a ConfigError). It is checked here
rather than by pydantic so that ``hook decide``, which loads the policy on every call, does
not import it.
"""

from __future__ import annotations

import functools
import math
import re
import types
import typing
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from failclass.errors import ConfigError
from failclass.matching.safety import MIN_LITERAL, pattern_errors
from failclass.yamlload import SafeLoader

T = TypeVar("T")
WORDS = {str: "text", int: "a whole number", float: "a number", bool: "true or false", type(None): "null"}


class Invalid(ValueError):
    """What a class's ``__post_init__`` refuses; ``at`` is a key path below the mapping's place."""

    def __init__(self, problem: str, at: str = "") -> None:
        super().__init__(problem)
        self.at = at


def allowed(
    default: Any = MISSING,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: tuple[str, ...] = (),
    fullmatch: str | None = None,
    flags: int = 0,
    min_literal: int = MIN_LITERAL,
    unique: str | None = None,
    fields_of: type | None = None,
) -> Any:
    """A field's default (none: required) and what it accepts beyond its type. For a list or a
    mapping of names, the bounds, choices and ``fullmatch`` apply to each value. A regular
    expression compiles with ``flags`` and needs a literal of ``min_literal`` characters that
    every match contains (the signature rules' own check; 0 for a fragment such as a line
    prefix). ``unique``: the field of a list's items that no two share. ``fields_of``: a
    ``dict`` field holding some of that class's fields, kept as a mapping (a policy layer).
    A required field declared with ``allowed`` goes after the plain ones: mypy takes any call
    for a default."""
    metadata = {
        "ge": ge,
        "gt": gt,
        "le": le,
        "lt": lt,
        "choices": choices,
        "fullmatch": fullmatch,
        "flags": flags,
        "min_literal": min_literal,
        "unique": unique,
        "fields_of": fields_of,
    }
    if isinstance(default, dict | list):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def derived(default: Any) -> Any:
    """A field the loader sets, never read from the file (the policy's clause)."""
    return field(default=default, metadata={"derived": True})


@dataclass(frozen=True)
class _Place:
    file: str
    path: str = ""

    def key(self, name: object) -> _Place:
        return _Place(self.file, f"{self.path}.{name}" if self.path else str(name))

    def item(self, index: int) -> _Place:
        return _Place(self.file, f"{self.path}[{index}]")

    def below(self, at: str) -> _Place:
        return self if not at else _Place(self.file, f"{self.path}.{at}" if self.path else at)

    def error(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.file}: {self.path}: {problem}" if self.path else f"{self.file}: {problem}")


def read_yaml(path: Path, what: str) -> Any:
    """A YAML file's document; ConfigError in one line when it cannot be read or parsed."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read {what}: {' '.join(str(exc).split())}") from None


def load(path: Path, kind: type[T], what: str) -> T:
    """The YAML file at ``path`` as an instance of ``kind``, checked against it."""
    return build(kind, read_yaml(path, what), str(path))


def build(kind: type[T], values: Any, file: str, path: str = "") -> T:
    """``values`` checked against ``kind`` (a class, or a type such as ``tuple[Row, ...]`` for a
    file that is a list) and made one; ``file`` and ``path`` say where they are."""
    return typing.cast(T, _value(kind, values, {}, _Place(file, path)))


def checked(kind: type, values: Any, file: str, path: str = "", noun: str = "keys") -> dict[str, Any]:
    """``values`` (a mapping of some or all of ``kind``'s fields) checked: known keys, each
    value's type and bounds; nested values made (a list a tuple, a mapping its class, a
    regular expression compiled). ``noun`` names the keys in a problem."""
    return _checked(kind, values, _Place(file, path), noun)


def _build(kind: type[T], values: Any, place: _Place) -> T:
    made = _checked(kind, values, place, "keys")
    missing = [f.name for f in fields(typing.cast(Any, kind)) if _required(f) and f.name not in made]
    if missing:
        raise place.error(f"missing {sorted(missing)}")
    try:
        return kind(**made)
    except Invalid as exc:
        raise place.below(exc.at).error(str(exc)) from None


def _checked(kind: type, values: Any, place: _Place, noun: str) -> dict[str, Any]:
    if not isinstance(values, dict):
        raise place.error(f"expected a mapping, not {_name(values)}")
    hints = _type_hints(kind)
    known = {f.name: f for f in fields(kind) if not f.metadata.get("derived")}
    unknown = set(values) - set(known)
    if unknown:
        raise place.error(f"unknown {noun} {sorted(map(str, unknown))}; known: {sorted(known)}")
    made = {}
    for key, value in values.items():
        spec, at = known[key], place.key(key)
        made[key] = _value(hints[key], value, spec.metadata, at)
        if _required(spec) and (made[key] in ((), {}) or (isinstance(made[key], str) and not made[key].strip())):
            raise at.error("must not be empty")
    return made


def _required(spec: Field[Any]) -> bool:
    return spec.default is MISSING and spec.default_factory is MISSING and not spec.metadata.get("derived")


def _value(hint: Any, value: Any, meta: typing.Mapping[str, Any], at: _Place) -> Any:
    """One value as its declared type says, or a ConfigError at its place."""
    arms = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None and type(None) in arms:
        return None
    if meta.get("fields_of"):
        return _checked(meta["fields_of"], value, at, "keys")
    structured = [arm for arm in arms if is_dataclass(arm) or typing.get_origin(arm) in (tuple, dict, re.Pattern)]
    if structured:
        return _made(structured[0], value, meta, at)
    if not of_type(value, arms):
        raise at.error(f"{value!r} is not {' or '.join(WORDS[arm] for arm in arms)}")
    _check_bounds(value, meta, at)
    return value


def _made(hint: Any, value: Any, meta: typing.Mapping[str, Any], at: _Place) -> Any:
    """A dataclass, a list, a mapping of names or a regular expression."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if is_dataclass(hint):
        return _build(typing.cast(type, hint), value, at)
    if origin is tuple:
        if not isinstance(value, list):
            raise at.error(f"{value!r} is not a list")
        items = tuple(_value(args[0], item, meta, at.item(index)) for index, item in enumerate(value))
        if meta.get("unique"):
            _check_unique(items, meta["unique"], at)
        return items
    if origin is dict:
        if not isinstance(value, dict):
            raise at.error(f"{value!r} is not a mapping")
        for key in value:
            if not isinstance(key, str):
                raise at.error(f"key {key!r} is not text")
        return {key: _value(args[1], item, meta, at.key(key)) for key, item in value.items()}
    if origin is re.Pattern:
        if not isinstance(value, str):
            raise at.error(f"{value!r} is not a regular expression (text)")
        problems = pattern_errors(value, meta.get("flags", 0), meta.get("min_literal", MIN_LITERAL))
        if problems:
            raise at.error(f"{value!r} {problems[0]}")
        return re.compile(value, meta.get("flags", 0))
    raise TypeError(f"no schema for the type {hint!r}")


def _check_unique(items: tuple[Any, ...], name: str, at: _Place) -> None:
    first: dict[Any, int] = {}
    for index, item in enumerate(items):
        value = getattr(item, name)
        if value in first:
            raise at.item(index).key(name).error(f"{value!r} repeats {at.item(first[value]).key(name).path}")
        first[value] = index


def _check_bounds(value: Any, meta: typing.Mapping[str, Any], at: _Place) -> None:
    if meta.get("choices") and value not in meta["choices"]:
        raise at.error(f"{value!r} is not one of {meta['choices']}")
    if meta.get("fullmatch") and not re.fullmatch(meta["fullmatch"], value):
        raise at.error(f"{value!r} does not match {meta['fullmatch']}")
    for bound, holds, says in (
        ("ge", lambda v, b: v >= b, ">="),
        ("gt", lambda v, b: v > b, ">"),
        ("le", lambda v, b: v <= b, "<="),
        ("lt", lambda v, b: v < b, "<"),
    ):
        if meta.get(bound) is not None and not holds(value, meta[bound]):
            raise at.error(f"{value!r} must be {says} {meta[bound]}")


@functools.cache
def _type_hints(kind: type) -> dict[str, Any]:
    """A class's field types, resolved once (a policy resolves each layer's again)."""
    return typing.get_type_hints(kind)


def of_type(value: Any, types_: tuple[Any, ...]) -> bool:
    """Whether a scalar is one of ``types_``: a bool is no number, a string no bool, a number finite."""
    if isinstance(value, bool):
        return bool in types_
    if isinstance(value, int):
        return int in types_ or float in types_
    if isinstance(value, float):
        return float in types_ and math.isfinite(value)
    return isinstance(value, str) and str in types_


def _name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "text", type(None): "null"}.get(type(value), type(value).__name__)
