"""Log sources for the batch: a directory tree, a tar (plain, .gz, .bz2, .xz, .zst), a
zip, or a single compressed log (.gz, .zst). Members are read streaming, never unpacked
to disk, and every member passes the same guards:

- names: absolute paths, ``..`` components and NUL bytes are refused; names that are not
  UTF-8 are kept with their bytes escaped (surrogateescape), shown escaped;
- kinds: only regular files; symlinks, hard links, devices and fifos are skipped (a FIFO
  or a device named as the source itself is read as a stream, as `classify` reads it);
- compression: a ``.gz`` or ``.zst`` file found in a directory or an archive is read
  decompressed (its size then unknown); which files are logs, ``is_log_name`` says (the
  batch also takes any file its manifest lists);
- sizes: a member may not grow beyond LIMITS.archive_member_bytes uncompressed, nor beyond
  LIMITS.zip_ratio times its compressed size in a zip (bombs), nor a single compressed log
  beyond LIMITS.archive_member_bytes; reading stops there and the member is reported as damaged.

A damaged member (truncated, corrupt, too big) is reported with its reason and skipped;
the walk goes on. A damaged archive stops at the damage, with what came before kept.
"""

from __future__ import annotations

import gzip
import io
import lzma
import os
import re
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, cast

import fsspec
import zstandard

from failclass.errors import DamagedMember, InputError
from failclass.limits import LIMITS
from failclass.logs.text import Readable, open_log

READ_ERRORS = (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, zlib.error, lzma.LZMAError, zstandard.ZstdError)
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst")
# A log's name: no extension at all (stdout), .log, .out, .err, .txt, .stdout or .stderr
# (a rotation number after it allowed: train.log.1), or a job number (Slurm's %j:
# train.4711; PBS and SGE: train.o4711); then optionally .gz or .zst. Hidden files are not logs.
LOG_NAME = re.compile(
    r"[^./](?:[^./]*|[^/]*\.(?:log|out|err|txt|stdout|stderr)(?:\.[0-9]+)?|[^/]*\.[oe]?[0-9]+)(?:\.gz|\.zst)?", re.IGNORECASE
)


@dataclass(frozen=True)
class Member:
    """One log inside a source: its name relative to the source, and how to read it."""

    source: str
    name: str
    size: int | None
    inside: bool = True  # found in a directory or an archive (False: the source itself)

    @property
    def key(self) -> str:
        return f"{self.source}::{self.name}"


def safe_name(raw: str) -> str | None:
    """The member's name if it is safe to use (bytes that are not UTF-8 shown escaped),
    else None."""
    if not raw or "\x00" in raw:
        return None
    path = PurePosixPath(raw.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and path.parts[0].endswith(":")):
        return None
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class Limited(io.RawIOBase):
    """Reads from ``stream`` and stops with DamagedMember past ``limit`` bytes."""

    def __init__(self, stream: Readable, limit: int, name: str) -> None:
        self.stream = stream
        self.limit = limit
        self.seen = 0
        self.name = name

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        try:
            data = self.stream.read(len(buffer))
        except READ_ERRORS as exc:
            raise DamagedMember(f"{self.name}: cannot be read: {exc}") from None
        except InputError as exc:  # a stream past LIMITS.stream_log_bytes (failclass.logs.text.StreamCap)
            raise DamagedMember(str(exc)) from None
        self.seen += len(data)
        if self.seen > self.limit:
            raise DamagedMember(f"{self.name}: larger than the limit of {self.limit} bytes (a bomb?)")
        buffer[: len(data)] = data
        return len(data)


def kind(name: str) -> str:
    lowered = name.lower()
    if lowered.endswith(TAR_SUFFIXES):
        return "tar"
    if lowered.endswith(".zip"):
        return "zip"
    if lowered.endswith(".gz"):
        return "gzip"
    if lowered.endswith(".zst"):
        return "zstd"
    return "file"


Opener = Callable[[], BinaryIO]


def is_log_name(name: str) -> bool:
    """Whether a file found in a directory or an archive is named like a log (LOG_NAME);
    README.md, .url, .csv, .json or .parquet files beside the logs are not."""
    return LOG_NAME.fullmatch(name.rsplit("/", 1)[-1]) is not None


def _member(source: str, name: str, size: int | None, stream: Readable, limit: int) -> tuple[Member, Limited]:
    """A file of a directory or an archive, limited to ``limit`` bytes as stored; a .gz or
    .zst one read decompressed, up to LIMITS.archive_member_bytes."""
    what = kind(name)
    if what not in ("gzip", "zstd"):
        return Member(source, name, size), Limited(stream, limit, name)
    stored = Limited(stream, limit, name)
    opened = (
        gzip.GzipFile(fileobj=stored, mode="rb")
        if what == "gzip"
        else zstandard.ZstdDecompressor().stream_reader(cast(BinaryIO, stored))
    )
    return Member(source, name, None), Limited(opened, LIMITS.archive_member_bytes, name)


