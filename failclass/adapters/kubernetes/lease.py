"""Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection
does it: the holder renews ``renewTime`` every ``retry_s``; another replica takes the
Lease only once ``leaseDurationSeconds`` have passed without a renewal it observed;
every write carries the resourceVersion read, so of two replicas writing at once one
gets 409 and stays a follower. A leader that could not renew within ``renew_deadline_s``
stops acting before its Lease can expire and be taken, so two replicas never act at once.

(The client's own ``kubernetes.leaderelection`` keeps running the leader's work in a
thread after the Lease is lost, and exits the process on bad settings; hence this.)"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from failclass.adapters.kubernetes.cluster import Cluster, LeaseRecord


@dataclass(frozen=True)
class LeaseSettings:
    namespace: str
    name: str = "failclass-k8s-controller"
    duration_s: int = 15
    renew_deadline_s: float = 10.0
    retry_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.duration_s > self.renew_deadline_s > self.retry_s > 0:
            raise ValueError("a lease needs duration > renew deadline > retry period > 0")


class LeaderLease:
    """This replica's view of the Lease: ``leading()`` says whether it may act now."""

    def __init__(
        self,
        cluster: Cluster,
        settings: LeaseSettings,
        identity: str,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.cluster, self.settings, self.identity = cluster, settings, identity
        self.clock, self.wall = clock, wall
        self.observed: LeaseRecord | None = None
        self.observed_at = float("-inf")  # when (our clock) the Lease last changed as we saw it
        self.renewed_at = float("-inf")  # when (our clock) we last wrote it as holder

    def leading(self) -> bool:
        return self.clock() - self.renewed_at < self.settings.renew_deadline_s

    def _observe(self, record: LeaseRecord | None) -> None:
        if record != self.observed:
            self.observed, self.observed_at = record, self.clock()

    def try_acquire_or_renew(self) -> bool:
        """One round: read the Lease, and write it if free, expired, or ours."""
        current = self.cluster.read_lease(self.settings.namespace, self.settings.name)
        self._observe(current)
        now, started = self.wall(), self.clock()
        mine = current is not None and current.holder == self.identity
        expired = current is None or not current.holder or started - self.observed_at >= current.duration_s
        if not mine and not expired:
            return False
        record = LeaseRecord(
            holder=self.identity,
            duration_s=self.settings.duration_s,
            acquired=current.acquired if mine and current else now,
            renewed=now,
            transitions=(current.transitions + (0 if mine else 1)) if current else 0,
            resource_version=current.resource_version if current else None,
        )
        written = self.cluster.write_lease(self.settings.namespace, self.settings.name, record)
        if written is None:
            return False
        self._observe(written)
        self.renewed_at = started
        return True

    def release(self) -> None:
        """Give the Lease up on a clean stop, so a follower takes over at once (a write of
        the version last seen: if another replica has taken it since, 409 leaves it be)."""
        self.renewed_at = float("-inf")
        if self.observed is not None and self.observed.holder == self.identity:
            self.cluster.write_lease(self.settings.namespace, self.settings.name, replace(self.observed, holder=None))
