"""`failclass batch`: classify every attempt in directories and archives of logs, in
parallel, resumably, into one row per attempt (JSON Lines, then Parquet).

Attempts: a manifest (CSV, JSON Lines or Parquet; job_id, attempt, logs as member
paths, and any other attempt facts) says which logs belong to which attempt; without
one, the member's path does, by ID_PATTERN (a regular expression with the named groups
``job`` and optionally ``attempt``, matched against the path inside its source; by
default the folder holding a log is its job, and a folder ``attempt-N`` below it its
attempt). The logs of one attempt (stdout, stderr, one per rank) are classified
together: the strongest answer speaks for the attempt.

Resuming: results.jsonl is appended one complete line per attempt and flushed; a run
that starts on an existing output folder skips the attempts already there, after
cutting a last line that a killed run left half-written. No attempt is lost or written
twice.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import socket
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from failclass.classifier import Classifier, Examination
from failclass.contracts import Classification, classification_json
from failclass.errors import DamagedMember, InputError
from failclass.limits import LIMITS
from failclass.logs.archives import Member, is_log_name, members
from failclass.logs.facts import Progress
from failclass.logs.text import Resumed, read_head
from failclass.options import ClassifierOptions, build_quietly

DEFAULT_ID_PATTERN = r"(?:^|/)(?P<job>[^/]+)/(?:attempt[-_]?(?P<attempt>\d+)/)?[^/]+$"
CHUNK_MEMBERS = 64  # members per task: a task's overhead is paid once per chunk
CHUNK_BYTES = 16 << 20  # and a chunk stays small enough to ship
RESULTS = "results.jsonl"
Facts = dict[str, Any]  # a manifest row's other columns, as read from CSV, JSON Lines or Parquet
PR_SET_PDEATHSIG = 1  # prctl(2)

_worker_classifier: Classifier | None = None


@dataclass
class Summary:
    attempts: int = 0
    skipped_done: int = 0
    members: int = 0
    not_logs: int = 0  # files of the sources that are not named like logs (and no manifest lists)
    bytes: int = 0
    problems: list[str] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: float = 0.0


def attempt_of(name: str, pattern: re.Pattern[str]) -> tuple[str, int]:
    match = pattern.search(name)
    if match is None:
        return Path(name).stem, 1
    attempt = match.groupdict().get("attempt")
    return match.group("job"), int(attempt) if attempt else 1


def is_log(member: Member, listed: Mapping[str, tuple[str, int]]) -> bool:
    """A source named alone, a log the manifest lists, or a file named like a log."""
    return not member.inside or member.name in listed or is_log_name(member.name)


def done_attempts(results: Path) -> set[tuple[str, int]]:
    """Attempts already written; a half-written last line (a killed run) is cut off."""
    if not results.exists():
        return set()
    data = results.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    if len(complete) != len(data):
        with results.open("r+b") as handle:
            handle.truncate(len(complete))
    done = set()
    for line in complete.splitlines():
        row = json.loads(line)
        done.add((row["job_id"], row["attempt"]))
    return done


def worker_classifier(options: ClassifierOptions) -> Classifier:
    """This process's classifier, built from ``options`` once, on first use (a pool or
    Dask worker classifies many members; the parent checked the options already)."""
    global _worker_classifier
    if _worker_classifier is None:
        _worker_classifier = build_quietly(options)
    return _worker_classifier


@dataclass(frozen=True)
class MemberAnswer:
    """What a worker sends back for one member (pickled by the pool or Dask)."""

    classification: Classification
    strength: tuple[float, ...]  # how strongly it speaks for the attempt (Classifier.strength)
    progress: Progress | None
    worker: str  # who classified it


def classify_members(logs: list[bytes], options: ClassifierOptions) -> list[MemberAnswer]:
    """Run in a worker process (local pool or Dask worker): one task classifies a chunk of
    members, so that a task's overhead (pickling, scheduling) is paid once per chunk."""
    classifier = worker_classifier(options)
    worker = worker_name()
    return [_answer(classifier, classifier.examine_bytes(data), worker) for data in logs]


