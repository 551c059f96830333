"""Real text that a rule or an ending entry must (positive) or must not (negative) match,
each with where it was copied from; `failclass rules test` runs them all."""

from __future__ import annotations

import re
from dataclasses import dataclass

# a public page, corpora/scenarios/<name>.sh|.py, or a job in the operator's store (`failclass rules propose`)
SOURCE = re.compile(r"(?:https?://\S+|scenario:[a-z0-9_]+|job:\S+)")


@dataclass(frozen=True)
class Example:
    text: str
    source: str | None
    classify_as: str | None = None  # the reason the whole text classifies as, where not the owner's
