"""Rule model and loader: signatures/<reason>.yaml files -> validated Rule objects.

Built-in rules and an operator's extra folders go through the same loader; a broken
rule stops the load with its file, rule id and field named (never skipped silently).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from failclass.errors import RuleError
from failclass.matching import cache
from failclass.matching.endings import ENDINGS_FILE, Endings, load_endings
from failclass.matching.examples import SOURCE, Example
from failclass.matching.exceptions import ExceptionPattern, parse_exception
from failclass.matching.patterns import Prefix, expand, line_start, load_prefixes
from failclass.matching.roles import Roles, derive_roles
from failclass.matching.safety import lint_pattern, regexes
from failclass.matching.taxonomy import BUILTIN_DIR, NO_SIGNATURE, Reason, Taxonomy, builtin_taxonomy
from failclass.resources import user_data_dir
from failclass.yamlload import SafeLoader

KINDS = ("explicit", "implicit")
DEFAULT_PRIORITY = {"explicit": 50, "implicit": 10}
RULE_ID = re.compile(r"[a-z0-9_]+\.[a-z0-9_]+")
RULES_DIR_ENV = "FAILCLASS_RULES_DIR"
UNSAFE_RULES_ENV = "FAILCLASS_UNSAFE_RULES"  # refuse (default) or warn
CACHE_FORMAT = 2  # of a cached rule set: raise it when _encoded changes
# the modules whose code shapes a rule set too
LOADER = ("endings.py", "examples.py", "exceptions.py", "patterns.py", "rules.py", "safety.py", "taxonomy.py", "../schema.py")
RESERVED = ("taxonomy.yaml", "prefixes.yaml", ENDINGS_FILE)  # data files of a rules folder that hold no rules


@dataclass(frozen=True)
class Rule:
    id: str
    reason: str
    kind: str
    priority: int
    description: str
    why: str
    patterns: tuple[str, ...]
    ignore_case: bool
    positives: tuple[Example, ...]
    negatives: tuple[Example, ...]
    path: str
    exception: ExceptionPattern | None = None  # a rule over a raised exception (matching.exceptions)
    generic: bool = False  # it says only that the program failed (a bare traceback), not how


@dataclass(frozen=True, eq=False)
class RuleSet:
    """Every loaded rule, with the prefixes and taxonomy their patterns rely on, and the
    endings that decide what a log's last lines record (failclass.matching.endings)."""

    rules: tuple[Rule, ...]
    prefixes: tuple[Prefix, ...]
    taxonomy: Taxonomy
    endings: Endings

    def expanded(self, pattern: str) -> str:
        """The pattern as the engine compiles it (see patterns.expand)."""
        return expand(pattern, self.line_start)

    @cached_property
    def line_start(self) -> str:
        return line_start(self.prefixes)

    def by_id(self) -> dict[str, Rule]:
        return {rule.id: rule for rule in self.rules}

    @cached_property
    def roles(self) -> Roles:
        """Each rule's role and the consequence reasons (failclass.matching.roles)."""
        return derive_roles(self.rules, self.taxonomy)