def worker_name() -> str:
    """Who classified: the Dask worker's address inside a Dask worker, else host:pid."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def _answer(classifier: Classifier, examined: Examination, worker: str) -> MemberAnswer:
    result = examined.classification
    return MemberAnswer(result, tuple(classifier.strength(result)), examined.progress, worker)


class AttemptCollector:
    """Members' answers gathered per attempt; an attempt is written once all are in."""

    def __init__(self, expected: dict[tuple[str, int], int], facts: dict[tuple[str, int], Facts], out: Path) -> None:
        self.expected = expected
        self.facts = facts
        self.parts: dict[tuple[str, int], list[tuple[str, MemberAnswer | None]]] = defaultdict(list)
        self.handle = (out / RESULTS).open("a")
        self.written = 0
        self.reasons: dict[str, int] = defaultdict(int)

    def add(self, key: tuple[str, int], member: str, answer: MemberAnswer | None) -> None:
        self.parts[key].append((member, answer))
        if len(self.parts[key]) == self.expected[key]:
            self._write(key, self.parts.pop(key))

    def _write(self, key: tuple[str, int], parts: list[tuple[str, MemberAnswer | None]]) -> None:
        answered = [(m, a) for m, a in parts if a is not None]
        logs = [m for m, _ in parts]
        row: dict[str, Any] = {**self.facts.get(key, {}), "job_id": key[0], "attempt": key[1], "logs": logs}  # JSON out
        if answered:
            log, best = max(answered, key=lambda pair: pair[1].strength)
            row.update(classification_json(best.classification))
            row["evidence_log"] = log
            row["classified_by"] = best.worker
            progresses = [a.progress for _, a in answered if a.progress]
            furthest = max(progresses, key=lambda p: (p.epoch, p.step)) if progresses else None
            row["progress"] = furthest.to_dict() if furthest else None
        else:
            row.update({"reason": None, "error": "no log of this attempt could be read"})
        self.handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.handle.flush()
        self.written += 1
        self.reasons[row.get("reason") or "unreadable"] += 1

    def close(self) -> None:
        self.handle.close()


class ProgressLine:
    """A live line on a terminal; a plain line every EVERY seconds otherwise."""

    EVERY = 10.0

    def __init__(self, total: int, stream: Any = sys.stderr, report: Callable[[int, int], None] | None = None) -> None:
        self.total = total
        self.stream = stream
        self.report = report  # the caller shows progress itself: (done, total)
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.started = self.last = time.monotonic()

    def update(self, done: int, force: bool = False) -> None:
        if self.report is not None:
            self.report(done, self.total)
            return
        now = time.monotonic()
        if not force and now - self.last < (0.2 if self.tty else self.EVERY):
            return
        self.last = now
        rate = done / max(now - self.started, 1e-9)
        eta = (self.total - done) / rate if rate else 0
        text = f"{done:,}/{self.total:,} attempts  {rate:,.1f}/s  ETA {eta:,.0f} s"
        self.stream.write(f"\r{text}" if self.tty else f"{text}\n")
        self.stream.flush()


class Executor(Protocol):
    """Where members are classified: submit(fn, *args) returns something with .result()."""

    def submit(self, fn: Any, /, *args: Any) -> Any: ...


