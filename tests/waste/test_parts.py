"""A Parquet table measured in parts: every reading is read once, every job whole in one
part, and the report is the same whether the parts are measured here, in a local process
pool or by the workers of a real Dask cluster (LocalCluster of two worker processes)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from failclass.executors import local_executor, run_all
from failclass.waste.analyse import WasteOptions, analyse
from failclass.waste.formats.parquet import parts, read_part, write_parquet
from failclass.waste.generate import TraceSpec, write_trace
from failclass.waste.report import to_json
from failclass.waste.samples import GpuSamples


def _table(path: Path, jobs: list[tuple[str, int]], group_rows: int) -> None:
    """Rows of the jobs in turn (``""``: readings of no job), written in groups of ``group_rows``."""
    rows = []
    for name, count in jobs:
        rows += [("n1", 0, 1_700_000_000.0 + 15 * i, float(i % 100), 100.0, 80_000.0, name) for i in range(count)]
    samples = GpuSamples.from_rows(rows, "test")
    writer = None
    for start in range(0, len(samples), group_rows):
        writer = write_parquet(samples.take(np.arange(start, min(start + group_rows, len(samples)))), path, writer)
    assert writer is not None
    writer.close()


@pytest.mark.parametrize("part_rows", [1, 7, 10, 30, 1000])
def test_every_reading_is_in_one_part_and_every_job_whole(tmp_path: Path, part_rows: int) -> None:
    # b spans five row groups of 7, c fits in one, e begins in the last group; "" is no job's
    jobs = [("a", 9), ("b", 33), ("c", 3), ("", 4), ("d", 12), ("e", 6)]
    _table(tmp_path / "t.parquet", jobs, group_rows=7)
    found = [read_part(part) for part in parts(tmp_path / "t.parquet", part_rows)]
    assert sum(part.rows for part in parts(tmp_path / "t.parquet", part_rows)) == 67
    counts: dict[str, list[int]] = {}
    for samples in found:
        names, per = np.unique(np.asarray(samples.jobs)[samples.job], return_counts=True)
        for name, count in zip(names.tolist(), per.tolist(), strict=True):
            counts.setdefault(name, []).append(count)
    assert {name: sum(c) for name, c in counts.items()} == dict(jobs)  # every reading once
    assert all(len(c) == 1 for name, c in counts.items() if name), counts  # a job in one part
    ts = np.concatenate([samples.ts for samples in found])
    assert np.all(np.diff(ts[ts > 0]) != 0)


def test_a_part_inside_one_long_job_follows_nothing(tmp_path: Path) -> None:
    _table(tmp_path / "t.parquet", [("long", 40), ("next", 5)], group_rows=5)
    found = [read_part(part) for part in parts(tmp_path / "t.parquet", 10)]
    assert [len(samples) for samples in found] == [40, 0, 0, 0, 5]


@pytest.fixture(scope="module")
def cut_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated trace rewritten in row groups of 3,000 readings, so jobs straddle groups."""
    folder = tmp_path_factory.mktemp("cut")
    write_trace(TraceSpec(jobs=60, seed=3), folder)
    table = pq.read_table(folder / "samples.parquet")
    pq.write_table(table, folder / "cut.parquet", row_group_size=3_000)
    assert pq.ParquetFile(folder / "cut.parquet").metadata.num_row_groups > 20
    return folder


def _report(folder: Path, **options: object) -> dict[str, object]:
    settings = WasteOptions(jobs_file=folder / "jobs.csv", time_limit_s=8 * 3600, part_rows=int(options.pop("part_rows")))  # type: ignore[call-overload]
    return json.loads(to_json(analyse([folder / "cut.parquet"], settings, **options)))  # type: ignore[arg-type]


def test_parts_on_a_process_pool_give_the_report_of_one_pass(cut_trace: Path) -> None:
    whole = _report(cut_trace, part_rows=10**9)
    with local_executor(2) as pool:
        pooled = _report(cut_trace, part_rows=20_000, executor=pool)
    assert whole["headline"]["jobs"] == 60  # type: ignore[index]
    assert len(whole["intervals"]) > 100  # type: ignore[arg-type]
    assert pooled == whole


def test_a_dask_cluster_measures_the_parts_and_gives_the_local_report(cut_trace: Path) -> None:
    from distributed import Client, LocalCluster, get_task_stream

    command = [sys.executable, "-m", "failclass", "waste", "report", str(cut_trace / "cut.parquet"), "--part-readings", "20000"]
    command += ["--jobs", str(cut_trace / "jobs.csv"), "--time-limit", "8", "--format", "json"]
    local = subprocess.run([*command, "--processes", "1"], capture_output=True, text=True, timeout=300)
    assert local.returncode == 0, local.stderr
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = subprocess.run(
            [*command, "--executor", "dask", "--scheduler", cluster.scheduler_address],
            capture_output=True,
            text=True,
            timeout=300,
        )
        with Client(cluster) as client, get_task_stream(client) as stream:
            in_process = _report(cut_trace, part_rows=20_000, executor=client)
        workers = set(cluster.scheduler_info["workers"])
    assert remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout) == in_process
    tasks = [task for task in stream.data if task["key"].startswith("measure_part")]
    assert len(tasks) == len(parts(cut_trace / "cut.parquet", 20_000)) > 1
    assert {task["worker"] for task in tasks} <= workers


def test_dask_without_a_scheduler_is_a_usage_error(cut_trace: Path) -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "failclass", "waste", "report", str(cut_trace / "cut.parquet"), "--executor", "dask"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answer.returncode == 2 and "--executor dask needs --scheduler ADDRESS" in answer.stderr


def _late_square(number: int) -> int:
    time.sleep(0.05 * (3 - number))  # the first task ends last
    return number * number


def test_results_come_back_in_the_tasks_order_however_they_finish() -> None:
    with local_executor(2) as pool:
        assert run_all(pool, _late_square, [(n,) for n in range(4)]) == [0, 1, 4, 9]
