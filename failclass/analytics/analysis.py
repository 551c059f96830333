"""A report as people ask for it: the attempts of a source (the store, manifests, batch
results) that a selection keeps, their tables, where and when the data comes from, and
optionally the same tables for another period with the deltas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow.compute as pc

from failclass.analytics import PART_BYTES
from failclass.analytics.columns import Attempts
from failclass.analytics.comparison import Comparison, compare
from failclass.analytics.parts import read_in_parts
from failclass.analytics.records import store_attempts
from failclass.analytics.report import Report, build_report
from failclass.analytics.selection import Selection
from failclass.errors import InputError
from failclass.matching.taxonomy import Taxonomy

if TYPE_CHECKING:
    from failclass.executors import Executor
    from failclass.store.views import StoreViews
    from failclass.waste.rightsize import UserRightsizing


class RecordSource(Protocol):
    label: str

    def attempts(self, selection: Selection) -> Attempts: ...


class FileSource:
    """Manifests or `failclass batch` results (CSV, JSON Lines, Parquet), read once as
    columns (in parts by ``executor``'s workers, where given: failclass.analytics.parts)
    and filtered in memory."""

    def __init__(self, paths: Sequence[Path], executor: Executor | None = None, part_bytes: int = PART_BYTES) -> None:
        self.label = ", ".join(str(p) for p in paths)
        self._all = Attempts(read_in_parts(paths, executor, part_bytes))

    def attempts(self, selection: Selection) -> Attempts:
        return selection.apply(self._all)


class StoreSource:
    """The store; the selection becomes the query's WHERE clause."""

    def __init__(self, store: StoreViews, label: str) -> None:
        self.store = store
        self.label = label

    def attempts(self, selection: Selection) -> Attempts:
        rows = self.store.attempt_rows(
            since=selection.since,
            until=selection.until,
            users=selection.users,
            vcs=selection.vcs,
            reasons=selection.reasons,
            statuses=selection.statuses,
        )
        return Attempts(store_attempts(rows))


def database_label(url: str) -> str:
    """The database a report read, without its password."""
    from failclass.store.reach import masked

    return "store " + masked(url)


@dataclass(frozen=True)
class Scope:
    source: str
    selection: str  # the filter in words
    first: datetime | None  # the earliest and latest attempt times in the selection
    last: datetime | None
    generated: datetime

    def data_range(self) -> str:
        if self.first is None or self.last is None:
            return "No attempt has a time"
        return f"Attempts from {self.first.isoformat(timespec='minutes')} to {self.last.isoformat(timespec='minutes')}"


@dataclass(frozen=True)
class Analysis:
    report: Report
    attempts: Attempts
    scope: Scope
    comparison: Comparison | None
    categories: dict[str, str]  # the taxonomy's category marks and their names (IF: Infrastructure)

    def to_dict(self) -> dict[str, Any]:
        """The JSON answer: the report's tables, then the scope and the comparison."""
        scope = {
            "source": self.scope.source,
            "selection": self.scope.selection,
            "first": self.scope.first.isoformat() if self.scope.first else None,
            "last": self.scope.last.isoformat() if self.scope.last else None,
            "generated": self.scope.generated.isoformat(timespec="seconds"),
        }
        comparison = asdict(self.comparison) if self.comparison else None
        return {**self.report.to_dict(), "scope": scope, "comparison": comparison}


def check_reasons(attempts: Attempts, taxonomy: Taxonomy) -> None:
    unknown = sorted(set(pc.unique(attempts.column("reason").drop_null()).to_pylist()) - set(taxonomy.reasons))
    if unknown:
        raise InputError(f"reasons unknown to the taxonomy: {unknown}")


def analyse(
    source: RecordSource,
    selection: Selection,
    taxonomy: Taxonomy,
    against: Selection | None = None,
    now: datetime | None = None,
    idle: Mapping[str, float] | None = None,
    read_logs: bool = True,
    rightsizing: Mapping[str, UserRightsizing] | None = None,
    per_job: bool = False,
) -> Analysis:
    """The selection's report (``idle``: job -> idle GPU-hours, `failclass waste`'s measure;
    ``read_logs``: whether the attempts' logs are read for their checkpoints;
    ``rightsizing``: user -> `failclass waste`'s right-sizing advice; ``per_job``: the
    goodput per job too, for the export)."""
    selection.check_reasons(taxonomy)
    attempts = source.attempts(selection)
    check_reasons(attempts, taxonomy)
    report = build_report(attempts, taxonomy, idle, read_logs, rightsizing, per_job)
    comparison = None
    if against is not None:
        earlier = source.attempts(against)
        check_reasons(earlier, taxonomy)
        comparison = compare(report, build_report(earlier, taxonomy, read_logs=False), against.describe())
    first, last = attempts.span()
    scope = Scope(source.label, selection.describe(), first, last, generated=now or datetime.now(UTC))
    return Analysis(report, attempts, scope, comparison, dict(taxonomy.categories))
