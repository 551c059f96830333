"""Readers for the signals GPU clusters record, each returning ``GpuSamples``:
DCGM exporter scrapes (Prometheus text), Prometheus range-query JSON, nvidia-smi CSV
logs, and failclass's own Parquet table. ``read_signals`` picks the reader by content."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from failclass.errors import InputError
from failclass.limits import LIMITS
from failclass.waste.formats.nvidia_smi import read_nvidia_smi
from failclass.waste.formats.prometheus import read_exposition, read_range_query
from failclass.waste.samples import GpuSamples, concat


def read_signal(path: Path) -> GpuSamples:
    """One file, its format told by its first bytes (Parquet's magic, JSON, CSV header, exposition)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    if head.startswith(b"PAR1"):
        from failclass.waste.formats.parquet import read_parquet  # pyarrow (the waste extra) loads only here

        return read_parquet(path)
    if size > LIMITS.waste_text_bytes:
        raise InputError(f"{path}: {size:,} bytes of text is over the {LIMITS.waste_text_bytes:,} limit; convert it to Parquet")
    text = _decode(path)
    first = text.lstrip()[:1]
    if first in ("{", "["):
        return read_range_query(text, str(path))
    if "utilization.gpu" in text.split("\n", 1)[0] or path.suffix == ".csv":
        return read_nvidia_smi(text, str(path), node=path.stem.split("--")[0])
    return read_exposition(text, str(path), scraped_at=path.stat().st_mtime)


def read_signals(paths: Sequence[Path]) -> GpuSamples:
    return concat([read_signal(path) for path in paths])


def _decode(path: Path) -> str:
    data = path.read_bytes()
    if b"\x00" in data:
        raise InputError(f"{path}: NUL bytes in a text signal file (binary data?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}): {exc.reason}") from exc
