"""The policy file's ``watch:`` section: how running jobs whose GPUs idle, or that hang,
are warned and released (failclass.waste.watch finds them; failclass.waste.enforce takes
each step once, records it and sends its notices). Declared on dataclasses and checked by
failclass.schema like the rest of the policy. Loaded on the hook's path: no numpy here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from failclass.schema import Invalid, allowed

RELEASES = ("cancel", "requeue")  # how an idle job is released: ended, or put back in the queue


@dataclass(frozen=True)
class IdleRule:
    """How the jobs of some kinds, on some virtual clusters (none named: every one), are
    treated while their GPUs idle: nothing in their first ``grace_minutes``; a warning at
    each of ``warn_minutes`` idle; released at ``release_minutes`` idle (never: null)."""

    kinds: tuple[str, ...] = allowed(("interactive",), fullmatch=r"\S+")
    virtual_clusters: tuple[str, ...] = allowed((), fullmatch=r"\S+")
    grace_minutes: float = allowed(10, ge=0)
    warn_minutes: tuple[float, ...] = allowed((30.0, 45.0), gt=0)
    release_minutes: float | None = allowed(60, gt=0)
    release: str = allowed("cancel", choices=RELEASES)

    def __post_init__(self) -> None:
        if not self.kinds:
            raise Invalid("name at least one kind of job", "kinds")
        if list(self.warn_minutes) != sorted(set(self.warn_minutes)):
            raise Invalid("each warning later than the one before", "warn_minutes")
        if self.release_minutes is not None and self.warn_minutes and self.release_minutes < self.warn_minutes[-1]:
            raise Invalid("must not come before the last warning", "release_minutes")

    def covers(self, kind: str, cluster: str) -> bool:
        return kind in self.kinds and (not self.virtual_clusters or cluster in self.virtual_clusters)


@dataclass(frozen=True)
class RepeatOffenders:
    """A user whose jobs were released ``releases`` times within ``days`` is named to the
    operators (a ``repeat_idle`` notice)."""

    releases: int = allowed(3, ge=1)
    days: float = allowed(7, gt=0)


@dataclass(frozen=True)
class WatchPolicy:
    """The policy file's ``watch:`` section: the idle rules (the first that covers a job
    applies), and the limits of the other signals."""

    idle: tuple[IdleRule, ...] = (IdleRule(),)
    never_used_after_minutes: float = allowed(10, gt=0)
    unreleased_grace_minutes: float = allowed(15, gt=0)
    idle_needs_free_memory: bool = False  # memory held counts as work, as CloudBrain-I's idle slot has it
    hung_after_minutes: float = allowed(30, gt=0)
    hung_cancel_minutes: float = allowed(60, gt=0)
    stale_after_minutes: float = allowed(10, gt=0)
    repeat: RepeatOffenders = RepeatOffenders()

    def __post_init__(self) -> None:
        if self.hung_cancel_minutes < self.hung_after_minutes:
            raise Invalid("must not be shorter than hung_after_minutes", "hung_cancel_minutes")

    def with_limits(
        self,
        warn: float | None = None,
        release: float | None = None,
        kinds: tuple[str, ...] = (),
        grace: float | None = None,
        **minutes: float | None,
    ) -> WatchPolicy:
        """This section with a command's (or a request's) limits over it: ``warn``,
        ``release``, ``kinds`` and ``grace`` make one idle rule from the first (a release
        alone keeps the warnings before it); ``minutes``: the other limits by name; None:
        unchanged. Invalid where they contradict each other."""
        idle = self.idle
        if warn is not None or release is not None or kinds or grace is not None:
            rule = idle[0] if idle else IdleRule()
            warnings = (warn,) if warn is not None else rule.warn_minutes
            if release is not None and warn is None:
                warnings = tuple(w for w in warnings if w <= release)
            until = release if release is not None else rule.release_minutes
            after = grace if grace is not None else rule.grace_minutes
            idle = (replace(rule, kinds=kinds or rule.kinds, warn_minutes=warnings, release_minutes=until, grace_minutes=after),)
        given: dict[str, Any] = {key: value for key, value in minutes.items() if value is not None}
        return replace(self, idle=idle, **given)

    def rule_for(self, kind: str, cluster: str) -> IdleRule | None:
        """The idle rule for a job of ``kind`` on virtual cluster ``cluster``, if one covers it."""
        return next((rule for rule in self.idle if rule.covers(kind, cluster)), None)
