"""Facts read from a log besides its failure reason: how far training got, and which file
paths the evidence names.

Progress lets the retry policy tell a job that fails again at the same place (spend the
budget) from one that got further before failing (a fresh start). Paths let it blame an
input that several jobs fail on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# What training scripts print about where they are (train_progress.py's four styles,
# tqdm, HuggingFace's metric dicts, Keras, Lightning, Megatron's "iteration N/").
_EPOCH = re.compile(r"\b[Ee]poch[\s:=\[]*(\d+)|'epoch': (\d+)")
_STEP = re.compile(r"\b(?:[Ss]tep|[Ii]ter(?:ation)?|global_step)[\s:=\[]*(\d+)|\|\s*(\d+)/\d+ \[")
# What every match of _EPOCH, and of _STEP, holds: a line without it is not searched (most
# of a log's lines; the searches were most of an examination's time).
_EPOCH_WORD = "poch"
_STEP_WORDS = ("tep", "ter", "|")  # [Ss]tep and global_step, [Ii]ter(ation), a bar's "| 3/10 ["
_PROGRESS = re.compile(r"\b(?:[Ee]poch|[Ss]tep|[Ii]ter(?:ation)?|global_step|loss)\b|\d+/\d+ \[|it/s\b|s/it\b")
_PATH = re.compile(r"""(?:'|"|\s|^|=)((?:/|\./|~/|[A-Za-z]:\\)[^'"\s:,;()\[\]]+)""")
_NOT_INPUTS = ("/usr/", "/lib", "/opt/conda/", "/proc/", "/dev/", "/sys/", "site-packages", "dist-packages", ".py")


@dataclass(frozen=True, order=True)
class Progress:
    """The last epoch and step a log mentions (-1 when it mentions none)."""

    epoch: int = -1
    step: int = -1

    def to_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "step": self.step}


def _last_number(pattern: re.Pattern[str], line: str, words: tuple[str, ...]) -> int | None:
    if not any(word in line for word in words):
        return None
    found = None
    for match in pattern.finditer(line):
        value = next(group for group in match.groups() if group is not None)
        found = int(value)
    return found


def progress_of(lines: Sequence[str]) -> Progress | None:
    """Progress from the last lines that say where training was; None if none say it.
    Read from the end: the last epoch and the last step mentioned end the search."""
    epoch = step = None
    for line in reversed(lines):
        for segment in reversed(line.split("\r")):
            if epoch is None:
                epoch = _last_number(_EPOCH, segment, (_EPOCH_WORD,))
            if step is None:
                step = _last_number(_STEP, segment, _STEP_WORDS)
            if epoch is not None and step is not None:
                return Progress(epoch, step)
    if epoch is None and step is None:
        return None
    return Progress(-1 if epoch is None else epoch, -1 if step is None else step)


def reports_progress(line: str) -> bool:
    """Whether a line reports training progress (an epoch, a step, a loss, a progress bar),
    numbered or not."""
    return _PROGRESS.search(line) is not None


def paths_in(texts: Iterable[str]) -> list[str]:
    """File paths named in evidence lines, without code and system locations."""
    found: list[str] = []
    for text in texts:
        for match in _PATH.finditer(text):
            path = match.group(1).rstrip(".")
            if len(path) > 2 and not any(part in path for part in _NOT_INPUTS) and path not in found:
                found.append(path)
    return found
