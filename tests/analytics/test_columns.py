"""The report over columns: the figures the object path gave, the same report from JSON
Lines and from Parquet, and a malformed manifest named in one error line."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import run_cli
from goodput_trace import trace, waste_report
from pyarrow import parquet
from report_weeks import write_manifest

from failclass.analytics.analysis import FileSource, analyse
from failclass.analytics.goodput import idle_of_waste_report, rightsizing_of_waste_report
from failclass.analytics.selection import Selection, parse_comparison, parse_selection
from failclass.analytics.simulate import simulate
from failclass.matching.taxonomy import builtin_taxonomy

# `failclass report --format json` of the object path (commit 8a44ac4, before the columns),
# less its scope, over the manifests made below.
BEFORE = json.loads((Path(__file__).with_name("report_before_columns.json")).read_text())
TAXONOMY = builtin_taxonomy()


EVERYTHING = Selection()


def answer(manifest: Path, selection: Selection = EVERYTHING, against: Selection | None = None, **kwargs: Any) -> Any:
    """The report's JSON answer, less its scope."""
    analysis = analyse(FileSource([manifest]), selection, TAXONOMY, against, **kwargs)
    body = json.loads(json.dumps(analysis.to_dict()))
    del body["scope"]
    return body


def test_the_columns_give_the_figures_the_object_path_gave(tmp_path: Path) -> None:
    weeks = write_manifest(tmp_path / "weeks.jsonl")
    assert answer(weeks) == BEFORE["weeks"]
    selection = parse_selection("2026-11-09", "2026-11-16", users=["bob", "ann"])
    assert answer(weeks, selection, parse_comparison("previous", selection)) == BEFORE["weeks_sel"]
    waste = waste_report(tmp_path)  # checkpoints read from the logs, idle time from a waste report
    idle = {"idle": idle_of_waste_report(waste), "rightsizing": rightsizing_of_waste_report(waste)}
    assert answer(trace(tmp_path), **idle) == BEFORE["trace"]
    simulate(0.003, 3, tmp_path / "sim", write_logs=False)  # 362 attempts, 41 reasons and users
    assert answer(tmp_path / "sim" / "attempts.jsonl") == BEFORE["sim1"]


def test_json_lines_and_parquet_of_the_same_attempts_give_the_same_report(tmp_path: Path) -> None:
    manifest = trace(tmp_path)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    for row in rows:  # Parquet's own types: times as timestamps
        row.update({k: datetime.fromisoformat(v) for k, v in row.items() if k.endswith("_time")})
    parquet.write_table(pa.Table.from_pylist(rows), tmp_path / "attempts.parquet")
    from_parquet = answer(tmp_path / "attempts.parquet")
    assert from_parquet == answer(manifest) and from_parquet["failed_attempts"] == 3
    checkpoints = [(u["user"], u["counted_from_checkpoint"], u["without_log"]) for u in from_parquet["goodput"]]
    assert checkpoints == [("bob", 0, 1), ("alice", 1, 0)]  # the logs its rows name were read


def test_a_number_written_as_text_reads_as_the_number(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in write_manifest(tmp_path / "weeks.jsonl").read_text().splitlines()]
    (tmp_path / "text.jsonl").write_text("".join(json.dumps({**r, "gpus": str(r["gpus"])}) + "\n" for r in rows))
    assert answer(tmp_path / "text.jsonl") == BEFORE["weeks"]


GOOD = {"job_id": "j1", "user": "ann", "status": "failed", "start_time": "2026-11-02T09:00:00+00:00"}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ('{"job_id": "x", "user": "u", "status": "failed", "gpus": "four"}', "line 4: bad value (invalid literal for int()"),
        ('{"job_id": "x", "user": "u", "status": "failed", "end_time": "yesterday"}', "line 4: bad value (Invalid isoformat"),
        ('{"job_id": "x", "status": "failed"}', "line 4: missing user"),
        ('{"job_id": "x", "user": "u"', "line 4: not JSON"),
    ],
)
def test_a_malformed_json_lines_manifest_is_one_error_line(tmp_path: Path, bad: str, says: str) -> None:
    manifest = tmp_path / "attempts.jsonl"
    manifest.write_text("".join(json.dumps({**GOOD, "job_id": f"j{n}"}) + "\n" for n in range(3)) + bad + "\n")
    done = run_cli("report", str(manifest))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith(f"error: {manifest}: {says}")


def test_a_malformed_parquet_manifest_names_its_row(tmp_path: Path) -> None:
    rows = [{**GOOD, "gpus": "2"}, {**GOOD, "gpus": "2"}, {**GOOD, "gpus": "many"}]
    parquet.write_table(pa.Table.from_pylist(rows), tmp_path / "attempts.parquet")
    done = run_cli("report", str(tmp_path / "attempts.parquet"))
    assert done.returncode == 1 and done.stderr.strip() == (
        f"error: {tmp_path / 'attempts.parquet'}: row 3: bad value (invalid literal for int() with base 10: 'many')"
    )


def test_names_held_as_codes_code_as_the_text_does() -> None:
    from failclass.analytics.columns import coded

    text = [["b", None, "a"], ["c", "a", None, "b"]]
    plain = pa.chunked_array([pa.array(chunk, pa.string()) for chunk in text])
    names = pa.chunked_array([pa.array(chunk, pa.string()).dictionary_encode() for chunk in text])  # two dictionaries
    filled = pa.chunked_array([pa.array([v or "none" for v in chunk], pa.string()) for chunk in text])
    for column, missing, expected in ((names, None, plain), (names, "none", filled), (names, "a", None)):
        got = coded(column, missing=missing)
        want = coded(expected if expected is not None else pa.chunked_array([[v or "a" for v in chunk] for chunk in text]))
        assert got.names == want.names
        assert got.codes.tolist() == want.codes.tolist()
    assert coded(plain).codes.tolist() == [0, -1, 1, 2, 1, -1, 0]