def _die_with_parent() -> None:
    """A pool worker asks Linux for SIGTERM when the runner dies, even by SIGKILL (no orphans)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the runner died before the request took effect
            os._exit(1)


@contextmanager
def local_executor(processes: int) -> Iterator[Executor]:
    with ProcessPoolExecutor(max(processes, 1), initializer=_die_with_parent) as pool:
        yield pool


@contextmanager
def dask_executor(scheduler: str) -> Iterator[Executor]:
    """A Dask distributed cluster: its workers classify, this process reads and writes."""
    from distributed import Client

    with Client(scheduler) as client:
        yield client


@dataclass
class BatchRun:
    """One run over ``sources``: which attempts are pending, their members in flight on
    the executor, and their answers gathered into results.jsonl."""

    options: ClassifierOptions
    key_of: Callable[[Member], tuple[str, int]]
    collector: AttemptCollector
    progress: ProgressLine
    summary: Summary
    window: int  # chunks in flight at most
    chunk: list[tuple[bytes, tuple[str, int], str]] = field(default_factory=list)
    in_flight: list[tuple[Any, list[tuple[tuple[str, int], str]]]] = field(default_factory=list)

    def classify(self, pool: Executor, member: Member, stream: Any, key: tuple[str, int]) -> None:
        """Send one member to the executor (a large one is classified here, streaming)."""
        self.summary.members += 1
        try:
            large = (member.size or 0) > LIMITS.batch_in_memory_bytes
            data = b"" if large else read_head(stream, LIMITS.batch_in_memory_bytes + 1)
            if large or len(data) > LIMITS.batch_in_memory_bytes:  # or its size was not known: it streams here
                local = worker_classifier(self.options)
                examined = local.examine_stream(Resumed(data, stream))
                self.collector.add(key, member.name, _answer(local, examined, worker_name()))
                self.summary.bytes += examined.classification.bytes
                return
        except DamagedMember as exc:
            self.summary.problems.append(str(exc))
            self.collector.add(key, member.name, None)
            return
        self.summary.bytes += len(data)
        self.chunk.append((data, key, member.name))
        if len(self.chunk) >= CHUNK_MEMBERS or sum(len(d) for d, _, _ in self.chunk) >= CHUNK_BYTES:
            self.submit(pool)
            self.drain(self.window)

    def submit(self, pool: Executor) -> None:
        """Send the chunk gathered so far as one task."""
        if self.chunk:
            logs = [data for data, _, _ in self.chunk]
            self.in_flight.append((pool.submit(classify_members, logs, self.options), [(k, n) for _, k, n in self.chunk]))
            self.chunk = []

    def drain(self, limit: int) -> None:
        """Collect answers until at most ``limit`` chunks are in flight."""
        while len(self.in_flight) > limit:
            future, members = self.in_flight.pop(0)
            answers: list[MemberAnswer] = future.result()
            for (key, name), answer in zip(members, answers, strict=True):
                self.collector.add(key, name, answer)
            self.progress.update(self.collector.written)


def pending_attempts(
    sources: Sequence[str | Path],
    key_of: Callable[[Member], tuple[str, int]],
    done: set[tuple[str, int]],
    listed: dict[str, tuple[str, int]],
) -> tuple[dict[tuple[str, int], int], int]:
    """Members per attempt still to classify, and how many attempts are done already.
    InputError when a manifest lists logs and the sources hold none of them."""
    expected: dict[tuple[str, int], int] = defaultdict(int)
    listing_errors: list[str] = []
    found = 0
    for source in sources:
        for member, _ in members(source, listing_errors):
            if is_log(member, listed):
                expected[key_of(member)] += 1
                found += member.name in listed
    if listed and not found:
        example = next(iter(listed))
        raise InputError(
            f"the manifest lists {len(listed)} logs and the sources hold none of them (the manifest names logs by "
            f"their path inside a source, e.g. {example!r}); nothing was classified"
        )
    pending = {key: count for key, count in expected.items() if key not in done}
    return pending, len(expected) - len(pending)


def run_batch(
    sources: Sequence[str | Path],
    out: Path,
    processes: int,
    id_pattern: str = DEFAULT_ID_PATTERN,
    manifest_facts: dict[tuple[str, int], Facts] | None = None,
    member_attempts: dict[str, tuple[str, int]] | None = None,
    options: ClassifierOptions | None = None,
    progress_stream: Any = sys.stderr,
    executor: Callable[[], AbstractContextManager[Executor]] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Summary:
    """Classify every attempt of ``sources`` into ``out`` (on ``executor``: by default a
    local pool of ``processes``); resumes what is there. Progress goes to ``on_progress``
    (done, total) when given, else as lines to ``progress_stream``."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(id_pattern)
    owners = member_attempts or {}

    def key_of(member: Member) -> tuple[str, int]:
        return owners[member.name] if member.name in owners else attempt_of(member.name, pattern)

    summary = Summary()
    pending, summary.skipped_done = pending_attempts(sources, key_of, done_attempts(out / RESULTS), owners)
    collector = AttemptCollector(pending, manifest_facts or {}, out)
    progress = ProgressLine(len(pending), progress_stream, on_progress)
    run = BatchRun(options or ClassifierOptions(), key_of, collector, progress, summary, 4 * max(processes, 1))
    with (executor or (lambda: local_executor(processes)))() as pool:
        for source in sources:
            for member, stream in members(source, summary.problems):
                if not is_log(member, owners):
                    summary.not_logs += 1
                elif (key := key_of(member)) in pending:
                    run.classify(pool, member, stream, key)
        run.submit(pool)
        run.drain(0)
    progress.update(collector.written, force=True)
    if progress.tty and progress.report is None:
        progress_stream.write("\n")
    collector.close()
    summary.attempts = collector.written
    summary.reasons = collector.reasons
    summary.seconds = round(time.monotonic() - started, 2)
    return summary


def write_parquet(out: Path) -> Path:
    """results.parquet from results.jsonl (nested fields as JSON text)."""
    import pyarrow as pa
    from pyarrow import parquet

    rows = []
    for line in (out / RESULTS).read_text().splitlines():
        row = json.loads(line)
        rows.append({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()})
    target = out / "results.parquet"
    parquet.write_table(pa.Table.from_pylist(rows), target)
    return target


def manifest_maps(raw_rows: Iterable[Facts]) -> tuple[dict[tuple[str, int], Facts], dict[str, tuple[str, int]]]:
    """Attempt facts per (job, attempt), and which attempt each listed log belongs to."""
    facts: dict[tuple[str, int], Facts] = {}
    owners: dict[str, tuple[str, int]] = {}
    for row in raw_rows:
        key = (str(row["job_id"]), int(row.get("attempt") or 1))
        facts[key] = {k: v for k, v in row.items() if k not in ("logs", "log", "reason")}
        logs = row.get("logs") or row.get("log") or []
        for log in [logs] if isinstance(logs, str) else logs:
            for part in str(log).split(";"):
                if part:
                    owners[part] = key
    return facts, owners
