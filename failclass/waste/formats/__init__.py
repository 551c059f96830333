"""Readers for the signals GPU clusters record, each returning ``GpuSamples``:
DCGM exporter scrapes (Prometheus text), Prometheus range-query JSON, nvidia-smi CSV
logs, and failclass's own Parquet table. ``read_signals`` picks the reader by content; the
range-query answers of several files are read as one (a query per metric is how operators
export them: utilisation in one file, memory in others)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from failclass.errors import InputError
from failclass.limits import LIMITS
from failclass.waste.formats.nvidia_smi import read_nvidia_smi
from failclass.waste.formats.prometheus import read_answers, read_exposition, read_range_query
from failclass.waste.samples import GpuSamples, concat


def read_signal(path: Path) -> GpuSamples:
    """One file, its format told by its first bytes (Parquet's magic, JSON, CSV header, exposition)."""
    return _read(path, *_head(path))


def _read(path: Path, head: bytes, text: str | None) -> GpuSamples:
    if head.startswith(b"PAR1"):
        from failclass.waste.formats.parquet import read_parquet  # pyarrow (the waste extra) loads only here

        return read_parquet(path)
    assert text is not None
    first = text.lstrip()[:1]
    if first in ("{", "["):
        return read_range_query(text, str(path))
    if "utilization.gpu" in text.split("\n", 1)[0] or path.suffix == ".csv":
        return read_nvidia_smi(text, str(path), node=path.stem.split("--")[0])
    return read_exposition(text, str(path), scraped_at=path.stat().st_mtime)


def read_signals(paths: Sequence[Path]) -> GpuSamples:
    """Every file; Prometheus range-query files together, the others one by one."""
    answers: list[object] = []
    parts: list[GpuSamples] = []
    for path in paths:
        head, text = _head(path)
        if text is not None and text.lstrip()[:1] in ("{", "["):
            try:
                document = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: not JSON: {exc}") from exc
            answers += document if isinstance(document, list) else [document]
        else:
            parts.append(_read(path, head, text))
    if answers:
        parts.append(read_answers(answers, ", ".join(str(p) for p in paths if p.suffix == ".json") or "range queries"))
    return concat(parts)


def _head(path: Path) -> tuple[bytes, str | None]:
    """A file's first bytes, and its text unless it is Parquet."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    if head.startswith(b"PAR1"):
        return head, None
    if size > LIMITS.waste_text_bytes:
        raise InputError(f"{path}: {size:,} bytes of text is over the {LIMITS.waste_text_bytes:,} limit; convert it to Parquet")
    return head, _decode(path)


def _decode(path: Path) -> str:
    data = path.read_bytes()
    if b"\x00" in data:
        raise InputError(f"{path}: NUL bytes in a text signal file (binary data?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}): {exc.reason}") from exc
