"""`failclass rules new REASON SLUG`: append a rule skeleton to a reason's file.

The skeleton is deliberately incomplete (its example has no text and no source), so the
loader refuses it until a real excerpt and its source are filled in."""

from __future__ import annotations

import re
from pathlib import Path

from failclass.matching.taxonomy import NO_SIGNATURE, Taxonomy

SLUG = re.compile(r"[a-z0-9_]+")
SKELETON = """  - id: {reason}.{slug}
    kind: explicit            # or implicit: only a consequence survives
    priority: 50              # see signatures/README.md, "Which rule wins"
    description: ""           # what the line means
    why: ""                   # what it means to an operator, what to do
    patterns:
      - {pattern}
    examples:
      positive:
{positives}      negative: []
"""
NO_EXAMPLE = """        - source: ""          # URL of the public thread, scenario:<name>, or job:<id>
          text: |
            # paste the real log lines here
"""


def skeleton(
    reason: str,
    slug: str,
    pattern: str = "''                    # a distinctive phrase of the real message",
    positives: str = NO_EXAMPLE,
) -> str:
    """A rule file's entry for the operator to complete: ``pattern`` as YAML, ``positives``
    the lines of its positive examples."""
    return SKELETON.format(reason=reason, slug=slug, pattern=pattern, positives=positives)


def new_rule(folder: Path, taxonomy: Taxonomy, reason: str, slug: str) -> Path:
    """Append the skeleton to ``folder/<reason>.yaml`` (creating the file) and return its path."""
    if reason not in taxonomy or reason == NO_SIGNATURE:
        raise ValueError(f"unknown reason {reason!r}")
    if not SLUG.fullmatch(slug):
        raise ValueError(f"slug {slug!r} must be made of a-z, 0-9 and _")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{reason}.yaml"
    existing = path.read_text(encoding="utf-8") if path.exists() else f"reason: {reason}\nrules:\n"
    if f"id: {reason}.{slug}\n" in existing:
        raise ValueError(f"{path} already has a rule {reason}.{slug}")
    separator = "" if existing.endswith("\n") else "\n"
    path.write_text(existing + separator + skeleton(reason, slug), encoding="utf-8")
    return path