def _text(value: Any, path: str, rule_id: str | None, field: str, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise RuleError(path, rule_id, field, "must be a non-empty string")
    return value


def _examples(raw: Any, path: str, rule_id: str, field: str, taxonomy: Taxonomy) -> tuple[Example, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RuleError(path, rule_id, field, "must be a list of {text, source}")
    examples = []
    for index, item in enumerate(raw):
        where = f"{field}[{index}]"
        if not isinstance(item, dict):
            raise RuleError(path, rule_id, where, "must be a mapping with text and source")
        unknown = set(item) - {"text", "source", "classify_as"}
        if unknown:
            raise RuleError(path, rule_id, where, f"unknown keys {sorted(unknown)}")
        text = _text(item.get("text"), path, rule_id, f"{where}.text")
        source = item.get("source")
        if source is not None and not (isinstance(source, str) and SOURCE.fullmatch(source.strip())):
            raise RuleError(path, rule_id, f"{where}.source", "must be a URL, scenario:<name> or job:<id>")
        classify_as = item.get("classify_as")
        if classify_as is not None and classify_as not in taxonomy:
            raise RuleError(path, rule_id, f"{where}.classify_as", f"unknown reason {classify_as!r}")
        examples.append(Example(text, source.strip() if source else None, classify_as))
    return tuple(examples)


def _patterns(raw: Any, path: str, rule_id: str, ignore_case: bool) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise RuleError(path, rule_id, "patterns", "must be a non-empty list of regexes")
    flags = re.IGNORECASE if ignore_case else 0
    for index, pattern in enumerate(raw):
        field = f"patterns[{index}]"
        _text(pattern, path, rule_id, field)
        try:
            # bytes: the engine matches bytes, so '.' is one byte, as Hyperscan sees it; the
            # prefixes that a leading '^' stands for are checked once, in load_prefixes
            re.compile(pattern.encode("utf-8"), flags | re.MULTILINE)
        except re.error as exc:
            raise RuleError(path, rule_id, field, f"does not compile: {exc}") from exc
    return tuple(raw)


RULE_KEYS = {"id", "kind", "priority", "description", "why", "patterns", "ignore_case", "examples", "exception", "generic"}


def parse_rule(entry: Any, reason: str, path: str, taxonomy: Taxonomy) -> Rule:
    """Validate one rule mapping of a rule file."""
    if not isinstance(entry, dict):
        raise RuleError(path, None, "rules", "every rule must be a mapping")
    rule_id = entry.get("id")
    if not isinstance(rule_id, str) or not RULE_ID.fullmatch(rule_id):
        raise RuleError(path, str(rule_id), "id", "must look like <reason>.<slug> ([a-z0-9_])")
    if rule_id.split(".")[0] != reason:
        raise RuleError(path, rule_id, "id", f"must start with the file's reason '{reason}.'")
    unknown = set(entry) - RULE_KEYS
    if unknown:
        raise RuleError(path, rule_id, None, f"unknown keys {sorted(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise RuleError(path, rule_id, "kind", f"must be one of {KINDS}")
    priority = entry.get("priority", DEFAULT_PRIORITY[kind])
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 100:
        raise RuleError(path, rule_id, "priority", "must be an integer from 0 to 100")
    ignore_case, generic = entry.get("ignore_case", False), entry.get("generic", False)
    for field, flag in (("ignore_case", ignore_case), ("generic", generic)):
        if not isinstance(flag, bool):
            raise RuleError(path, rule_id, field, "must be true or false")
    if generic and kind != "implicit":
        raise RuleError(path, rule_id, "generic", "only an implicit rule can be generic")
    examples = entry.get("examples") or {}
    if not isinstance(examples, dict) or set(examples) - {"positive", "negative"}:
        raise RuleError(path, rule_id, "examples", "must be a mapping with positive and negative lists")
    exception = parse_exception(entry["exception"], path, rule_id) if "exception" in entry else None
    positives = _examples(examples.get("positive"), path, rule_id, "examples.positive", taxonomy)
    if not positives:
        raise RuleError(path, rule_id, "examples.positive", "needs at least one real example")
    missing = [i for i, example in enumerate(positives) if not example.source]
    if missing:
        raise RuleError(path, rule_id, f"examples.positive[{missing[0]}].source", "a positive example needs its source")
    return Rule(
        id=rule_id,
        reason=reason,
        kind=kind,
        priority=priority,
        description=_text(entry.get("description"), path, rule_id, "description"),
        why=_text(entry.get("why"), path, rule_id, "why", required=False),
        patterns=() if "patterns" not in entry and exception else _patterns(entry.get("patterns"), path, rule_id, ignore_case),
        ignore_case=ignore_case,
        positives=positives,
        negatives=_examples(examples.get("negative"), path, rule_id, "examples.negative", taxonomy),
        path=path,
        exception=exception,
        generic=generic,
    )


def load_rule_file(path: Path, taxonomy: Taxonomy) -> list[Rule]:
    """Load one <reason>.yaml file."""
    name = str(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RuleError(name, None, None, f"cannot read: {exc}") from exc
    if not isinstance(data, dict):
        raise RuleError(name, None, None, "must be a mapping with 'reason' and 'rules'")
    reason = data.get("reason")
    if reason not in taxonomy or reason == NO_SIGNATURE:
        raise RuleError(name, None, "reason", f"unknown reason {reason!r}")
    if path.stem != reason:
        raise RuleError(name, None, "reason", f"file must be named {reason}.yaml")
    rules = data.get("rules")
    if not isinstance(rules, list) or not rules:
        raise RuleError(name, None, "rules", "must be a non-empty list")
    return [parse_rule(entry, reason, name, taxonomy) for entry in rules]


def rule_files(directory: Path) -> list[Path]:
    """The rule files of a folder: every *.yaml except the taxonomy, prefixes and endings."""
    if not directory.is_dir():
        raise RuleError(str(directory), None, None, "rules folder does not exist")
    return sorted(p for p in directory.glob("*.yaml") if p.name not in RESERVED)


def default_rules_dir() -> Path | None:
    """The operator's own rules folder when FAILCLASS_RULES_DIR names none; None for a
    user without a home (a scheduler's service account), who names folders explicitly."""
    try:
        return user_data_dir() / "rules"
    except RuntimeError:  # Path.home(): no HOME and no home in the password database
        return None


def operator_rule_dirs(extra_dirs: Iterable[Path] = ()) -> list[Path]:
    """The operator's rule folders, in load order: each --rules-dir, then those of
    FAILCLASS_RULES_DIR (separated by os.pathsep) or, without it, default_rules_dir()
    when it exists. `failclass rules new` writes into the first."""
    configured = [Path(d) for d in os.environ.get(RULES_DIR_ENV, "").split(os.pathsep) if d]
    default = default_rules_dir()
    if RULES_DIR_ENV not in os.environ and default is not None and default.is_dir():
        configured = [default]
    return [Path(d) for d in extra_dirs] + configured


def load_rules(extra_dirs: Iterable[Path] = (), builtin: bool = True) -> RuleSet:
    """Load the built-in rules and the operator's folders; ids must be unique across all.
    Files loaded before are read back from the cache (failclass.matching.cache): the rule
    set as it was validated then, which a change to any of them invalidates."""
    dirs = ([BUILTIN_DIR] if builtin else []) + operator_rule_dirs(extra_dirs)
    name = _cache_name(dirs)
    payload = cache.read(name) if name else None
    loaded = _decoded(payload) if payload is not None else None
    if loaded is None:
        loaded = _parse_rules(dirs)
        if name:
            cache.write(name, _encoded(*loaded))
    ruleset, unsafe = loaded
    for finding in unsafe:  # at every load, cached or not
        warnings.warn(finding, UnsafeRuleWarning, stacklevel=2)
    return ruleset


def _parse_rules(dirs: list[Path]) -> tuple[RuleSet, list[str]]:
    """The rule set read from its files, and the unsafe rules loaded anyway (check_safety)."""
    taxonomy = builtin_taxonomy()
    prefixes = load_prefixes(BUILTIN_DIR / "prefixes.yaml")
    rules: list[Rule] = []
    unsafe: list[str] = []
    seen: dict[str, str] = {}
    for directory in dirs:
        for path in rule_files(directory):
            for rule in load_rule_file(path, taxonomy):
                if rule.id in seen:
                    raise RuleError(rule.path, rule.id, "id", f"duplicate of a rule in {seen[rule.id]}")
                seen[rule.id] = rule.path
                if directory != BUILTIN_DIR:  # the built-in rules are linted by the test suite
                    unsafe += check_safety(rule)
                rules.append(rule)
    return RuleSet(tuple(rules), prefixes, taxonomy, load_endings(BUILTIN_DIR / ENDINGS_FILE, taxonomy)), unsafe


def check_safety(rule: Rule) -> list[str]:
    """An operator's rule with a dangerous pattern (the errors of `rules lint`) is refused;
    with FAILCLASS_UNSAFE_RULES=warn it is loaded, and what to warn about is returned."""
    loaded_anyway = []
    for where, regex, flags in regexes(rule):
        for finding in lint_pattern(rule, where, regex, flags):
            if finding.severity != "error":
                continue
            if os.environ.get(UNSAFE_RULES_ENV, "refuse") == "warn":
                loaded_anyway.append(f"{finding} (loaded anyway: {UNSAFE_RULES_ENV}=warn)")
            else:
                raise RuleError(rule.path, rule.id, where, f"{finding.message}; set {UNSAFE_RULES_ENV}=warn to load it anyway")
    return loaded_anyway


def _cache_name(dirs: list[Path]) -> str | None:
    """The cache file of the rule set loaded from ``dirs``: named by the hash of every file
    it is read from (taxonomy, prefixes, endings, rule files; their paths too, which rules keep),
    of the loader's own code, and of FAILCLASS_UNSAFE_RULES. None when a file
    cannot be listed or read: the load then says what is wrong."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}|{os.environ.get(UNSAFE_RULES_ENV, 'refuse')}".encode())
    loader = [Path(__file__).parent / module for module in LOADER]
    try:
        rule_paths = [path for directory in dirs for path in rule_files(directory)]
        for path in [*loader, *(BUILTIN_DIR / name for name in RESERVED), *rule_paths]:
            digest.update(f"|{path}|".encode() + hashlib.sha256(path.read_bytes()).digest())
    except (OSError, RuleError):
        return None
    return f"ruleset-{digest.hexdigest()[:40]}.json"


def _encoded(ruleset: RuleSet, unsafe: list[str]) -> bytes:
    """A loaded rule set as JSON, for the cache (_decoded reads it back)."""
    data = {
        "rules": [astuple(rule) for rule in ruleset.rules],
        "prefixes": [astuple(prefix) for prefix in ruleset.prefixes],
        "reasons": [astuple(reason) for reason in ruleset.taxonomy.reasons.values()],
        "categories": ruleset.taxonomy.categories,
        "endings": astuple(ruleset.endings),
        "unsafe": unsafe,
    }
    return json.dumps(data, default=sorted).encode()  # sorted: an exception pattern's types (a frozenset)


def _decoded(payload: bytes) -> tuple[RuleSet, list[str]] | None:
    """What _encoded wrote, or None for anything else (then the files are loaded)."""
    try:
        data = json.loads(payload)
        rules = tuple(_rule(encoded) for encoded in data["rules"])
        prefixes = tuple(Prefix(pid, pattern, tuple(examples)) for pid, pattern, examples in data["prefixes"])
        reasons = {
            rid: Reason(rid, name, tuple(cats), consequence, preemption, tuple((scheduler, word) for scheduler, word in words))
            for rid, name, cats, consequence, preemption, words in data["reasons"]
        }
        known = Taxonomy(reasons, dict(data["categories"]))
        return RuleSet(rules, prefixes, known, Endings.decoded(data["endings"])), list(data["unsafe"])
    except (ValueError, TypeError, KeyError):
        return None


def _rule(encoded: list[Any]) -> Rule:
    """A rule as _encoded wrote it: its fields in order, tuples and nested dataclasses as lists."""
    rule_id, reason, kind, priority, description, why, patterns, ignore_case, *examples, path, exception, generic = encoded
    positives, negatives = (tuple(Example(*example) for example in listed) for listed in examples)
    return Rule(
        rule_id,
        reason,
        kind,
        priority,
        description,
        why,
        tuple(patterns),
        ignore_case,
        positives,
        negatives,
        path,
        ExceptionPattern(frozenset(exception[0]), *exception[1:]) if exception else None,
        generic,
    )


class UnsafeRuleWarning(UserWarning):
    """An operator's rule failed a safety check and was loaded anyway."""
