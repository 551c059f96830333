"""The failure region of a log: the lines the fallback model reads, and quotes.

Of the last LIMITS.region_lines non-blank lines, those that sound like trouble (error, killed,
denied, NaN, ...) and the last FINAL_LINES whatever they say; progress lines before the
failure are left out (they carried no signal and diluted the rest: 2 points of
cross-validated accuracy on the corpus). A line rewritten with carriage returns (a
progress bar) counts as its last state. Numbers and addresses are masked, so that two
runs of one failure read the same.

Whether a log's last lines record a failure is decided here too (shows_failure): a line
in the form of a failure record, or one that says a failure in words unless the
signatures' endings (failclass.matching.endings, signatures/endings.yaml) find it benign;
never a line that reports an end without its cause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from failclass.limits import LIMITS
from failclass.logs.facts import reports_progress

if TYPE_CHECKING:
    from failclass.matching.endings import Endings

FINAL_LINES = 15
LINE_CHARS = 400
TROUBLE = re.compile(
    r"error|exception|fail|fatal|abort|kill|signal|denied|cannot|can't|could not|unable|no such|not found"
    r"|invalid|traceback|terminat|nan|overflow|timeout|timed out|exit|core dumped|refused|closed|lost|warn|oom|memory"
)  # searched in the lowercased line: ten times faster than re.IGNORECASE
FAILURE_RECORD = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+"  # a Python traceback, or its frames
    r"|(?<![\w.])(?:[\w.]*\.)?[A-Z]?\w*(?:Error|Exception|Failure|Fault)(?:\([\w.]*\))?(?::|\s*$)"  # an exception, an error
    r"|\b(?:ERROR|FATAL|CRITICAL)\b"  # a log record's level, as loggers print it
    r"|(?:^|[\s:\]\[])[EF]\d{3,4} \d\d:\d\d:\d\d|\d: [EF] [\w/.-]+:\d+\]"  # glog's, c10's and TensorFlow's E/F records
    r"|\bSIG(?:SEGV|ABRT|BUS|ILL|FPE)\b|\bsignal (?:11|6|7|4|8)\b"  # a fatal signal
)  # a line that records a failure: an exception, an error-level record, a fatal signal
# A piece of text that every match of FAILURE_RECORD holds (one per form): a line without
# one is not searched for FAILURE_RECORD's forms, which are tried at each of its positions
# (most lines are not failure records, and the search was most of shows_failure's time).
_RECORD_HINT = re.compile(r'Traceback|File "|Error|Exception|Failure|Fault|ERROR|FATAL|CRITICAL|[EF]\d|: [EF] |SIG|signal ')
FAILURE_WORDS = re.compile(
    r"\b(?:errors?|fail(?:s|ed|ure|ing)?|fatal|abort(?:s|ed|ing)?|exception|denied|cannot|can't|couldn't|could not"
    r"|unable|not found|no such|refused|timed out|core dumped|segmentation|crash(?:ed|es)?|terminat(?:ed|ing)"
    r"|evicted|preempted|nan|out of memory)\b(?!=)",
    re.IGNORECASE,
)  # a failure said in words, as a word (not `error_rate`, `fail_fast`, `nan=0`): counts unless the line is benign
_HEX = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{12,}\b")
_NUMBER = re.compile(r"\d+")
_SPACES = re.compile(r"[ \t]+")


def mask(text: str) -> str:
    """Addresses and numbers masked, runs of blanks folded, in a line or many."""
    return _SPACES.sub(" ", _NUMBER.sub("0", _HEX.sub(" HEX ", text)))


def normalise_line(line: str) -> str:
    """What the model reads of a line: addresses and numbers masked, runs of blanks folded."""
    return mask(line[:LINE_CHARS]).strip()


def segment(line: str) -> str:
    """A line rewritten with carriage returns (a progress bar) counts as its last state."""
    return line.rsplit("\r", 1)[-1] if "\r" in line else line


def region_indices(lines: Sequence[str]) -> list[int]:
    """Indices of the failure region's lines (see the module's docstring)."""
    recent: list[int] = []
    for index in range(len(lines) - 1, -1, -1):
        if segment(lines[index]).strip():
            recent.append(index)
            if len(recent) == LIMITS.region_lines:
                break
    recent.reverse()
    final = len(recent) - FINAL_LINES
    return [index for n, index in enumerate(recent) if n >= final or TROUBLE.search(lines[index].lower())]


@dataclass(frozen=True)
class TailLines:
    """A log's tail as lines, read once for what the classifier asks of its end."""

    numbered: list[tuple[int, str]]  # (line number in the log, text)
    texts: list[str]
    region: list[int]  # indices into texts of the failure region
    endings: Endings  # what its last lines say of how the run ended

    @classmethod
    def of(cls, numbered: list[tuple[int, str]], endings: Endings) -> TailLines:
        texts = [text for _, text in numbered]
        return cls(numbered, texts, region_indices(texts), endings)

    @property
    def ending(self) -> list[int]:
        """Indices of the log's last non-blank lines."""
        return self.region[-FINAL_LINES:]

    @property
    def ending_line(self) -> int:
        """The line number in the log of the first of its last non-blank lines."""
        return self.numbered[self.ending[0]][0] if self.ending else 0

    @property
    def shows_failure(self) -> bool:
        """Whether one of the log's last lines says that something failed (see shows_failure)."""
        return shows_failure([self.texts[i] for i in self.ending], self.endings)

    @property
    def training_to_the_end(self) -> bool:
        """Whether one of the log's last lines reports training progress (an epoch, a step,
        a loss, a progress bar): with no failure among them, a run cut off mid-training."""
        return any(reports_progress(segment(self.texts[i])) for i in self.ending)

    def first_end_without_cause(self) -> int | None:
        """The line number of the first of the last lines that reports an end naming no cause."""
        return next((self.numbered[i][0] for i in self.ending if self.endings.names_no_cause(segment(self.texts[i]))), None)


def records_failure(text: str) -> bool:
    """Whether the text holds a failure record (FAILURE_RECORD)."""
    return _RECORD_HINT.search(text) is not None and FAILURE_RECORD.search(text) is not None


def shows_failure(lines: Sequence[str], endings: Endings) -> bool:
    """Whether some line says that something failed (FAILURE_RECORD, or FAILURE_WORDS on a
    line that the endings do not find benign) other than an end reported without a cause
    (principle 6 of the labelling guide: a log with no failure line at all is "No signature")."""
    for line in lines:
        text = segment(line)
        said = records_failure(text) or (FAILURE_WORDS.search(text) and not endings.is_benign(text))
        if said and not endings.names_no_cause(text):
            return True
    return False


def region_lines(text: str) -> list[str]:
    """The failure region of a log's text, each line normalised."""
    lines = text.split("\n")
    return normalised(lines, region_indices(lines))


def normalised(lines: Sequence[str], indices: Sequence[int]) -> list[str]:
    """The lines at ``indices`` (a failure region's), each as the model reads it."""
    return [normalise_line(segment(lines[i])) for i in indices]
