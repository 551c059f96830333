"""Rules over structure: an exception type, its message and the frames it passed
through, matched against the exceptions a log raised (failclass.logs.tracebacks).

In a rule file, a rule's ``exception`` mapping says what to look for:

    exception:
      types: [FileNotFoundError, IsADirectoryError]   # short or qualified names
      message: 'No such file'                         # optional regex, searched in the message
      frames: 'dataset|dataloader'                    # optional: some frame "file:function" matches
      not_frames: 'serialization\\.py:save'           # optional: no frame matches

so that one rule covers every framework's wording of one event (the same
FileNotFoundError reading a data set, whatever library raised it), and the frames
decide between reasons (an OSError inside torch.save is a checkpoint write).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from failclass.errors import RuleError
from failclass.logs.tracebacks import RaisedException

KEYS = {"types", "message", "frames", "not_frames"}


@dataclass(frozen=True)
class ExceptionPattern:
    """The regexes as written (checked by parse_exception), compiled when first matched."""

    types: frozenset[str]
    message: str | None = None
    frames: str | None = None
    not_frames: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As written in the rule file (for `rules list --json`)."""
        return {"types": sorted(self.types), **self.regexes()}

    def regexes(self) -> dict[str, str]:
        """Each regex given, by its key (message, frames, not_frames)."""
        found = {"message": self.message, "frames": self.frames, "not_frames": self.not_frames}
        return {key: regex for key, regex in found.items() if regex is not None}

    def matches(self, raised: RaisedException) -> bool:
        if raised.name not in self.types and raised.type not in self.types:
            return False
        if self.message is not None and not re.search(self.message, raised.message):
            return False
        where = [str(frame) for frame in raised.frames]
        if self.frames is not None and not any(re.search(self.frames, frame) for frame in where):
            return False
        return self.not_frames is None or not any(re.search(self.not_frames, frame) for frame in where)


def _regex(raw: Any, path: str, rule_id: str, field: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise RuleError(path, rule_id, field, "must be a non-empty regex")
    try:
        re.compile(raw)
    except re.error as exc:
        raise RuleError(path, rule_id, field, f"does not compile: {exc}") from exc
    return raw


def parse_exception(raw: Any, path: str, rule_id: str) -> ExceptionPattern:
    if not isinstance(raw, dict) or set(raw) - KEYS or "types" not in raw:
        raise RuleError(path, rule_id, "exception", f"must be a mapping with types and optionally {sorted(KEYS - {'types'})}")
    types = raw["types"]
    if not isinstance(types, list) or not types or not all(isinstance(t, str) and t for t in types):
        raise RuleError(path, rule_id, "exception.types", "must be a non-empty list of exception type names")
    return ExceptionPattern(
        frozenset(types),
        _regex(raw.get("message"), path, rule_id, "exception.message"),
        _regex(raw.get("frames"), path, rule_id, "exception.frames"),
        _regex(raw.get("not_frames"), path, rule_id, "exception.not_frames"),
    )
