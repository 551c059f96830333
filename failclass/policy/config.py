"""The retry policy file: load, validate, and resolve the settings for one failure.

failclass/data/policy/default.yaml holds the defaults; an operator's file has the same shape and
replaces them key by key. Settings for a failure are resolved in layers, each naming
the clause it came from, so a decision can say which line of which file decided it.

The schema is declared on the dataclasses themselves (each field's type and its bounds in
``allowed(...)``) and checked by failclass.schema, as every data file is: a wrong type
(``"abc"`` for a number, ``"no"`` for true/false), a value out of range, an unknown key,
reason or rule id is refused as ``file: key.path: problem``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, cast

from failclass.contracts import MODES, RETRY_ACTIONS, Mode
from failclass.errors import ConfigError
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.notify.config import Notifications
from failclass.policy.watch import WatchPolicy
from failclass.resources import POLICY
from failclass.schema import allowed, build, checked, derived, of_type, read_yaml

DEFAULT_POLICY = POLICY / "default.yaml"
POLICY_ENV = "FAILCLASS_POLICY"
REASON_ACTIONS = (*RETRY_ACTIONS, "no_retry")  # what a failure's settings may choose; holds and rejections are the policy's


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
    clause: str = derived("defaults")  # the most specific layer that set anything

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
    notifications: Notifications = field(default_factory=Notifications)  # who hears of what (failclass.notify)
    watch: WatchPolicy = field(default_factory=WatchPolicy)  # idle and hung running jobs (failclass.waste.watch)

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


def _reason_values(values: Any, source: str, path: str) -> Layer:
    return checked(ReasonPolicy, values, source, path, noun="settings")


def _section(data: dict[str, Any], key: str, kind: type, source: str) -> Any:
    return kind(**checked(kind, data.get(key) or {}, source, key, noun="settings"))


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def _read(path: Path) -> dict[str, Any]:
    data = read_yaml(path, "the policy") or {}
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
        vc: _cluster(block, source, f"virtual_clusters.{vc}") for vc, block in (data.get("virtual_clusters") or {}).items()
    }
    reasons = {r: _reason_values(v, source, f"reasons.{r}") for r, v in (data.get("reasons") or {}).items()}
    rules = {r: _reason_values(v, source, f"rules.{r}") for r, v in (data.get("rules") or {}).items()}
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
        mode=cast(Mode, data.get("mode", "enforce")),
        defaults=ReasonPolicy().under(_reason_values(data.get("defaults") or {}, source, "defaults"), "defaults"),
        backoff=_section(data, "backoff", Backoff, source),
        user_window_hours=window,
        blacklist=_section(data, "blacklist", BlacklistPolicy, source),
        nodes=_section(data, "nodes", NodePolicy, source),
        reasons=reasons,
        rules=rules,
        virtual_clusters=clusters,
        source=source,
        notifications=build(Notifications, data.get("notifications") or {}, source, "notifications"),
        watch=build(WatchPolicy, data.get("watch") or {}, source, "watch"),
    )


def _check_shape(data: dict[str, Any], source: str) -> float:
    """The file's top level: known keys, the mode, the user window (returned), mappings where due."""
    known_top = {
        "mode",
        "defaults",
        "backoff",
        "user_window_hours",
        "blacklist",
        "nodes",
        "reasons",
        "rules",
        "virtual_clusters",
        "notifications",
        "watch",
    }
    unknown = set(data) - known_top
    if unknown:
        raise ConfigError(f"{source}: unknown keys {sorted(unknown)}")
    if data.get("mode", "enforce") not in MODES:
        raise ConfigError(f"{source}: mode must be one of {MODES}")
    window = data.get("user_window_hours", 168)
    if not of_type(window, (float,)) or window <= 0:
        raise ConfigError(f"{source}: user_window_hours: {window!r} must be a number > 0")
    for part in ("reasons", "rules", "virtual_clusters"):
        if not isinstance(data.get(part) or {}, dict):
            raise ConfigError(f"{source}: {part}: expected a mapping")
    return float(window)


def _cluster(block: Any, source: str, path: str) -> ClusterPolicy:
    if not isinstance(block, dict) or set(block) - {"reasons", "rules"}:
        raise ConfigError(f"{source}: {path}: a mapping of reasons and rules")
    layers = {
        part: {k: _reason_values(v, source, f"{path}.{part}.{k}") for k, v in (block.get(part) or {}).items()}
        for part in ("reasons", "rules")
    }
    return ClusterPolicy(layers["reasons"], layers["rules"])
