"""Public cluster traces as job records: the DIR-LAB slices of the Philly and Helios
traces in ../shared/data/traces (columns u_id, user, gpu_num, cpu_num, node_num,
interval, run_time, wall_time, new_status; one row per job, in submission order).

They carry a final status per job (Pass / Killed / Failed) and no failure reasons:
enough for Table 6 and for repetition per user, not for Table 7.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from failclass.errors import InputError

STATUSES = {"Pass": "passed", "Killed": "killed", "Failed": "unsuccessful"}
COLUMNS = ("u_id", "user", "gpu_num", "node_num", "interval", "run_time", "new_status")


@dataclass(frozen=True)
class TraceJob:
    job_id: str
    user: str
    gpus: int
    nodes: int
    submit_seconds: int  # since the slice's first submission
    run_seconds: int
    status: str  # passed, killed, unsuccessful

    @property
    def gpu_seconds(self) -> int:
        return self.gpus * self.run_seconds


def load_trace(path: Path) -> list[TraceJob]:
    """Read a DIR-LAB trace slice; InputError names the row of any bad value."""
    try:
        handle = path.open(newline="")
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc}") from None
    jobs = []
    clock = 0
    with handle:
        reader = csv.DictReader(handle)
        missing = set(COLUMNS) - set(reader.fieldnames or ())
        if missing:
            raise InputError(f"{path}: not a DIR-LAB trace slice: missing columns {sorted(missing)}")
        for number, row in enumerate(reader, start=2):
            try:
                clock += int(row["interval"])
                jobs.append(
                    TraceJob(
                        job_id=row["u_id"],
                        user=row["user"],
                        gpus=int(row["gpu_num"]),
                        nodes=int(row["node_num"]),
                        submit_seconds=clock,
                        run_seconds=int(row["run_time"]),
                        status=STATUSES[row["new_status"]],
                    )
                )
            except (KeyError, ValueError) as exc:
                raise InputError(f"{path}: line {number}: bad value ({exc})") from None
    return jobs
