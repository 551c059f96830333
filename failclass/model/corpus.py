"""The labelled corpus: which logs exist, what each one is, and on which side of the split.

Folders under ``corpora/`` (see corpora/README.md):

- ``public/<reason>/NAME.log``   real excerpts of public logs, the thread's URL in ``NAME.url``;
- ``produced/<reason>/NAME.log`` output of a real failing program run here, its facts
  (scenario, command, exit status) in ``NAME.json``;
- ``passed/**/NAME.log``         real runs that finished (label ``no_signature``, outcome passed);
- ``killed/NAME.log``            real runs killed from outside at a random point (a signal, a
  time limit, a cancellation, an OOM kill that the log does not name): ``no_signature``,
  outcome killed, on the test side and never trained on, even in cross-validation;
- ``holdout/<reason>/NAME.log``  never-seen public logs kept out of training and of rule
  writing, to measure generalisation;
- operators' labels (``failclass label``), always on the training side.

The split is fixed by the source, so that one thread or one scenario never lands on both
sides: a log is in ``test`` when the SHA-1 of its source key (the URL without its
fragment, or ``scenario:<name>``) is 0 modulo 5, else in ``train``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from failclass.errors import ConfigError
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.resources import CORPORA

MANIFEST = CORPORA / "manifest.jsonl"
TEST_MODULUS = 5
SPLITS = ("train", "test", "holdout")


@dataclass(frozen=True)
class Entry:
    """One labelled log."""

    path: str  # relative to the corpus root's parent (the checkout), or absolute for labels
    reason: str
    outcome: str  # "failed", "passed" or "killed"
    origin: str  # public, produced, passed, killed, holdout, label
    source: str  # URL, scenario:<name>, program:<command> or label:<sha256>
    split: str
    sha256: str
    bytes: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @property
    def failure_free(self) -> bool:
        """A run that did not fail (it passed, or was killed from outside): No signature."""
        return self.outcome in ("passed", "killed")


def source_key(source: str) -> str:
    """What makes two logs one source: the URL without its fragment, or the scenario."""
    return source.split("#", 1)[0].strip()


def split_of(source: str) -> str:
    key = source_key(source)
    digest = int(hashlib.sha1(key.encode()).hexdigest(), 16)
    return "test" if digest % TEST_MODULUS == 0 else "train"


def _digest(path: Path) -> tuple[str, int]:
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), len(data)


def _sidecar_source(log: Path) -> str:
    url = log.with_suffix(".url")
    if url.exists():
        return url.read_text().strip()
    facts = log.with_suffix(".json")
    if facts.exists():
        data = json.loads(facts.read_text())
        if "scenario" in data:
            return f"scenario:{data['scenario']}"
        return f"program:{data['program']}"
    raise ConfigError(f"{log}: no source beside it (.url or .json)")


def _entry(log: Path, reason: str, outcome: str, origin: str, split: str | None, base: Path) -> Entry:
    source = _sidecar_source(log)
    sha, size = _digest(log)
    return Entry(
        path=str(log.relative_to(base)),
        reason=reason,
        outcome=outcome,
        origin=origin,
        source=source,
        split=split or split_of(source),
        sha256=sha,
        bytes=size,
    )


def scan_corpus(corpora: Path = CORPORA) -> Iterator[Entry]:
    """Every log of the committed corpus, in a stable order."""
    base = corpora.parent
    for origin in ("public", "produced", "holdout"):
        for log in sorted((corpora / origin).glob("*/*.log")):
            outcome = "failed"
            split = "holdout" if origin == "holdout" else None
            yield _entry(log, log.parent.name, outcome, origin, split, base)
    for log in sorted((corpora / "passed").rglob("*.log")):
        yield _entry(log, NO_SIGNATURE, "passed", "passed", None, base)
    for log in sorted((corpora / "killed").rglob("*.log")):
        yield _entry(log, NO_SIGNATURE, "killed", "killed", "test", base)


def scan_labels(labels: Path) -> Iterator[Entry]:
    """Operators' corrections written by ``failclass label``: always training data."""
    for log in sorted(labels.glob("*/*.log")):
        sha, size = _digest(log)
        yield Entry(str(log.resolve()), log.parent.name, "failed", "label", f"label:{sha}", "train", sha, size)


def write_manifest(entries: list[Entry], path: Path = MANIFEST) -> None:
    path.write_text("".join(entry.to_json() + "\n" for entry in entries))


def read_manifest(path: Path = MANIFEST) -> list[Entry]:
    """A corpus manifest's entries. Their paths are relative to the checkout that holds the
    manifest (above its corpora/ folder); those of another checkout are made absolute."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no corpus manifest (a failclass checkout has one: corpora/manifest.jsonl)") from None
    entries = [Entry(**json.loads(line)) for line in lines if line.strip()]
    checkout = path.resolve().parent.parent
    if checkout == CORPORA.parent.resolve():
        return entries
    return [replace(e, path=str(checkout / e.path)) if not Path(e.path).is_absolute() else e for e in entries]


def corpus_hash(entries: list[Entry]) -> str:
    """One digest of what a model was trained on: every log's label, split and content."""
    digest = hashlib.sha256()
    for entry in sorted(entries, key=lambda e: e.sha256 + e.reason + e.split):
        digest.update(f"{entry.sha256} {entry.reason} {entry.split}\n".encode())
    return digest.hexdigest()


def resolve(entry: Entry, base: Path = CORPORA.parent) -> Path:
    path = Path(entry.path)
    return path if path.is_absolute() else base / path
