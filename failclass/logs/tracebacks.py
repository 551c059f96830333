"""What a log is made of, beyond lines: the exceptions it raised.

A Python traceback is read as a whole: the frames it passed through (file, function)
and the exception line that ends it (type as printed, message). An exception line
printed without a traceback (a logger's one-line error) counts too, with no frames.
Chained tracebacks ("During handling of the above exception", "The above exception was
the direct cause") give one exception each; a caller decides which one speaks.

Inside a traceback, the line that ends it names the exception even when its type does
not end in Error or Exception (``zipfile.BadZipFile``, ``queue.Empty``,
``StopIteration``). A traceback printed behind a prefix no rule file knows (a logger's
``[root.train_work] ``, a CSV export's timestamp column) is read through that prefix: the
text before ``Traceback`` is taken as the shape of the prefix (digits as any number) and
removed from the lines that follow it. A frame line with no header before it (an excerpt
cut after ``Traceback (most recent call last):``) opens a traceback too.

A C++ exception that ended the process (``terminate called after throwing an instance of
'gloo::IoException'`` then ``what():  <message>``) is read as one exception too: its type
with ``::`` written as ``.`` (short name ``IoException``), the ``what()`` text as message.
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
# Ends a traceback only: a module-qualified type with a capitalised name, or a built-in
# exception whose name has no Error/Exception suffix.
TRACEBACK_END = re.compile(
    r"^(?P<type>(?:[A-Za-z_][A-Za-z0-9_]*\.)+[A-Z][A-Za-z0-9_]*"
    r"|StopIteration|StopAsyncIteration|KeyboardInterrupt|SystemExit|GeneratorExit)(?::\s?(?P<message>.*))?$"
)
CXX_THROW = re.compile(r"terminate called after throwing an instance of '(?P<type>[A-Za-z_][A-Za-z0-9_:<>, ]*)'")
CXX_WHAT = re.compile(r"\bwhat\(\):\s*(?P<message>.*)$")
MAX_PREFIX = 80  # an unknown prefix longer than this is taken for text, not a prefix
_DIGITS = re.compile(r"[0-9]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
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
    unknown_prefix: re.Pattern[str] | None = None
    thrown: str | None = None  # the C++ type of a "terminate called" line, until its what()
    for number, offset, raw in lines:
        text = strip(raw).strip()
        if unknown_prefix is not None and (found := unknown_prefix.match(text)):
            text = strip(text[found.end() :]).strip()
        if (throw := CXX_THROW.search(text)) or thrown is not None:
            what = CXX_WHAT.search(text) if thrown is not None else None
            if what is not None and thrown is not None:
                yield RaisedException(thrown, what["message"].strip(), (), number, offset, raw)
            thrown = throw["type"].replace("::", ".") if throw else None
            if throw or what is not None:
                continue
        start = TRACEBACK_START.search(text)
        if start:
            frames, in_traceback = [], True
            unknown_prefix = _prefix_shape(text[: start.start()])
            continue
        frame = FRAME.match(text)
        if frame:
            if not in_traceback:  # an excerpt cut after its header: a frame opens the traceback
                frames, in_traceback = [], True
            if len(frames) < MAX_FRAMES:
                frames.append(Frame(frame["file"], frame["function"]))
            continue
        raised = EXCEPTION.match(text) or (TRACEBACK_END.match(text) if frames else None)
        if raised:
            yield RaisedException(raised["type"], (raised["message"] or "").strip(), tuple(frames), number, offset, raw)
            frames, in_traceback = [], False
        # any other line inside a traceback is its source code or a ^^^ marker


def _prefix_shape(prefix: str) -> re.Pattern[str] | None:
    """The text before a ``Traceback`` header as a pattern for the lines after it."""
    prefix = prefix.strip()
    if not prefix or len(prefix) > MAX_PREFIX or _NAME.match(prefix):
        return None  # none, text, or a notebook's "ValueError   Traceback" header
    parts = _DIGITS.split(prefix)
    return re.compile("[0-9]+".join(re.escape(part) for part in parts) + r"\s*")
