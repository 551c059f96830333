"""``nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total
--format=csv -l N`` logs of one node (with or without ``,nounits``).

The header names the columns, so any order and extra fields are fine; ``timestamp`` and
``utilization.gpu`` are required. The GPU is ``index``, else the order in which each
``pci.bus_id`` or ``uuid`` first appears, else 0 (a one-GPU log). nvidia-smi prints local time without a
zone: it is read as UTC. ``[N/A]`` and ``[Not Supported]`` become NaN. The memory total is
``memory.total``, else ``memory.used`` + ``memory.free``, else the GPU model table's total
for the ``name`` column.
"""

from __future__ import annotations

import csv
import io
import math
from datetime import UTC, datetime

from failclass.errors import InputError
from failclass.waste.memory import from_model
from failclass.waste.samples import GpuSamples, TotalOrigin

REQUIRED = ("timestamp", "utilization.gpu")
IDENTITIES = ("pci.bus_id", "uuid")


def read_nvidia_smi(text: str, source: str, node: str) -> GpuSamples:
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    header = next(reader, None)
    if header is None:
        raise InputError(f"{source}: empty nvidia-smi log")
    names = [cell.split(" [")[0].strip() for cell in header]
    missing = [name for name in REQUIRED if name not in names]
    if missing:
        raise InputError(
            f"{source}: the first line is not an nvidia-smi CSV header with {', '.join(REQUIRED)} "
            f"(missing {', '.join(missing)}); record with --format=csv, not noheader"
        )
    column = {name: names.index(name) for name in names}
    identity = next((column[name] for name in IDENTITIES if name in column), None)
    seen: dict[str, int] = {}
    rows = []
    models: dict[int, str] = {}
    for number, cells in enumerate(reader, 2):
        if not cells or cells == header:
            continue
        if len(cells) != len(names):
            raise InputError(f"{source}:{number}: {len(cells)} fields, the header has {len(names)}")
        try:
            ts = _time(cells[column["timestamp"]])
            if "index" in column:
                gpu = int(cells[column["index"]])
            else:
                gpu = seen.setdefault(cells[identity], len(seen)) if identity is not None else 0
            if "name" in column:
                models[gpu] = cells[column["name"]].strip()
            used = _number(cells, column.get("memory.used"))
            total = _number(cells, column.get("memory.total"))
            if math.isnan(total) and "memory.free" in column:
                total = used + _number(cells, column["memory.free"])
            util = _number(cells, column["utilization.gpu"])
        except ValueError as exc:
            raise InputError(f"{source}:{number}: {exc}") from exc
        rows.append((node, gpu, ts, util, used, total, ""))
    if not rows:
        raise InputError(f"{source}: an nvidia-smi header but no readings")
    totals = {}
    for gpu in sorted({row[1] for row in rows}):
        mib, totals[(node, gpu)] = _total_origin(column, models.get(gpu, ""))
        if not math.isnan(mib):
            rows = [(*row[:5], mib, row[6]) if row[1] == gpu and math.isnan(row[5]) else row for row in rows]
    return GpuSamples.from_rows(rows, source, totals, {(node, gpu): model for gpu, model in models.items() if model})


def _total_origin(column: dict[str, int], model: str) -> tuple[float, TotalOrigin]:
    if "memory.total" in column:
        return math.nan, TotalOrigin(True, "nvidia-smi memory.total")
    if "memory.used" in column and "memory.free" in column:
        return math.nan, TotalOrigin(True, "nvidia-smi memory.used + memory.free")
    return from_model(model, "an nvidia-smi log without memory.total or memory.free", "name column")


def _time(cell: str) -> float:
    for layout in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(cell.strip(), layout).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    raise ValueError(f"timestamp {cell[:40]!r} is not nvidia-smi's YYYY/MM/DD HH:MM:SS.mmm")


def _number(cells: list[str], index: int | None) -> float:
    if index is None:
        return math.nan
    value = cells[index].strip().split(" ")[0]
    if value.startswith("[") or not value:
        return math.nan
    try:
        return float(value)
    except ValueError as exc:
        raise ValueError(f"{value[:40]!r} is not a number") from exc
