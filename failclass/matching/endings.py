"""What a log's last lines say of how a run ended, as data: signatures/endings.yaml.

``no_cause``: a line that reports an end without its cause (Slurm's time limit, torchrun
told to stop by a SIGTERM, SageMaker's client saying that the training job failed). The
guide files such a log as No signature, so the line is no failure line, and the generic
rules that matched it, or matched from it on, say nothing. ``benign``: a line that says a
failure word yet records no failure (a warning, "no errors", a bare exit status, an error
the client retries). failclass.logs.region asks both of a log's last lines; the rules are
loaded with them (failclass.matching.rules) and `failclass rules test` runs their examples.

Patterns are Python regular expressions, searched in one line (the last state of a line
rewritten with carriage returns); ``ignore_case: true`` makes an entry's patterns
case-insensitive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from failclass.errors import ConfigError
from failclass.matching.examples import SOURCE, Example
from failclass.matching.taxonomy import Taxonomy
from failclass.yamlload import SafeLoader

ENDINGS_FILE = "endings.yaml"
SECTIONS = ("no_cause", "benign")
ENTRY_ID = re.compile(r"[a-z0-9_]+")
ENTRY_KEYS: dict[str, type] = {"id": str, "description": str, "patterns": list, "ignore_case": bool, "examples": dict}
EXAMPLE_KEYS: dict[str, type] = {"text": str, "source": str, "classify_as": str}


def _grouped(pattern: str, ignore_case: bool) -> str:
    return f"(?i:{pattern})" if ignore_case else f"(?:{pattern})"


@dataclass(frozen=True)
class Ending:
    """One entry: the patterns of one way a line says how a run ended, and real lines."""

    id: str
    description: str
    patterns: tuple[str, ...]
    ignore_case: bool
    positives: tuple[Example, ...]
    negatives: tuple[Example, ...]

    @property
    def regex(self) -> str:
        """The patterns as one alternation, case-insensitive where the entry says so."""
        return "|".join(_grouped(pattern, self.ignore_case) for pattern in self.patterns)

    def matches(self, line: str) -> bool:
        return re.search(self.regex, line) is not None


@dataclass(frozen=True)
class Endings:
    """Every entry of endings.yaml, each section searched as one regex."""

    path: str
    no_cause: tuple[Ending, ...]
    benign: tuple[Ending, ...]

    @cached_property
    def _no_cause(self) -> re.Pattern[str]:
        return re.compile("|".join(entry.regex for entry in self.no_cause))

    @cached_property
    def _benign(self) -> re.Pattern[str]:
        return re.compile("|".join(entry.regex for entry in self.benign))

    def names_no_cause(self, line: str) -> bool:
        """Whether a line reports an end without its cause."""
        return self._no_cause.search(line) is not None

    def is_benign(self, line: str) -> bool:
        """Whether a line's failure words record no failure."""
        return self._benign.search(line) is not None

    @staticmethod
    def decoded(encoded: list[Any]) -> Endings:
        """Endings as the rule cache wrote them (dataclasses.astuple, tuples as lists)."""

        def entry(fields: list[Any]) -> Ending:
            entry_id, description, patterns, ignore_case, positives, negatives = fields
            positive, negative = (tuple(Example(*example) for example in listed) for listed in (positives, negatives))
            return Ending(entry_id, description, tuple(patterns), ignore_case, positive, negative)

        path, no_cause, benign = encoded
        return Endings(path, tuple(map(entry, no_cause)), tuple(map(entry, benign)))


