"""`failclass batch`: classify every attempt in directories and archives of logs, in
parallel, resumably, into one row per attempt (JSON Lines, then Parquet).

The run: which attempts are pending (resume), their logs (failclass.batch.ids says whose)
sent in chunks to an executor's workers, their answers gathered per attempt (collect)
into results.jsonl. The logs of one attempt (stdout, stderr, one per rank) are
classified together: the strongest answer speaks for the attempt.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failclass.batch.collect import AttemptCollector
from failclass.batch.ids import DEFAULT_ID_PATTERN, Facts, Key, attempt_of, is_log
from failclass.batch.output import RESULTS
from failclass.batch.resume import done_attempts, pending_attempts
from failclass.batch.workers import MemberAnswer, answer_of, classify_members, worker_classifier, worker_name
from failclass.errors import DamagedMember
from failclass.executors import Executor, local_executor
from failclass.limits import LIMITS
from failclass.logs.archives import Member, members
from failclass.logs.text import Resumed, read_head
from failclass.options import ClassifierOptions

CHUNK_MEMBERS = 64  # members per task: a task's overhead is paid once per chunk
CHUNK_BYTES = 16 << 20  # and a chunk stays small enough to ship
OnProgress = Callable[[int, int], None]  # (attempts written, attempts pending at the start)


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


@dataclass
class BatchRun:
    """One run over ``sources``: which attempts are pending, their members in flight on
    the executor, and their answers gathered into results.jsonl."""

    options: ClassifierOptions
    collector: AttemptCollector
    on_progress: OnProgress | None
    summary: Summary
    window: int  # chunks in flight at most
    chunk: list[tuple[bytes, Key, str]] = field(default_factory=list)
    in_flight: list[tuple[Any, list[tuple[Key, str]]]] = field(default_factory=list)

    def classify(self, pool: Executor, member: Member, stream: Any, key: Key) -> None:
        """Send one member to the executor (a large one is classified here, streaming)."""
        self.summary.members += 1
        try:
            large = (member.size or 0) > LIMITS.batch_in_memory_bytes
            data = b"" if large else read_head(stream, LIMITS.batch_in_memory_bytes + 1)
            if large or len(data) > LIMITS.batch_in_memory_bytes:  # or its size was not known: it streams here
                local = worker_classifier(self.options)
                examined = local.examine_stream(Resumed(data, stream))
                self.collector.add(key, member.name, answer_of(local, examined, worker_name()))
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
            self.report()

    def report(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.collector.written, len(self.collector.expected))


def run_batch(
    sources: Sequence[str | Path],
    out: Path,
    processes: int,
    id_pattern: str = DEFAULT_ID_PATTERN,
    manifest_facts: dict[Key, Facts] | None = None,
    member_attempts: dict[str, Key] | None = None,
    options: ClassifierOptions | None = None,
    executor: Callable[[], AbstractContextManager[Executor]] | None = None,
    on_progress: OnProgress | None = None,
) -> Summary:
    """Classify every attempt of ``sources`` into ``out`` (on ``executor``: by default a
    local pool of ``processes``); resumes what is there. ``on_progress`` hears (attempts
    written, attempts pending) as answers come in and once at the end."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(id_pattern)
    owners = member_attempts or {}

    def key_of(member: Member) -> Key:
        return owners[member.name] if member.name in owners else attempt_of(member.name, pattern)

    summary = Summary()
    pending, summary.skipped_done = pending_attempts(sources, key_of, done_attempts(out / RESULTS), owners)
    collector = AttemptCollector(pending, manifest_facts or {}, out)
    run = BatchRun(options or ClassifierOptions(), collector, on_progress, summary, 4 * max(processes, 1))
    with (executor or (lambda: local_executor(processes)))() as pool:
        for source in sources:
            for member, stream in members(source, summary.problems):
                if not is_log(member, owners):
                    summary.not_logs += 1
                elif (key := key_of(member)) in pending:
                    run.classify(pool, member, stream, key)
        run.submit(pool)
        run.drain(0)
    run.report()
    collector.close()
    summary.attempts = collector.written
    summary.reasons = collector.reasons
    summary.seconds = round(time.monotonic() - started, 2)
    return summary
