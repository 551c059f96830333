"""Field types checked at the door, so that nothing the database cannot hold reaches it:
integers within its INTEGER range, strings without NUL (PostgreSQL text refuses them),
times as RFC 3339 strings (not numbers read as Unix times). Each refusal is a 422."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from failclass.limits import LIMITS

NO_NUL = r"^[^\x00]*$"
DATE_TIME = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d")
# A time as the report's filters take it (failclass.analytics.selection.parse_time): a span
# before now (90m, 12h, 7d, 2w) or an ISO 8601 date or time (UTC when no zone is given).
_MOMENT = (
    r"(?:\d{1,5}[mhdw]|[1-9]\d{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
    r"(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?)?)"
)


def _integer(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "expected an integer, not a boolean")
    return value


def matching(pattern: str, problem: str) -> Any:
    """A string the schema gives ``pattern`` to, refused (422) with ``problem`` otherwise."""
    compiled = re.compile(pattern, re.ASCII)  # as JSON Schema reads \d

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise PydanticCustomError("string_pattern_mismatch", problem)
        return value

    return Annotated[str, AfterValidator(check), WithJsonSchema({"type": "string", "pattern": f"^(?:{pattern})$"})]


def _date_time(value: Any) -> Any:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not DATE_TIME.match(value):
        raise PydanticCustomError("datetime_type", "expected an RFC 3339 date-time such as 2026-11-02T09:00:00Z")
    return value


Int32 = Annotated[int, Field(ge=LIMITS.int32_min, le=LIMITS.int32_max), BeforeValidator(_integer)]
Count = Annotated[int, Field(ge=0, le=LIMITS.int32_max), BeforeValidator(_integer)]
RowId = Annotated[int, Field(ge=1, le=LIMITS.int32_max), BeforeValidator(_integer)]
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=NO_NUL)]
Node = Annotated[str, Field(min_length=1, max_length=300, pattern=NO_NUL)]
PathText = Annotated[str, Field(min_length=1, max_length=2000, pattern=NO_NUL)]
Timestamp = Annotated[datetime, BeforeValidator(_date_time)]
Moment = matching(_MOMENT, "neither an ISO 8601 time nor a span such as 7d, 12h or 90m")
Period = matching(f"previous|{_MOMENT}/{_MOMENT}", "neither 'previous' nor START/END (each an ISO 8601 time or a span)")
