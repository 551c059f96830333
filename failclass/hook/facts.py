"""The attempt facts a hook is given, checked as the service checks a request: by their
one definition, failclass.attempts.Attempt, as the service's AttemptIn declares it. Loading pydantic and building that
model is about a third of a hook's start, so the hook first checks the facts against the
model's own JSON Schema, which the first run that loaded the model kept in the cache
(failclass.matching.cache), and loads pydantic only where that check does not plainly
accept them: to say what is wrong in pydantic's words, or to read what only pydantic
reads (a time not written as RFC 3339, a keyword of the schema this module does not
know)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from failclass.attempts import Attempt
from failclass.matching import cache

PACKAGE = Path(__file__).resolve().parent.parent
DEFINITION = ("attempts.py", "service/schemas.py", "service/fields.py", "limits.py")  # what AttemptIn's schema is built from
ATTEMPT_FIELDS = frozenset(f.name for f in fields(Attempt))
NOTES = frozenset({"title", "description", "default"})  # keywords that check nothing
CHECKS = frozenset(
    {"type", "enum", "minLength", "maxLength", "pattern", "minimum", "maximum", "anyOf", "items", "maxItems", "format"}
)
OBJECT = frozenset({"type", "properties", "required", "additionalProperties"}) | NOTES
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)?", re.ASCII)


class InvalidFacts(ValueError):
    """Facts the service would refuse; pydantic's words, field by field."""


def attempt_of(facts: dict[str, Any]) -> Attempt:
    """The attempt ``facts`` describe, as AttemptIn.to_attempt gives it; InvalidFacts, or
    InvalidAttempt (failclass.attempts), where they describe none."""
    name = _cache_name()
    kept = cache.read(name) if name else None
    if kept is not None:
        read = plainly_valid(json.loads(kept), facts)
        if read is not None:
            return Attempt.from_facts({key: value for key, value in read.items() if key in ATTEMPT_FIELDS})
    from pydantic import ValidationError

    from failclass.service.schemas import AttemptIn

    if name and kept is None:
        cache.write(name, json.dumps(AttemptIn.model_json_schema()).encode())
    try:
        checked = AttemptIn.model_validate(facts)
    except ValidationError as exc:
        raise InvalidFacts("; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())) from None
    return checked.to_attempt()


def plainly_valid(schema: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any] | None:
    """``facts`` with the schema's defaults and times read, where they plainly meet
    ``schema`` (an object's JSON Schema, read no further than the keywords this module
    knows); None where they do not, or where it cannot tell."""
    properties = schema.get("properties", {})
    if set(schema) - OBJECT or schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        return None
    if set(facts) - set(properties) or set(schema.get("required", ())) - set(facts):
        return None
    read = {key: meets(properties[key], value) for key, value in facts.items()}
    if any(value is UNSURE for value in read.values()):
        return None
    defaults = {key: spec["default"] for key, spec in properties.items() if "default" in spec and key not in facts}
    return {**defaults, **read}


UNSURE = object()  # what meets() answers for a value that may not meet the schema


def meets(schema: dict[str, Any], value: Any) -> Any:
    """``value`` as read (a date-time string as a datetime) where it plainly meets
    ``schema``, else UNSURE. Types are JSON's, exactly: no bool is an integer, no number
    a string."""
    if set(schema) - CHECKS - NOTES:
        return UNSURE
    if "anyOf" in schema:
        alone = {key: check for key, check in schema.items() if key != "anyOf"}
        for option in schema["anyOf"]:
            found = meets({**alone, **option}, value)
            if found is not UNSURE:
                return found
        return UNSURE
    kind = schema.get("type")
    if kind == "null":
        return None if value is None else UNSURE
    if kind == "integer":
        low, high = schema.get("minimum", value), schema.get("maximum", value)
        return value if type(value) is int and low <= value <= high and _listed(schema, value) else UNSURE
    if kind == "array":
        if type(value) is not list or len(value) > schema.get("maxItems", len(value)) or "items" not in schema:
            return UNSURE
        items = [meets(schema["items"], item) for item in value]
        return UNSURE if any(item is UNSURE for item in items) else items
    if kind == "string":
        return _string(schema, value)
    return UNSURE


def _string(schema: dict[str, Any], value: Any) -> Any:
    if schema.get("format") == "date-time":
        if set(schema) - {"type", "format"} - NOTES:
            return UNSURE
        if isinstance(value, datetime):
            return value
        if type(value) is not str or not RFC3339.fullmatch(value):
            return UNSURE
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return UNSURE
    if "format" in schema or type(value) is not str or "\n" in value:  # a newline: where "$" is read alike
        return UNSURE
    if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
        return UNSURE
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return UNSURE
    return value if _listed(schema, value) else UNSURE


def _listed(schema: dict[str, Any], value: Any) -> bool:
    return "enum" not in schema or any(type(value) is type(option) and value == option for option in schema["enum"])


def _cache_name() -> str | None:
    """The cache file of AttemptIn's JSON Schema: named by the hash of the files that
    define it and of the pydantic that writes it. None when one cannot be read."""
    digest = hashlib.sha256(b"facts|")
    spec = importlib.util.find_spec("pydantic")
    try:
        pydantic = Path(spec.origin).with_name("version.py") if spec and spec.origin else None
        for path in [*(PACKAGE / name for name in DEFINITION), *([pydantic] if pydantic else [])]:
            digest.update(f"|{path}|".encode() + hashlib.sha256(path.read_bytes()).digest())
    except OSError:
        return None
    return f"facts-{digest.hexdigest()[:40]}.json"