def members(source: str | Path, errors: list[str]) -> Iterator[tuple[Member, Limited]]:
    """Every log of a source (a local path or an fsspec URL such as s3://bucket/logs.tar)
    with a stream to read it; problems go to ``errors``."""
    text = str(source)
    if "://" not in text and Path(text).is_dir():
        yield from _local_directory(Path(text), errors)
        return
    if "://" not in text and Path(text).exists() and not Path(text).is_file():
        yield from _local_stream(Path(text), errors)
        return
    fs, root = fsspec.core.url_to_fs(text)
    if fs.isdir(root):
        for found in sorted(fs.find(root)):
            relative = found[len(root.rstrip("/")) + 1 :]
            with fs.open(found, "rb") as handle:
                yield _member(text, relative, fs.size(found), handle, LIMITS.archive_member_bytes)
        return
    what = kind(root)

    def opener() -> BinaryIO:
        return fs.open(root, "rb")  # type: ignore[no-any-return]

    if what == "tar":
        yield from _tar_members(text, opener, root.lower().endswith((".tar.zst", ".tzst")), errors)
    elif what == "zip":
        yield from _zip_members(text, opener, errors)
    else:
        name = Path(root).name
        with opener() as raw:
            if what == "gzip":
                stream: Any = gzip.GzipFile(fileobj=raw, mode="rb")
            elif what == "zstd":
                stream = zstandard.ZstdDecompressor().stream_reader(raw)
            else:
                stream = raw
            plain = name.rsplit(".", 1)[0] if what != "file" else name
            yield (
                Member(text, plain, None if what != "file" else fs.size(root), inside=False),
                Limited(stream, LIMITS.archive_member_bytes, plain),
            )


def _local_directory(path: Path, errors: list[str]) -> Iterator[tuple[Member, Limited]]:
    """A local tree, walked without following links; links are reported and skipped."""
    source = str(path)
    for root, dirs, files in os.walk(path, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            full = Path(root) / name
            relative = str(full.relative_to(path)).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            if full.is_symlink() or not full.is_file():
                errors.append(f"{source}::{relative}: skipped: not a regular file")
                continue
            with full.open("rb") as stream:
                yield _member(source, relative, full.stat().st_size, stream, LIMITS.archive_member_bytes)


def _local_stream(path: Path, errors: list[str]) -> Iterator[tuple[Member, Limited]]:
    """A FIFO or a device named as the source: one log read as a stream, as `classify`
    reads it (gzip or not, up to LIMITS.stream_log_bytes); a socket is refused."""
    try:
        opened = open_log(path)
    except InputError as exc:
        errors.append(str(exc))
        return
    with opened:
        yield Member(str(path), path.name, None, inside=False), Limited(opened, LIMITS.archive_member_bytes, path.name)


def _tar_members(source: str, opener: Opener, zstd: bool, errors: list[str]) -> Iterator[tuple[Member, Limited]]:
    try:
        with opener() as raw:
            stream = zstandard.ZstdDecompressor().stream_reader(raw) if zstd else raw
            with tarfile.open(fileobj=stream, mode="r|*") as archive:
                for info in archive:
                    name = safe_name(info.name)
                    if name is None:
                        errors.append(f"{source}::{info.name!r}: refused: unsafe name (absolute or '..')")
                    elif info.isdir():
                        continue
                    elif not info.isfile():
                        errors.append(f"{source}::{name}: skipped: not a regular file ({_tar_kind(info)})")
                    elif (member := archive.extractfile(info)) is not None:
                        yield _member(source, name, info.size, member, min(info.size, LIMITS.archive_member_bytes) + 1)
    except READ_ERRORS as exc:
        errors.append(f"{source}: damaged or unreadable tar archive, stopped there: {exc}")


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.issym():
        return "symlink"
    return "hard link" if info.islnk() else "special file"


def _zip_members(source: str, opener: Opener, errors: list[str]) -> Iterator[tuple[Member, Limited]]:
    raw = opener()
    try:
        archive = zipfile.ZipFile(raw)
    except (zipfile.BadZipFile, OSError) as exc:
        errors.append(f"{source}: not a readable zip archive: {exc}")
        raw.close()
        return
    with raw, archive:
        for info in archive.infolist():
            name = safe_name(info.filename)
            if name is None:
                errors.append(f"{source}::{info.filename!r}: refused: unsafe name (absolute or '..')")
                continue
            if info.is_dir() or (info.external_attr >> 16) & 0o170000 == 0o120000:
                if not info.is_dir():
                    errors.append(f"{source}::{name}: skipped: not a regular file (symlink)")
                continue
            limit = min(LIMITS.archive_member_bytes, max(info.compress_size, 1) * LIMITS.zip_ratio)
            try:
                with archive.open(info) as stream:
                    yield _member(source, name, info.file_size, stream, limit)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
                errors.append(f"{source}::{name}: damaged member, skipped: {exc}")
