"""What launchers say of the ranks they started: torchrun's failure table with its "Root
Cause (first observed failure)" (each agent prints one for its node), mpirun's "The first
process to do so was" (tests/data/ranks/) and "mpirun noticed that process rank N ...
exited on signal S" (the process whose end aborted the job), srun's ``srun: error: NODE: task N: Exited with
exit code C`` (a real Slurm, tests/data/ranks/srun_label.out), whose first line of a task
that ended of itself names the first to fail."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from failclass.logs.ranks import RankLine, Stream, time_of

_ROOT_CAUSE = "Root Cause (first observed failure):"
_ENTRY = re.compile(r"^\s*\[\d+\]:\s*$")
_FIELD = re.compile(r"^\s+(time|host|rank|exitcode|error_file)\s*: (.*)$")
_MPI_FIRST = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\]")
_RULE = re.compile(r"^={20,}\s*$")
_SRUN_ERROR = re.compile(r"^srun: error: (\S+): tasks? ([\d,-]+): (.*)$")
_MPI_NOTICED = re.compile(
    r"(?:mpirun|mpiexec|prterun) noticed that process rank (\d+) with PID \d+ on node (\S+) "
    r"exited on (signal \d+ \([^)]*\)|non-zero status \d+)"
)


@dataclass(frozen=True)
class LauncherReport:
    """A launcher's word on one rank: from torchrun's failure table (``root``: its Root
    Cause entry), mpirun's first failed process, or srun's error lines."""

    rank: int
    host: str | None = None
    time: float | None = None
    root: bool = False
    exit_code: str = ""
    line: RankLine | None = None
    by: str = ""
    text: str = ""  # what the launcher printed of it (torchrun's table entry)


def outside_tables(lines: list[RankLine]) -> list[RankLine]:
    """The lines without torchrun's failure tables (from the ``=====`` line before
    ``<script> FAILED`` to the next ``=====``): they repeat what the ranks printed."""
    kept: list[RankLine] = []
    index = 0
    while index < len(lines):
        text = lines[index].text
        if _RULE.match(text) and index + 1 < len(lines) and lines[index + 1].text.rstrip().endswith(" FAILED"):
            end = next((i for i in range(index + 2, len(lines)) if _RULE.match(lines[i].text)), len(lines) - 1)
            index = end + 1
            continue
        kept.append(lines[index])
        index += 1
    return kept


def launcher_only(stream: Stream) -> bool:
    """A stream that is a launcher's own report (torchrun's agent, mpirun, srun): no rank's."""
    return any(_ROOT_CAUSE in line.text or _MPI_FIRST.search(line.text) for line in stream.lines)


def reports(lines: Iterable[RankLine]) -> list[LauncherReport]:
    """What launchers said of ranks: torchrun's failure table (Root Cause first), mpirun's
    first failed process, srun's errors (a task and its node; rank = task)."""
    found: list[LauncherReport] = []
    entry: dict[str, str] = {}
    entry_lines: list[RankLine] = []
    root = False
    expect_mpi = False
    srun_first_seen = False  # srun's first line of a task that ended of itself: the first to fail

    def close() -> None:
        if "rank" in entry and (m := re.match(r"\d+", entry["rank"])):
            host = entry.get("host")
            when = time_of(entry.get("time", ""))
            exit_code = entry.get("exitcode", "")
            text = "\n".join(line.text for line in entry_lines)
            found.append(LauncherReport(int(m.group()), host, when, root, exit_code, entry_lines[0], "torchrun", text))
        entry.clear()
        entry_lines.clear()

    for line in lines:
        text = line.text
        if text.strip() == _ROOT_CAUSE:
            close()
            root = True
        elif text.strip() == "Failures:":
            close()
            root = False
        elif _ENTRY.match(text):
            close()
            entry_lines.append(line)
        elif entry_lines and not text.startswith("---"):
            entry_lines.append(line)
            if m := _FIELD.match(text):
                entry[m.group(1)] = m.group(2).strip()
        elif text.startswith("====="):
            close()
            root = False
        if "The first process to do so was" in text:
            expect_mpi = True
        elif expect_mpi and (m := _MPI_FIRST.search(text)):
            found.append(LauncherReport(int(m.group(1)), None, None, True, "", line, "mpirun"))
            expect_mpi = False
        if (m := _MPI_NOTICED.search(text)) is not None:  # the process whose end aborted the job
            found.append(LauncherReport(int(m.group(1)), m.group(2), None, True, m.group(3), line, "mpirun"))
        if (m := _SRUN_ERROR.match(text)) is not None:
            exit_code = m.group(3)
            first = not srun_first_seen and _failed_of_itself(exit_code)
            srun_first_seen = srun_first_seen or first
            for task in _task_list(m.group(2)):
                found.append(LauncherReport(task, m.group(1), line.time, first, exit_code, line, "srun"))
    close()
    return found


def _failed_of_itself(status: str) -> bool:
    """srun's word for a task that ended of itself (``Exited with exit code 1``,
    ``Segmentation fault``, ``Killed``, ``Aborted``), not one srun terminated after another
    task failed (``Terminated``, under ``--kill-on-bad-exit``) nor one that succeeded: the
    first such line names the task that failed first, as srun saw them end."""
    return status.strip() not in ("Terminated", "Exited with exit code 0")


def _task_list(text: str) -> list[int]:
    """srun's task list: ``1,3-5`` -> [1, 3, 4, 5]."""
    tasks: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if low.isdigit():
            tasks.extend(range(int(low), int(high or low) + 1))
    return tasks
