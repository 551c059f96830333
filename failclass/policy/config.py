"""The retry policy file: load, validate, and resolve the settings for one failure.

failclass/data/policy/default.yaml holds the defaults; an operator's file has the same shape and
replaces them key by key. Settings for a failure are resolved in layers, each naming
the clause it came from, so a decision can say which line of which file decided it.

The schema is declared on the dataclasses themselves (each field's type and its bounds in
``allowed(...)``) and checked by one function, ``_checked``: a wrong type (``"abc"`` for a
number, ``"no"`` for true/false), a value out of range, an unknown key, reason or rule id
is refused as ``file: key.path: problem``. It is checked here rather than by pydantic so
that ``hook decide``, which loads the policy on every call, does not import it.
"""

from __future__ import annotations

import functools
import math
import os
import types
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from failclass.contracts import MODES, RETRY_ACTIONS, Mode
from failclass.errors import ConfigError
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.resources import POLICY
from failclass.yamlload import SafeLoader

DEFAULT_POLICY = POLICY / "default.yaml"
POLICY_ENV = "FAILCLASS_POLICY"
REASON_ACTIONS = (*RETRY_ACTIONS, "no_retry")  # what a failure's settings may choose; holds and rejections are the policy's


def allowed(
    default: Any,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: tuple[str, ...] = (),
) -> Any:
    """A policy field's default and the values it accepts beyond its type."""
    return field(default=default, metadata={"ge": ge, "gt": gt, "le": le, "lt": lt, "choices": choices})


@dataclass(frozen=True)
class ReasonPolicy:
    """What to do about one kind of failure."""

    action: str = allowed("retry", choices=REASON_ACTIONS)
    max_retries: int = allowed(1, ge=0)
    spends_budget: bool = True
    hold_after: int | None = allowed(None, ge=1)
    blacklist_inputs: bool = False
    suspect_node: bool = False
    memory_factor: float | None = allowed(None, gt=0)
    avoid_same_gpu_type: bool = False
    clause: str = "defaults"  # the most specific layer that set anything

    def under(self, layer: Layer, clause: str) -> ReasonPolicy:
        """These settings with ``layer`` over them (its values were checked on loading)."""
        return replace(self, **layer, clause=clause)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Backoff:
    base_seconds: float = allowed(30, ge=0)
    factor: float = allowed(2, ge=1)
    max_seconds: float = allowed(1800, ge=0)
    jitter: float = allowed(0.2, ge=0, lt=1)  # a share of the delay, either way


@dataclass(frozen=True)
class BlacklistPolicy:
    min_failures: int = allowed(4, ge=1)
    min_jobs: int = allowed(3, ge=1)


@dataclass(frozen=True)
class NodePolicy:
    window_hours: float = allowed(24, gt=0)
    min_jobs: int = allowed(2, ge=1)
    max_excluded: int = allowed(8, ge=0)
    max_excluded_share: float = allowed(0.25, ge=0, le=1)


REASON_KEYS = {f.name for f in fields(ReasonPolicy)} - {"clause"}
Setting = str | int | float | bool | None
Layer = dict[str, Setting]  # the settings one clause of the file sets, over those below it


@dataclass(frozen=True)
class ClusterPolicy:
    """A virtual cluster's own layers: per reason, then per rule."""

    reasons: dict[str, Layer]
    rules: dict[str, Layer]


@dataclass(frozen=True)
class PolicyConfig:
    mode: Mode
    defaults: ReasonPolicy
    backoff: Backoff
    user_window_hours: float
    blacklist: BlacklistPolicy
    nodes: NodePolicy
    reasons: dict[str, Layer]
    rules: dict[str, Layer]
    virtual_clusters: dict[str, ClusterPolicy]
    source: str

    def blacklisting_reason(self) -> str:
        """The reason whose failures blacklist inputs (the first, if several do): what a
        rejection at submission names when its blacklist entry does not say."""
        found = [reason for reason, layer in self.reasons.items() if layer.get("blacklist_inputs")]
        return found[0] if found else NO_SIGNATURE

    def for_failure(self, reason: str, rule_id: str | None, vc: str) -> ReasonPolicy:
        """The settings for one failure, most specific layer last."""
        layers = [(f"reasons.{reason}", self.reasons.get(reason))]
        if rule_id:
            layers.append((f"rules.{rule_id}", self.rules.get(rule_id)))
        cluster = self.virtual_clusters.get(vc)
        if cluster:
            layers.append((f"virtual_clusters.{vc}.reasons.{reason}", cluster.reasons.get(reason)))
            if rule_id:
                layers.append((f"virtual_clusters.{vc}.rules.{rule_id}", cluster.rules.get(rule_id)))
        resolved = self.defaults
        for clause, values in layers:
            if values:
                resolved = resolved.under(values, clause)
        return resolved


