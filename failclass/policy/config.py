"""The retry policy file: load, validate, and resolve the settings for one failure.

failclass/data/policy/default.yaml holds the defaults; an operator's file has the same shape and
replaces them key by key. Settings for a failure are resolved in layers, each naming
the clause it came from, so a decision can say which line of which file decided it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from failclass.errors import ConfigError
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.resources import POLICY
from failclass.yamlload import SafeLoader

DEFAULT_POLICY = POLICY / "default.yaml"
POLICY_ENV = "FAILCLASS_POLICY"
ACTIONS = ("retry", "retry_elsewhere", "retry_with_more_resources", "no_retry")
MODES = ("enforce", "audit")


@dataclass(frozen=True)
class ReasonPolicy:
    """What to do about one kind of failure."""

    action: str = "retry"
    max_retries: int = 1
    spends_budget: bool = True
    hold_after: int | None = None
    blacklist_inputs: bool = False
    suspect_node: bool = False
    memory_factor: float | None = None
    avoid_same_gpu_type: bool = False
    clause: str = "defaults"  # the most specific layer that set anything

    def under(self, layer: Layer, clause: str) -> ReasonPolicy:
        """These settings with ``layer`` over them (its values were checked on loading)."""
        return replace(self, **layer, clause=clause)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Backoff:
    base_seconds: float = 30
    factor: float = 2
    max_seconds: float = 1800
    jitter: float = 0.2


@dataclass(frozen=True)
class BlacklistPolicy:
    min_failures: int = 4
    min_jobs: int = 3


@dataclass(frozen=True)
class NodePolicy:
    window_hours: float = 24
    min_jobs: int = 2
    max_excluded: int = 8
    max_excluded_share: float = 0.25


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
    mode: str
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


def _reason_values(values: Any, where: str) -> Layer:
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a mapping of settings")
    unknown = set(values) - REASON_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown settings {sorted(unknown)}; known: {sorted(REASON_KEYS)}")
    if "action" in values and values["action"] not in ACTIONS:
        raise ConfigError(f"{where}.action: {values['action']!r} is not one of {ACTIONS}")
    for key in ("max_retries", "hold_after"):
        value = values.get(key)
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ConfigError(f"{where}.{key}: must be a whole number >= 0")
    return dict(values)


def _section(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    values = data.get(key) or {}
    try:
        return kind(**values)
    except TypeError as exc:
        raise ConfigError(f"{where}: {key}: {exc}") from None


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the policy: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a policy is a mapping")
    return data


def load_policy(path: Path | None = None, known_reasons: set[str] | None = None) -> PolicyConfig:
    """The defaults, overridden by ``path`` (or FAILCLASS_POLICY) when given."""
    configured = path or (Path(os.environ[POLICY_ENV]) if os.environ.get(POLICY_ENV) else None)
    data = _read(DEFAULT_POLICY)
    source = "the built-in policy (failclass/data/policy/default.yaml)"
    if configured:
        data = _merge(data, _read(configured))
        source = str(configured)
    known_top = {"mode", "defaults", "backoff", "user_window_hours", "blacklist", "nodes", "reasons", "rules", "virtual_clusters"}
    unknown = set(data) - known_top
    if unknown:
        raise ConfigError(f"{source}: unknown keys {sorted(unknown)}")
    if data.get("mode", "enforce") not in MODES:
        raise ConfigError(f"{source}: mode must be one of {MODES}")
    reasons = {r: _reason_values(v, f"{source}: reasons.{r}") for r, v in (data.get("reasons") or {}).items()}
    if known_reasons is not None and set(reasons) - known_reasons:
        raise ConfigError(f"{source}: reasons unknown to the taxonomy: {sorted(set(reasons) - known_reasons)}")
    clusters = {}
    for vc, block in (data.get("virtual_clusters") or {}).items():
        layers = {
            part: {
                k: _reason_values(v, f"{source}: virtual_clusters.{vc}.{part}.{k}") for k, v in (block.get(part) or {}).items()
            }
            for part in ("reasons", "rules")
        }
        clusters[vc] = ClusterPolicy(layers["reasons"], layers["rules"])
    return PolicyConfig(
        mode=data.get("mode", "enforce"),
        defaults=ReasonPolicy().under(_reason_values(data.get("defaults") or {}, f"{source}: defaults"), "defaults"),
        backoff=_section(data, "backoff", Backoff, source),
        user_window_hours=float(data.get("user_window_hours", 168)),
        blacklist=_section(data, "blacklist", BlacklistPolicy, source),
        nodes=_section(data, "nodes", NodePolicy, source),
        reasons=reasons,
        rules={r: _reason_values(v, f"{source}: rules.{r}") for r, v in (data.get("rules") or {}).items()},
        virtual_clusters=clusters,
        source=source,
    )
