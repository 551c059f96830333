"""What a worker (a local pool's process or a Dask worker) does: classify a chunk of
members with a classifier built once per process, and send back one answer each."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from failclass.classifier import Classifier, Examination
from failclass.contracts import Classification
from failclass.logs.facts import Progress
from failclass.options import ClassifierOptions, build_quietly

_worker_classifier: Classifier | None = None


@dataclass(frozen=True)
class MemberAnswer:
    """What a worker sends back for one member (pickled by the pool or Dask)."""

    classification: Classification
    strength: tuple[float, ...]  # how strongly it speaks for the attempt (Classifier.strength)
    progress: Progress | None
    worker: str  # who classified it


def worker_classifier(options: ClassifierOptions) -> Classifier:
    """This process's classifier, built from ``options`` once, on first use (a pool or
    Dask worker classifies many members; the parent checked the options already)."""
    global _worker_classifier
    if _worker_classifier is None:
        _worker_classifier = build_quietly(options)
    return _worker_classifier


def classify_members(logs: list[bytes], options: ClassifierOptions) -> list[MemberAnswer]:
    """One task classifies a chunk of members, so that a task's overhead (pickling,
    scheduling) is paid once per chunk."""
    classifier = worker_classifier(options)
    worker = worker_name()
    return [answer_of(classifier, classifier.examine_bytes(data), worker) for data in logs]


def worker_name() -> str:
    """Who classified: the Dask worker's address inside a Dask worker, else host:pid."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def answer_of(classifier: Classifier, examined: Examination, worker: str) -> MemberAnswer:
    result = examined.classification
    return MemberAnswer(result, tuple(classifier.strength(result)), examined.progress, worker)
