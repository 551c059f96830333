"""What a log is made of, beyond lines: the exceptions it raised.

A Python traceback is read as a whole: the frames it passed through (file, function)
and the exception line that ends it (type as printed, message). An exception line
printed without a traceback (a logger's one-line error) counts too, with no frames.
Chained tracebacks ("During handling of the above exception", "The above exception was
the direct cause") give one exception each; a caller decides which one speaks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

TRACEBACK_START = re.compile(r"Traceback \(most recent call last\):\s*$")
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+?)\s*$')
EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*"
    r"(?:Error|Exception|Exit|Interrupt|Fault|Failure|Exhausted|Timeout))(?::\s?(?P<message>.*))?$"
)
MAX_FRAMES = 200  # frames kept per traceback (a recursion error prints thousands)


@dataclass(frozen=True)
class Frame:
    file: str
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.function}"


@dataclass(frozen=True)
class RaisedException:
    """An exception the log shows: its type as printed, short name, message, the
    frames of its traceback (empty for a bare exception line), and where it is."""

    type: str
    message: str
    frames: tuple[Frame, ...]
    line: int
    offset: int
    text: str

    @property
    def name(self) -> str:
        return self.type.rsplit(".", 1)[-1]


def exceptions_in(lines: Iterable[tuple[int, int, str]], strip: Callable[[str], str]) -> Iterator[RaisedException]:
    """The exceptions of numbered lines ``(line number, byte offset, text)``, in log
    order; ``strip`` removes launcher and logger prefixes from a line."""
    frames: list[Frame] = []
    in_traceback = False
    for number, offset, raw in lines:
        text = strip(raw).strip()
        if TRACEBACK_START.search(text):
            frames, in_traceback = [], True
            continue
        frame = FRAME.match(text) if in_traceback else None
        if frame:
            if len(frames) < MAX_FRAMES:
                frames.append(Frame(frame["file"], frame["function"]))
            continue
        raised = EXCEPTION.match(text)
        if raised:
            yield RaisedException(raised["type"], (raised["message"] or "").strip(), tuple(frames), number, offset, raw)
            frames, in_traceback = [], False
        # any other line inside a traceback is its source code or a ^^^ marker