def _problem(path: Path, where: str, problem: str) -> ConfigError:
    """``FILE: key.path: problem`` (``FILE: problem`` for the file as a whole)."""
    return ConfigError(f"{path}: {where}: {problem}" if where else f"{path}: {problem}")


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _checked(values: Any, keys: Mapping[str, type], required: set[str], path: Path, where: str) -> dict[str, Any]:
    """A mapping with only ``keys``, each of its type, and every one of ``required``."""
    if not isinstance(values, dict):
        raise _problem(path, where, "must be a mapping")
    unknown = set(values) - set(keys)
    if unknown:
        raise _problem(path, where, f"unknown keys {sorted(map(str, unknown))}; known: {sorted(keys)}")
    missing = sorted(required - set(values))
    if missing:
        raise _problem(path, _at(where, missing[0]), "is required")
    for key, value in values.items():
        if not isinstance(value, keys[key]) or (isinstance(value, str) and not value.strip()):
            wanted = {"str": "non-empty text", "list": "a list", "bool": "true or false", "dict": "a mapping"}
            raise _problem(path, _at(where, key), f"{value!r} is not {wanted[keys[key].__name__]}")
    return values


def _examples(raw: Any, path: Path, where: str, taxonomy: Taxonomy) -> tuple[Example, ...]:
    if not isinstance(raw, list) or not raw:
        raise _problem(path, where, "must be a non-empty list of {text, source}")
    examples = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        example = _checked(item, EXAMPLE_KEYS, {"text", "source"}, path, at)
        if not SOURCE.fullmatch(example["source"].strip()):
            raise _problem(path, f"{at}.source", "must be a URL, scenario:<name> or job:<id>")
        classify_as = example.get("classify_as")
        if classify_as is not None and classify_as not in taxonomy:
            raise _problem(path, f"{at}.classify_as", f"unknown reason {classify_as!r}")
        examples.append(Example(example["text"], example["source"].strip(), classify_as))
    return tuple(examples)


def _entry(raw: Any, path: Path, where: str, taxonomy: Taxonomy) -> Ending:
    entry = _checked(raw, ENTRY_KEYS, {"id", "description", "patterns", "examples"}, path, where)
    if not ENTRY_ID.fullmatch(entry["id"]):
        raise _problem(path, f"{where}.id", "must be of [a-z0-9_]")
    ignore_case = entry.get("ignore_case", False)
    patterns = entry["patterns"]
    if not patterns:
        raise _problem(path, f"{where}.patterns", "must be a non-empty list of regexes")
    for index, pattern in enumerate(patterns):
        if not isinstance(pattern, str) or not pattern:
            raise _problem(path, f"{where}.patterns[{index}]", "must be a non-empty regex")
        try:
            re.compile(_grouped(pattern, ignore_case))  # as Ending.regex joins it
        except re.error as exc:
            raise _problem(path, f"{where}.patterns[{index}]", f"does not compile: {exc}") from exc
    examples = _checked(entry["examples"], {"positive": list, "negative": list}, {"positive", "negative"}, path, where)
    return Ending(
        id=entry["id"],
        description=entry["description"],
        patterns=tuple(patterns),
        ignore_case=ignore_case,
        positives=_examples(examples["positive"], path, f"{where}.examples.positive", taxonomy),
        negatives=_examples(examples["negative"], path, f"{where}.examples.negative", taxonomy),
    )


def load_endings(path: Path, taxonomy: Taxonomy) -> Endings:
    """Read and check endings.yaml; a problem names the file, the key path and what is wrong."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    sections = _checked(data, dict.fromkeys(SECTIONS, list), set(SECTIONS), path, "")
    seen: set[str] = set()
    parsed: dict[str, tuple[Ending, ...]] = {}
    for section in SECTIONS:
        if not sections[section]:
            raise _problem(path, section, "must be a non-empty list of entries")
        parsed[section] = tuple(_entry(raw, path, f"{section}[{i}]", taxonomy) for i, raw in enumerate(sections[section]))
        for index, entry in enumerate(parsed[section]):
            if entry.id in seen:
                raise _problem(path, f"{section}[{index}].id", f"{entry.id!r} is the id of another entry")
            seen.add(entry.id)
    return Endings(str(path), parsed["no_cause"], parsed["benign"])
