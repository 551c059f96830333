"""Each GPU's memory total, which the memory figures need (stable phases: memory free
against the total; the causes judged on peak memory against the total).

The readings give it where they can: nvidia-smi's ``memory.total`` (or ``memory.used`` +
``memory.free``), DCGM's ``FB_USED`` + ``FB_FREE`` (+ ``FB_RESERVED``). Else the model
the GPU reports (DCGM's ``modelName``, nvidia-smi's ``name``) finds it in a table of GPU
models (``failclass/data/waste/gpu_models.yaml``, each row with its source); else the
operator's ``--gpu-memory-mib``. A GPU with none keeps NaN, and the report says which
GPUs lack it and why."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from failclass.resources import PACKAGE_DATA
from failclass.schema import Invalid, allowed, load
from failclass.waste.samples import GpuSamples, TotalOrigin

GPU_MODELS = PACKAGE_DATA / "waste" / "gpu_models.yaml"
MIB_PER_GB = 1024
OPTION = "--gpu-memory-mib"
FIGURES = "stable phases, and the causes judged on peak memory against the total (insufficient memory, improper batch size)"


@dataclass(frozen=True)
class GpuModel:
    """One row of the table (the file's header explains each key)."""

    name: str
    match: re.Pattern[str] = allowed(flags=re.IGNORECASE, min_literal=2)  # a model name is short: "T4"
    memory_gb: float = allowed(gt=0)
    source: str = allowed(fullmatch=r"https://\S+")
    reported_mib: float | None = allowed(None, gt=0)
    reported_source: str | None = None

    def __post_init__(self) -> None:
        if (self.reported_mib is None) != (self.reported_source is None):
            raise Invalid("reported_mib and reported_source go together")

    @property
    def mib(self) -> float:
        return float(self.reported_mib or self.memory_gb * MIB_PER_GB)


@dataclass(frozen=True)
class GpuModelTable:
    models: tuple[GpuModel, ...] = allowed(unique="name")


@functools.cache
def gpu_models(path: Path = GPU_MODELS) -> tuple[GpuModel, ...]:
    return load(path, GpuModelTable, "the GPU model table").models


def model_of(name: str) -> GpuModel | None:
    """The table's model for a name a GPU reports, if any."""
    return next((m for m in gpu_models() if m.match.search(name)), None)


def from_model(name: str, missing: str, label: str) -> tuple[float, TotalOrigin]:
    """(total MiB, origin) from the model table, or (NaN, why not): ``missing`` says why the
    readings gave none, ``label`` where the model name would be."""
    if not name:
        return math.nan, TotalOrigin(False, f"{missing}, and no {label}")
    model = model_of(name)
    if model is None:
        return math.nan, TotalOrigin(False, f"{missing}, and the {label} {name!r} is not in the GPU model table")
    return model.mib, TotalOrigin(True, f"GPU model table ({model.name})")


def fill(samples: GpuSamples, mib: float | None) -> GpuSamples:
    """Readings without a total take their GPU's total from its other readings, else ``mib``
    (the operator's option), which is then the GPU's origin."""
    totals = samples.mem_total
    missing = np.isnan(totals)
    if not missing.any():
        return samples
    slot = samples.node.astype(np.int64) * 1024 + samples.gpu
    known = ~missing
    best = dict(zip(slot[known].tolist(), totals[known].tolist(), strict=False))
    filled = totals.copy()
    lookup = np.asarray([best.get(s, math.nan) for s in slot[missing].tolist()], dtype=np.float32)
    filled[missing] = lookup
    origins = dict(samples.totals)
    if mib is not None:
        still = np.isnan(filled)
        for node, gpu in set(zip(samples.node[still].tolist(), samples.gpu[still].tolist(), strict=False)):
            origins[(samples.nodes[node], gpu)] = TotalOrigin(True, OPTION)
        filled[still] = mib
    return replace(samples, mem_total=filled, totals=origins)


@dataclass(frozen=True)
class MissingTotal:
    why: str
    gpus: int
    examples: list[str]  # node:gpu


@dataclass(frozen=True)
class MemoryCoverage:
    """How many of the jobs' GPUs have a memory total, from where, and the figures missing."""

    gpus: int
    known: int
    sources: dict[str, int]
    missing: list[MissingTotal]
    figures_missing: str  # "" when every GPU has its total


def coverage(origins: Mapping[tuple[str, int], TotalOrigin], examples: int = 4) -> MemoryCoverage:
    sources: dict[str, int] = {}
    missing: dict[str, list[str]] = {}
    for (node, gpu), origin in sorted(origins.items()):
        if origin.known:
            sources[origin.text] = sources.get(origin.text, 0) + 1
        else:
            missing.setdefault(origin.text, []).append(f"{node}:{gpu}")
    rows = [MissingTotal(why, len(gpus), gpus[:examples]) for why, gpus in sorted(missing.items(), key=lambda i: -len(i[1]))]
    return MemoryCoverage(len(origins), sum(sources.values()), sources, rows, FIGURES if rows else "")


def describe(cover: MemoryCoverage) -> str:
    """The one line of the text report about missing totals ("" when none is missing)."""
    if not cover.missing:
        return ""
    gpus = sum(m.gpus for m in cover.missing)
    whys = "; ".join(
        f"{m.why} ({m.gpus} GPUs: {', '.join(m.examples)}{', ...' if m.gpus > len(m.examples) else ''})" for m in cover.missing
    )
    return f"memory total unknown for {gpus} of {cover.gpus} GPUs: {whys}. Not measured for them: {FIGURES}; give {OPTION}"