def _checked(kind: type, values: Any, where: str) -> dict[str, Any]:
    """``values`` (some or all of ``kind``'s fields) checked: known keys, each field's type (a
    bool is no number, a string no bool, a number finite) and its bounds."""
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a mapping of settings, not {type(values).__name__}")
    hints = _type_hints(kind)
    known = {f.name: f for f in fields(kind) if f.name != "clause"}
    unknown = set(values) - set(known)
    if unknown:
        raise ConfigError(f"{where}: unknown settings {sorted(unknown)}; known: {sorted(known)}")
    for key, value in values.items():
        spec, at = known[key], f"{where}.{key}"
        types_ = typing.get_args(hints[key]) if isinstance(hints[key], types.UnionType) else (hints[key],)
        if value is None and type(None) in types_:
            continue
        if not _of_type(value, types_):
            wanted = " or ".join(
                "null"
                if t is type(None)
                else {"str": "text", "int": "a whole number", "float": "a number", "bool": "true or false"}[t.__name__]
                for t in types_
            )
            raise ConfigError(f"{at}: {value!r} is not {wanted}")
        meta = spec.metadata
        if meta.get("choices") and value not in meta["choices"]:
            raise ConfigError(f"{at}: {value!r} is not one of {meta['choices']}")
        for bound, holds, says in (
            ("ge", lambda v, b: v >= b, ">="),
            ("gt", lambda v, b: v > b, ">"),
            ("le", lambda v, b: v <= b, "<="),
            ("lt", lambda v, b: v < b, "<"),
        ):
            if meta.get(bound) is not None and not holds(value, meta[bound]):
                raise ConfigError(f"{at}: {value!r} must be {says} {meta[bound]}")
    return dict(values)


@functools.cache
def _type_hints(kind: type) -> dict[str, Any]:
    """A settings class's field types, resolved once (each layer of the file asks again)."""
    return typing.get_type_hints(kind)


def _of_type(value: Any, types_: tuple[Any, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types_
    if isinstance(value, int):
        return int in types_ or float in types_
    if isinstance(value, float):
        return float in types_ and math.isfinite(value)
    return isinstance(value, str) and str in types_


def _reason_values(values: Any, where: str) -> Layer:
    return _checked(ReasonPolicy, values, where)


def _section(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    return kind(**_checked(kind, data.get(key) or {}, f"{where}: {key}"))


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the policy: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a policy is a mapping")
    return data


def load_policy(
    path: Path | None = None, known_reasons: set[str] | None = None, known_rules: set[str] | None = None
) -> PolicyConfig:
    """The defaults, overridden by ``path`` (or FAILCLASS_POLICY) when given; reasons and
    rule ids are checked against ``known_reasons`` and ``known_rules`` when given."""
    configured = path or (Path(os.environ[POLICY_ENV]) if os.environ.get(POLICY_ENV) else None)
    data = _read(DEFAULT_POLICY)
    source = "the built-in policy (failclass/data/policy/default.yaml)"
    if configured:
        data = _merge(data, _read(configured))
        source = str(configured)
    window = _check_shape(data, source)
    clusters = {
        vc: _cluster(block, f"{source}: virtual_clusters.{vc}") for vc, block in (data.get("virtual_clusters") or {}).items()
    }
    reasons = {r: _reason_values(v, f"{source}: reasons.{r}") for r, v in (data.get("reasons") or {}).items()}
    rules = {r: _reason_values(v, f"{source}: rules.{r}") for r, v in (data.get("rules") or {}).items()}
    named_reasons = [(f"reasons.{r}", r) for r in reasons] + [
        (f"virtual_clusters.{vc}.reasons.{r}", r) for vc, c in clusters.items() for r in c.reasons
    ]
    if known_reasons is not None and (strangers := [at for at, r in named_reasons if r not in known_reasons]):
        raise ConfigError(f"{source}: reasons unknown to the taxonomy: {strangers}")
    named_rules = [(f"rules.{r}", r) for r in rules] + [
        (f"virtual_clusters.{vc}.rules.{r}", r) for vc, c in clusters.items() for r in c.rules
    ]
    if known_rules is not None and (strangers := [at for at, r in named_rules if r not in known_rules]):
        raise ConfigError(f"{source}: rule ids no rule has: {strangers}")
    return PolicyConfig(
        mode=typing.cast(Mode, data.get("mode", "enforce")),
        defaults=ReasonPolicy().under(_reason_values(data.get("defaults") or {}, f"{source}: defaults"), "defaults"),
        backoff=_section(data, "backoff", Backoff, source),
        user_window_hours=window,
        blacklist=_section(data, "blacklist", BlacklistPolicy, source),
        nodes=_section(data, "nodes", NodePolicy, source),
        reasons=reasons,
        rules=rules,
        virtual_clusters=clusters,
        source=source,
    )


def _check_shape(data: dict[str, Any], source: str) -> float:
    """The file's top level: known keys, the mode, the user window (returned), mappings where due."""
    known_top = {"mode", "defaults", "backoff", "user_window_hours", "blacklist", "nodes", "reasons", "rules", "virtual_clusters"}
    unknown = set(data) - known_top
    if unknown:
        raise ConfigError(f"{source}: unknown keys {sorted(unknown)}")
    if data.get("mode", "enforce") not in MODES:
        raise ConfigError(f"{source}: mode must be one of {MODES}")
    window = data.get("user_window_hours", 168)
    if not _of_type(window, (float,)) or window <= 0:
        raise ConfigError(f"{source}: user_window_hours: {window!r} must be a number > 0")
    for part in ("reasons", "rules", "virtual_clusters"):
        if not isinstance(data.get(part) or {}, dict):
            raise ConfigError(f"{source}: {part}: expected a mapping")
    return float(window)


def _cluster(block: Any, where: str) -> ClusterPolicy:
    if not isinstance(block, dict) or set(block) - {"reasons", "rules"}:
        raise ConfigError(f"{where}: a mapping of reasons and rules")
    layers = {
        part: {k: _reason_values(v, f"{where}.{part}.{k}") for k, v in (block.get(part) or {}).items()}
        for part in ("reasons", "rules")
    }
    return ClusterPolicy(layers["reasons"], layers["rules"])
