"""Manifests read in parts: every byte of a JSON Lines file and every row group of a Parquet
one in one part, and the report the same, byte for byte, whether one process reads them, a
local process pool or the workers of a real Dask cluster (LocalCluster of two worker
processes); a part that does not convert sends its manifest back to be read as one process
reads it."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from goodput_trace import trace
from pyarrow import parquet

from failclass.analytics import PART_BYTES
from failclass.analytics.analysis import FileSource, analyse
from failclass.analytics.parts import Part, group_spans, line_spans, parts, read_in_parts, read_part
from failclass.analytics.records import read_attempts
from failclass.analytics.render import to_json, to_markdown
from failclass.analytics.selection import Selection, parse_comparison, parse_selection
from failclass.analytics.simulate import simulate
from failclass.errors import InputError
from failclass.executors import Executor, local_executor
from failclass.matching.taxonomy import builtin_taxonomy

NOW = datetime(2026, 11, 20, tzinfo=UTC)
SMALL_PARTS = 16_000


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A simulated trace cut in two (jobs straddle the cut): JSON Lines, then Parquet in row
    groups of 200 attempts; and a trace whose logs hold checkpoints."""
    folder = tmp_path_factory.mktemp("parts")
    simulate(0.02, 5, folder / "sim", write_logs=False)
    lines = (folder / "sim" / "attempts.jsonl").read_text().splitlines(keepends=True)
    half = len(lines) // 2
    (folder / "first.jsonl").write_text("".join(lines[:half]))
    parquet.write_table(
        read_attempts([folder / "sim" / "attempts.jsonl"]).slice(half), folder / "second.parquet", row_group_size=200
    )
    return [folder / "first.jsonl", folder / "second.parquet", trace(folder)]


def _reports(paths: list[Path], executor: Executor | None, part_bytes: int = SMALL_PARTS) -> tuple[str, str]:
    """The Markdown and the JSON report, over all attempts and compared with another period."""
    selection = parse_selection("2017-10-10", "2017-11-15")
    source = FileSource(paths, executor, part_bytes)
    whole = analyse(source, Selection(), builtin_taxonomy(), now=NOW)
    compared = analyse(source, selection, builtin_taxonomy(), parse_comparison("previous", selection, NOW), now=NOW)
    return to_markdown(whole) + to_markdown(compared), to_json(whole) + to_json(compared)


@pytest.mark.parametrize("part_bytes", [1, 50, 999, 16_000, 10**9])
def test_every_line_is_in_one_part(manifests: list[Path], part_bytes: int) -> None:
    data = manifests[0].read_bytes()
    spans = line_spans(manifests[0], part_bytes)
    assert [start for start, _ in spans[1:]] == [stop for _, stop in spans[:-1]]  # no gap, no overlap
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(data[stop - 1 : stop] == b"\n" for _, stop in spans)
    if part_bytes == 1:
        assert len(spans) == data.count(b"\n")  # a line each
    assert (len(spans) == 1) == (part_bytes >= len(data))


def test_a_part_names_its_manifest_wherever_a_worker_runs(manifests: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(manifests[0].parent)
    cut = parts(Path(manifests[0].name), SMALL_PARTS)
    assert len(cut) > 1 and all(part.path.is_absolute() and part.path.resolve() == manifests[0].resolve() for part in cut)


def test_every_row_group_is_in_one_part(manifests: list[Path]) -> None:
    groups = parquet.ParquetFile(manifests[1]).metadata.num_row_groups
    assert group_spans(manifests[1], 1) == [(group, group + 1) for group in range(groups)]
    assert group_spans(manifests[1], 10**9) == [(0, groups)]
    spans = group_spans(manifests[1], SMALL_PARTS)
    assert 1 < len(spans) < groups and spans[0][0] == 0 and spans[-1][1] == groups


def test_the_parts_make_the_table_one_process_reads(manifests: list[Path]) -> None:
    assert all(parts(path, PART_BYTES) == [Part(path)] for path in manifests)  # small: read whole by default
    cut = [part for path in manifests for part in parts(path, SMALL_PARTS)]
    assert sum(part.span is not None for part in cut) > 10 and cut[-1].span is None  # the small trace: one part
    with local_executor(2) as pool:
        pooled = read_in_parts(manifests, pool, SMALL_PARTS)
    assert pooled.to_pylist() == read_attempts(manifests).to_pylist()


def test_a_local_process_pool_gives_the_report_of_one_process(manifests: list[Path]) -> None:
    alone = _reports(manifests, None)
    with local_executor(2) as pool:
        assert _reports(manifests, pool) == alone
    assert '"attempts": ' in alone[1] and "Table 7" in alone[0]


def test_a_part_that_does_not_convert_reads_its_manifest_as_one_process(tmp_path: Path, manifests: list[Path]) -> None:
    lines = manifests[0].read_text().splitlines(keepends=True)
    odd = json.loads(lines[-3])
    (tmp_path / "odd.jsonl").write_text("".join([*lines[:-3], json.dumps({**odd, "gpus": str(odd["gpus"])}) + "\n"]))
    assert read_part(parts(tmp_path / "odd.jsonl", SMALL_PARTS)[-1]) is None  # a number as text: row by row
    with local_executor(2) as pool:
        assert _reports([tmp_path / "odd.jsonl"], pool) == _reports([tmp_path / "odd.jsonl"], None)
        (tmp_path / "bad.jsonl").write_text("".join([*lines[:-3], "{not json\n", *lines[-2:]]))
        with pytest.raises(InputError) as pooled:
            read_in_parts([tmp_path / "bad.jsonl"], pool, SMALL_PARTS)
    with pytest.raises(InputError) as alone:
        read_attempts([tmp_path / "bad.jsonl"])
    assert str(pooled.value) == str(alone.value) and f"bad.jsonl: line {len(lines) - 2}: not JSON" in str(alone.value)


def _cli(paths: list[Path], *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "failclass", "report", *map(str, paths), "--part-bytes", str(SMALL_PARTS), *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def _undated(answer: subprocess.CompletedProcess[str], fmt: str) -> object:
    """A report less the time it was made."""
    assert answer.returncode == 0, answer.stderr
    if fmt == "json":
        body = json.loads(answer.stdout)
        return {**body, "scope": {**body["scope"], "generated": None}}
    return [line for line in answer.stdout.splitlines() if not line.startswith("Generated ")]


def test_a_dask_cluster_reads_the_parts_and_gives_the_local_report(manifests: list[Path]) -> None:
    from distributed import Client, LocalCluster, get_task_stream

    alone = _reports(manifests, None)
    local = {fmt: _cli(manifests, "--format", fmt, "--processes", "1") for fmt in ("markdown", "json")}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = {
            fmt: _cli(manifests, "--format", fmt, "--executor", "dask", "--scheduler", cluster.scheduler_address) for fmt in local
        }
        with Client(cluster) as client, get_task_stream(client) as stream:
            on_dask = _reports(manifests, client)
        workers = set(cluster.scheduler_info["workers"])
    assert on_dask == alone
    assert all(_undated(remote[fmt], fmt) == _undated(local[fmt], fmt) for fmt in local)
    tasks = [task for task in stream.data if task["key"].startswith("read_part")]
    assert len(tasks) == sum(len(parts(path, SMALL_PARTS)) for path in manifests) > 10
    assert {task["worker"] for task in tasks} <= workers


def test_dask_without_a_scheduler_is_a_usage_error(manifests: list[Path]) -> None:
    answer = _cli(manifests, "--executor", "dask")
    assert answer.returncode == 2 and "--executor dask needs --scheduler ADDRESS" in answer.stderr
