"""`failclass rules propose`: rule skeletons for the lines that failures no rule named
printed across jobs (failclass.store.goodruns), for an operator to accept.

Each skeleton has the shape of a rule file's entry (failclass/data/signatures/README.md):
the cluster's template as a literal pattern (failclass.logs.diff.pattern_of) that passes
the rules' own safety checks and matches every example, the real lines as positive
examples with the job each came from (``source: job:<id>``), and ``REASON`` and an empty
description for the operator to fill in: `failclass rules new`'s skeleton."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from failclass.logs.diff import pattern_of
from failclass.logs.region import shows_failure
from failclass.logs.text import blocks_of_text
from failclass.matching.matcher import Matcher
from failclass.matching.rules import RuleSet
from failclass.matching.safety import pattern_errors
from failclass.matching.scaffold import skeleton
from failclass.store.goodruns import UnseenCluster

PLACEHOLDER = "REASON"
SLUG_WORDS = 5
_WORD = re.compile(r"[a-z][a-z0-9]+")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]*")


@dataclass(frozen=True)
class Proposal:
    """A cluster turned into a rule skeleton."""

    cluster: UnseenCluster
    slug: str
    pattern: str

    def yaml(self) -> str:
        """The skeleton as a rule file's entry (failclass.matching.scaffold's), with a
        comment on where it comes from."""
        answered = ", ".join(f"{reason} {count}" for reason, count in self.cluster.answers)
        origin = f"  # {self.cluster.jobs} jobs of {self.cluster.users} users failed printing this (answered: {answered})\n"
        examples = "".join(
            f"        - source: {_quoted('job:' + job)}\n{_text_block(text)}" for job, text in self.cluster.examples
        )
        return origin + skeleton(PLACEHOLDER, self.slug, _quoted(self.pattern), examples)


def propose(clusters: Iterable[UnseenCluster], ruleset: RuleSet, matcher: Matcher, top: int) -> list[Proposal]:
    """The ``top`` largest clusters whose lines say that something failed
    (failclass.logs.region.shows_failure), no rule matches them, and their template makes
    a safe pattern that matches them all."""
    chosen: list[Proposal] = []
    slugs: set[str] = set()
    for cluster in clusters:
        if len(chosen) == top:
            break
        texts = [text for _, text in cluster.examples]
        if not shows_failure(texts, ruleset.endings) or matcher.scan(blocks_of_text("\n".join(texts) + "\n")).hits:
            continue
        pattern = pattern_of(cluster.template)
        if pattern_errors(pattern) or not all(re.search(pattern, text) for text in texts):
            continue
        slug = "_".join(_WORD.findall(cluster.template.lower())[:SLUG_WORDS]) or "line"
        while slug in slugs:
            slug += "_2"
        slugs.add(slug)
        chosen.append(Proposal(cluster, slug, pattern))
    return chosen


def _quoted(text: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


def _text_block(text: str) -> str:
    """An example's ``text:``: a literal block, or a double-quoted (JSON) scalar where a
    block cannot hold the line as it is."""
    if _PRINTABLE.fullmatch(text) and text == text.strip():
        return f"          text: |\n            {text}\n"
    return f"          text: {json.dumps(text + chr(10))}\n"
