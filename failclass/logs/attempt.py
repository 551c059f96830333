"""An attempt's logs examined for a decision (failclass.classifier.Examination), read as
ranks where they are ranks: several files (one per rank, stdout and stderr, a launcher's
own), or one log whose end holds the lines of two ranks or more (torchrun's ``[rank3]:``,
srun ``--label``'s ``3: ``...: failclass.logs.ranks). Then the rank whose failure started
the attempt speaks for it, and the examination names its origin (failclass.logs.origin), on
a node placed by the attempt's facts where the logs do not say it. One log of one process
is examined as before (streamed, never held whole), its own c10d records naming its rank
or not. Progress is the furthest any log reached, as before. The lines' templates are
collected in the same pass (the store keeps a good run's: failclass.store.goodruns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from failclass.attempts import Attempt
from failclass.classifier import Classifier, Examination
from failclass.contracts import AttemptAnswer
from failclass.limits import LIMITS
from failclass.logs.origin import AttemptReader, read_attempt
from failclass.logs.ranks import Layout, Stream, rank_streams
from failclass.logs.text import blocks_of_text, log_end

BODY = "log"  # the name of a request's one log body, as an origin's path gives it
END = LIMITS.model_tail_bytes  # the end of a log, where the ranks' failures are, read to tell whether it is ranks


def layout_of(attempt: Attempt) -> Layout:
    """Where the attempt's ranks ran, as its facts say."""
    return Layout(attempt.nodes, attempt.tasks_per_node, attempt.pods, attempt.gpus)


def examine_files(classifier: Classifier, paths: Sequence[Path], attempt: Attempt) -> tuple[Path, Examination]:
    """The attempt's log files examined together, and the file that speaks for the attempt:
    the origin's, where they were read as ranks; else the strongest answer's."""
    log, examined = classifier.examine_paths(paths, templates=True)
    layout = layout_of(attempt)
    if len(set(paths)) == 1 and not _two_ranks(_streams(log_end(log, END), layout)):
        return log, examined
    ranked = _with(examined, read_attempt(classifier, paths, layout))
    return (Path(ranked.origin.path) if ranked.origin and ranked.origin.path else log), ranked


def examine_text(classifier: Classifier, text: str, attempt: Attempt) -> Examination:
    """The attempt's one log body (a request's), read as ranks where its end holds two or
    more (a body no longer than the end is read as ranks once)."""
    examined = classifier.examine_bytes(text, templates=True)
    data = b"".join(blocks_of_text(text))
    layout = layout_of(attempt)
    streams = _streams(data[-END:], layout)
    if not _two_ranks(streams):
        return examined
    if len(data) > END:
        streams = _streams(data, layout)
    return _with(examined, AttemptReader(classifier, layout).read(streams))


def _streams(data: bytes, layout: Layout) -> list[Stream]:
    return rank_streams({BODY: data.decode("utf-8", "replace").splitlines()}, layout)


def _two_ranks(streams: list[Stream]) -> bool:
    return len({stream.rank for stream in streams if stream.rank is not None}) >= 2


def _with(examined: Examination, answer: AttemptAnswer) -> Examination:
    """The examination with the origin rank's classification, and the origin."""
    return dataclasses.replace(examined, classification=answer.classification, origin=answer.origin)
