"""The results folder: results.jsonl, one complete line per attempt, and the
results.parquet made from it."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = "results.jsonl"


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
