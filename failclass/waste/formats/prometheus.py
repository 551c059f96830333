"""DCGM exporter metrics as Prometheus prints them: the text exposition of one scrape
(``curl host:9400/metrics``) and the JSON of an HTTP API range query (``/api/v1/query_range``,
``resultType: matrix``).

DCGM_FI_DEV_GPU_UTIL gives utilisation in percent, DCGM_FI_DEV_FB_USED, _FREE and
_RESERVED the framebuffer in MiB (the total is their sum; without _FREE it comes from the
``modelName`` label through the GPU model table); where the utilisation field is absent the profiling field
DCGM_FI_PROF_GR_ENGINE_ACTIVE (a ratio) stands in. The node comes from the ``Hostname``
label (else ``instance``), the job from ``hpc_job`` (Slurm job mapping) or
``namespace/pod`` (Kubernetes pod mapping).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from failclass.errors import InputError
from failclass.waste.memory import from_model
from failclass.waste.samples import GpuSamples, TotalOrigin, concat

UTIL, FB_USED, FB_FREE, FB_RESERVED, GR_ACTIVE = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
)
METRICS = (UTIL, FB_USED, FB_FREE, FB_RESERVED, GR_ACTIVE)

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(frozen=True)
class Reading:
    node: str
    gpu: int
    job: str
    ts: float
    metric: str
    value: float
    model: str = ""  # the modelName label


def read_exposition(text: str, source: str, scraped_at: float) -> GpuSamples:
    """One scrape; samples without their own timestamp (the exporter's usual) take ``scraped_at``."""
    return _pivot(_exposition_readings(text, source, scraped_at), source)


def read_range_query(text: str, source: str) -> GpuSamples:
    """A Prometheus API answer, or a JSON list of them (one per metric)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not JSON: {exc}") from exc
    return read_answers(document if isinstance(document, list) else [document], source)


def read_answers(answers: list[object], source: str, empty: bool = False) -> GpuSamples:
    """Already-parsed Prometheus API answers (one per metric, or one for several); ``empty``:
    an answer without utilisation readings is an empty table (a chunk of a longer range)."""
    return _pivot((r for answer in answers for r in _matrix_readings(answer, source)), source, empty)


def _exposition_readings(text: str, source: str, scraped_at: float) -> Iterator[Reading]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            raise InputError(f"{source}:{number}: not a Prometheus sample line: {line[:120]!r}")
        name, labels, value, stamp = match.groups()
        if name not in METRICS:
            continue
        ts = int(stamp) / 1000 if stamp else scraped_at
        yield _reading(name, _labels(labels or "", source, number), ts, value, f"{source}:{number}")


def _matrix_readings(answer: object, source: str) -> Iterator[Reading]:
    if not isinstance(answer, dict) or answer.get("status") != "success":
        raise InputError(f"{source}: not a successful Prometheus API answer (status {_get(answer, 'status')!r})")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") not in ("matrix", "vector"):
        raise InputError(f"{source}: resultType {_get(data, 'resultType')!r}; expected a range query's matrix")
    for series in data.get("result") or []:
        labels = series.get("metric") or {}
        name = labels.get("__name__", "")
        if name not in METRICS:
            continue
        points = series.get("values") or ([series["value"]] if "value" in series else [])
        for point in points:
            if not (isinstance(point, list) and len(point) == 2):
                raise InputError(f"{source}: {name}: a point is not [time, value]: {str(point)[:80]}")
            yield _reading(name, labels, float(point[0]), point[1], source)


def _reading(name: str, labels: dict[str, str], ts: float, value: str, where: str) -> Reading:
    node = labels.get("Hostname") or labels.get("instance") or labels.get("node") or ""
    if not node or "gpu" not in labels:
        raise InputError(f"{where}: {name} has no Hostname/instance or gpu label; cannot tell which GPU it is")
    try:
        gpu, number = int(labels["gpu"]), float(value)
    except ValueError as exc:
        raise InputError(f"{where}: {name}: not a number: {exc}") from exc
    job = labels.get("hpc_job") or _pod(labels)
    return Reading(node, gpu, job, ts, name, number, labels.get("modelName", ""))


def _pod(labels: dict[str, str]) -> str:
    """``namespace/pod`` of the workload: a Prometheus that scraped the exporter keeps its own
    ``namespace``/``pod`` labels and renames the workload's ``exported_namespace``/``exported_pod``."""
    for prefix in ("exported_", ""):
        if labels.get(f"{prefix}pod") and "dcgm-exporter" not in labels[f"{prefix}pod"]:  # not the exporter itself
            return f"{labels.get(f'{prefix}namespace', '')}/{labels[f'{prefix}pod']}"
    return ""


def _labels(text: str, source: str, number: int) -> dict[str, str]:
    labels, position = {}, 0
    while position < len(text):
        match = _LABEL.match(text, position)
        if not match:
            raise InputError(f"{source}:{number}: unreadable labels near {text[position : position + 40]!r}")
        labels[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
        position = match.end()
    return labels


def _pivot(readings: Iterable[Reading], source: str, empty: bool = False) -> GpuSamples:
    """Long readings (one metric each) to one row per GPU and time."""
    rows: dict[tuple[str, int, str, float], dict[str, float]] = {}
    models: dict[tuple[str, int], str] = {}
    for r in readings:
        rows.setdefault((r.node, r.gpu, r.job, r.ts), {})[r.metric] = r.value
        if r.model:
            models[(r.node, r.gpu)] = r.model
    table: list[tuple[str, int, float, float, float, float, str]] = []
    seen: dict[tuple[str, int], set[str]] = {}
    for (node, gpu, job, ts), values in rows.items():
        util = values.get(UTIL, values[GR_ACTIVE] * 100 if GR_ACTIVE in values else math.nan)
        if math.isnan(util):
            continue  # memory without utilisation says nothing about use
        seen.setdefault((node, gpu), set()).update(values)
        used = values.get(FB_USED, math.nan)
        table.append((node, gpu, ts, util, used, used + values.get(FB_FREE, math.nan) + values.get(FB_RESERVED, 0.0), job))
    if not table and empty:
        return concat([])
    if not table:
        raise InputError(f"{source}: no {UTIL} (or {GR_ACTIVE}) samples with Hostname and gpu labels")
    totals, by_model = {}, {}
    for key, metrics in seen.items():
        totals[key], by_model[key] = _total_origin(metrics, models.get(key, ""))
    filled = ((*row[:5], by_model[row[:2]], row[6]) if math.isnan(row[5]) else row for row in table)
    return GpuSamples.from_rows(filled, source, totals, models)


def _total_origin(metrics: set[str], model: str) -> tuple[TotalOrigin, float]:
    """Where one GPU's total comes from, and the model table's total where that is the source."""
    if FB_USED in metrics and FB_FREE in metrics:
        return TotalOrigin(True, "DCGM FB_USED + FB_FREE" + (" + FB_RESERVED" if FB_RESERVED in metrics else "")), math.nan
    missing = f"{FB_USED} without {FB_FREE}" if FB_USED in metrics else f"no {FB_USED} or {FB_FREE} series"
    mib, origin = from_model(model, missing, "modelName label")
    return origin, mib


def _get(value: object, key: str) -> object:
    return value.get(key) if isinstance(value, dict) else type(value).__name__
