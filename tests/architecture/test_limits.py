"""The README's Limits table says what failclass/limits.py enforces: every limit has its row
and the row gives its value."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from failclass.hook.remote import SENT_BYTES
from failclass.limits import LIMITS

README = Path(__file__).resolve().parents[2] / "README.md"

ROWS = {  # limit -> the first cell of its README row
    "read_block_bytes": "read block",
    "scanned_line_bytes": "longest line scanned whole",
    "evidence_chars": "evidence text per line",
    "evidence_lines": "evidence lines per answer",
    "model_tail_bytes": "what the model reads",
    "region_lines": "what the model reads",
    "label_bytes": "label copy",
    "stream_log_bytes": "log that is not a regular file (pipe, FIFO, device, standard input)",
    "request_bytes": "HTTP request body",
    "page_rows": "listing page",
    "archive_member_bytes": "archive member (batch)",
    "zip_ratio": "archive member (batch)",
    "batch_in_memory_bytes": "member read in memory (batch)",
    "waste_text_bytes": "waste: a text signal file",
    "waste_jobs_file_bytes": "waste: a jobs file",
    "waste_log_files": "waste: files searched in a `--logs` folder",
    "waste_log_lines": "waste: lines kept from one job's log",
    "waste_line_chars": "waste: lines kept from one job's log",
    "prometheus_points_per_series": "waste: one Prometheus range query (`--prometheus`)",
    "prometheus_series_per_query": "waste: one Prometheus range query (`--prometheus`)",
    "prometheus_window_points": "waste: one time window read from Prometheus",
    "prometheus_queries": "waste: range queries of one report",
    "container_log_lines": "a failed container's log (Kubernetes controller)",
    "container_log_bytes": "a failed container's log (Kubernetes controller)",
    "k8s_explanation_chars": "decision written on a Kubernetes Job / in a Slurm job's comment",
    "slurm_comment_chars": "decision written on a Kubernetes Job / in a Slurm job's comment",
    "int32_min": "integers (exit code, signal, GPUs, attempt, ids)",
    "int32_max": "integers (exit code, signal, GPUs, attempt, ids)",
}


def said(name: str, value: int) -> str:
    """How the README writes a value: sizes in KiB, MiB or GiB, counts with separators."""
    if name.endswith("_bytes"):
        for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
            if value >= 1 << shift and value % (1 << shift) == 0:
                return f"{value >> shift} {unit}"
    if name == "zip_ratio":
        return f"{value}x"
    return f"{value:,}"


def readme_rows() -> dict[str, str]:
    section = README.read_text().split("## Limits", 1)[1].split("\n## ", 1)[0]
    cells = [line.split("|") for line in section.splitlines() if line.startswith("| ")]
    return {row[1].strip(): row[2].strip() for row in cells}


def test_every_limit_has_its_row_with_its_value() -> None:
    rows = readme_rows()
    assert set(ROWS) == {f.name for f in fields(LIMITS)}, "a new limit needs a row in the README and here"
    wrong = [
        f"{name}: {said(name, getattr(LIMITS, name))!r} not in {rows.get(row)!r}"
        for name, row in ROWS.items()
        if said(name, getattr(LIMITS, name)) not in rows.get(row, "")
    ]
    assert not wrong, wrong
    assert said("sent_bytes", SENT_BYTES) in rows["log sent by a hook to a service"]


def test_the_check_reads_sizes_as_the_readme_writes_them() -> None:
    assert (said("x_bytes", 64 << 10), said("x_bytes", 2 << 30), said("waste_log_lines", 200_000)) == (
        "64 KiB",
        "2 GiB",
        "200,000",
    )
