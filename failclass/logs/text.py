"""Log bytes -> blocks ready for matching, and matched bytes -> readable evidence text.

Logs are hostile input: any bytes, any size, no newline at all. Reading is streaming in
fixed-size blocks (memory stays bounded whatever the size); gzip-compressed logs are
read transparently. Anything else than a regular file (a pipe, a FIFO, a device,
standard input) is a stream, read up to LIMITS.stream_log_bytes since it may never end;
directories and sockets are refused. ANSI escape sequences are removed before matching;
invalid UTF-8 survives as U+FFFD in evidence text. Carriage returns are kept: the pattern dialect
treats them as the start of a message (a progress bar rewritten in place), and line
numbers stay those an editor shows.
"""

from __future__ import annotations

import fcntl
import gzip
import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from failclass.errors import InputError
from failclass.inbound import utf8
from failclass.limits import LIMITS

GZIP_MAGIC = b"\x1f\x8b"
ANSI_ESCAPE = re.compile(rb"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def strip_ansi(block: bytes) -> bytes:
    """Remove terminal colour and cursor sequences (cheap when there are none)."""
    if b"\x1b" not in block:
        return block
    return ANSI_ESCAPE.sub(b"", block)


def open_log(path: Path) -> BinaryIO:
    """Open a log file for streaming; gzip is detected by its magic bytes, not the name."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode) or stat.S_ISSOCK(mode):
            raise InputError(f"{path}: is a {'directory' if stat.S_ISDIR(mode) else 'socket'}, not a log file")
        if stat.S_ISREG(mode):
            raw: Readable = path.open("rb")
        else:  # a FIFO or a device (/dev/null reads empty, /dev/zero never ends): a stream
            raw = StreamCap(_open_fifo(path) if stat.S_ISFIFO(mode) else path.open("rb"), str(path))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None
    return open_stream(raw)  # peeks, never seeks: pipes and FIFOs stream like files


def open_standard_input() -> BinaryIO:
    """Standard input as a log, gzip or not (up to LIMITS.stream_log_bytes whatever it is)."""
    return open_stream(StreamCap(os.fdopen(sys.stdin.fileno(), "rb", closefd=False), "standard input"))


class StreamCap(io.RawIOBase):
    """A stream read up to LIMITS.stream_log_bytes; past it, InputError (a writer such as
    ``yes`` or /dev/zero would otherwise never end the log)."""

    def __init__(self, stream: Readable, name: str, limit: int = LIMITS.stream_log_bytes) -> None:
        self.stream = stream
        self.name = name
        self.limit = limit
        self.seen = 0

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        """Closes the stream it reads too (it owns it)."""
        if not self.closed and hasattr(self.stream, "close"):
            self.stream.close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
        self.seen += len(data)
        if self.seen > self.limit:
            raise InputError(
                f"{self.name}: over {self.limit:,} bytes, the limit for a log that is not a regular file (pipe, FIFO, device)"
            )
        buffer[: len(data)] = data
        return len(data)


def read_head(stream: Readable, size: int) -> bytes:
    """The first ``size`` bytes of a stream (fewer at its end); a raw stream's read may stop short."""
    parts: list[bytes] = []
    wanted = size
    while wanted > 0 and (part := stream.read(wanted)):
        parts.append(part)
        wanted -= len(part)
    return b"".join(parts)


class Resumed(io.RawIOBase):
    """A stream whose first bytes were read already: they come first again."""

    def __init__(self, head: bytes, rest: Readable) -> None:
        self.head = head
        self.rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.head[: len(buffer)] if self.head else self.rest.read(len(buffer))
        self.head = self.head[len(data) :] if self.head else b""
        buffer[: len(data)] = data
        return len(data)


def _open_fifo(path: Path) -> BinaryIO:
    """A FIFO opened without waiting for a writer (one that never comes reads as empty)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    flags = fcntl.fcntl(descriptor, fcntl.F_GETFL)
    fcntl.fcntl(descriptor, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    return os.fdopen(descriptor, "rb")


class Readable(Protocol):
    """Anything a log can be read from in blocks."""

    def read(self, size: int = -1, /) -> bytes: ...


def open_stream(stream: Readable) -> BinaryIO:
    """A stream of log bytes, gunzipped when it starts with gzip's magic bytes."""
    buffered: Any = stream if hasattr(stream, "peek") else io.BufferedReader(stream)  # type: ignore[type-var]
    if buffered.peek(2)[:2] == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    return buffered  # type: ignore[no-any-return]


class BlockReader:
    """Iterate over ANSI-free blocks of a stream, counting the raw bytes read.
    A read error (a truncated gzip member, an I/O error) becomes InputError."""

    def __init__(self, stream: BinaryIO, block_size: int = LIMITS.read_block_bytes) -> None:
        self.stream = stream
        self.block_size = block_size
        self.bytes_read = 0

    def __iter__(self) -> Iterator[bytes]:
        name = getattr(self.stream, "name", "log")
        while True:
            try:
                block = self.stream.read(self.block_size)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputError(f"{name}: read failed: {exc}") from None
            if not block:
                return
            self.bytes_read += len(block)
            yield strip_ansi(block)


class Tail:
    """The last ``size`` bytes of a stream of blocks, kept while the blocks pass through."""

    def __init__(self, size: int = LIMITS.model_tail_bytes) -> None:
        self.size = size
        self.data = b""
        self.seen = 0

    def watch(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        for block in blocks:
            self.seen += len(block)
            self.data = block[-self.size :] if len(block) >= self.size else (self.data + block)[-self.size :]
            yield block

    def numbered_lines(self, total_lines: int) -> list[tuple[int, str]]:
        """The complete lines of the tail with their line numbers in the whole log."""
        lines = self.data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        first = total_lines - len(lines) + 1
        if self.seen > len(self.data):  # the tail starts inside a line: drop that piece
            lines, first = lines[1:], first + 1
        return [(first + i, line.decode("utf-8", "replace")) for i, line in enumerate(lines)]

    def lines_ending(self, ends: Sequence[int], total_lines: int) -> Iterator[tuple[int, int, str]]:
        """The complete lines of the tail holding the given tail offsets (sorted), each
        once, as (line number in the log, byte offset in the log, text)."""
        data = self.data
        start = self.seen - len(data)  # the log's offset of the tail's first byte
        pieces = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        first_whole = data.find(b"\n") + 1 if start > 0 else 0  # a tail starting inside a line
        line, counted, last_begin = total_lines - pieces + 1, 0, -1
        for end in ends:
            begin = data.rfind(b"\n", 0, max(end - 1, 0)) + 1 if end else 0
            if begin < first_whole or begin == last_begin:
                continue
            line += data.count(b"\n", counted, begin)
            counted, last_begin = begin, begin
            stop = data.find(b"\n", begin)
            yield line, start + begin, data[begin : len(data) if stop < 0 else stop].decode("utf-8", "replace")


def tail_text(path: Path) -> str:
    """The end of a log as the fallback model reads it in classification."""
    tail = Tail()
    with open_log(path) as stream:
        for _ in tail.watch(BlockReader(stream)):
            pass
    lines = tail.data.split(b"\n")
    if tail.seen > len(tail.data):
        lines = lines[1:]
    return b"\n".join(lines).decode("utf-8", "replace")


def log_end(path: Path, size: int) -> bytes:
    """The last ``size`` bytes of a log as classification reads it (gunzipped, without ANSI
    sequences): a plain file is read from there on, anything else streams through."""
    tail = Tail(size)
    with open_log(path) as stream:
        if not isinstance(stream, gzip.GzipFile) and stream.seekable():
            stream.seek(max(stream.seek(0, io.SEEK_END) - size, 0))
        for _ in tail.watch(BlockReader(stream)):
            pass
    return tail.data


def blocks_of_text(data: bytes | str, block_size: int = LIMITS.read_block_bytes) -> BlockReader:
    """Blocks of an in-memory log (a request body, a rule example); text as UTF-8, what it
    cannot encode as U+FFFD (failclass.inbound)."""
    raw = utf8(data) if isinstance(data, str) else data
    return BlockReader(io.BytesIO(raw), block_size)


def evidence_text(line: bytes, match_end: int) -> str:
    """The readable part of a matched line: the carriage-return segment holding the match,
    cut to a window around it, decoded with invalid bytes replaced."""
    segment_start = line.rfind(b"\r", 0, max(match_end - 1, 0)) + 1
    segment_end = line.find(b"\r", match_end)
    if segment_end == -1:
        segment_end = len(line)
    start = max(segment_start, match_end - LIMITS.evidence_chars // 2)
    end = min(segment_end, max(match_end, start) + LIMITS.evidence_chars // 2)
    text = line[start:end].decode("utf-8", "replace").strip()
    if start > segment_start:
        text = "…" + text
    if end < segment_end:
        text += "…"
    return text
