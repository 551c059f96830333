"""Operators' corrections: `failclass label LOG REASON` keeps a copy of the log under its
true reason, and the next `failclass train` learns from it.

Labels live in ``<labels dir>/<reason>/<sha256 prefix>.log`` with a ``.json`` beside it
(who, when, where the log came from, a note). Labelling the same log again moves it to
the new reason: the latest correction wins. Only the last LIMITS.label_bytes of a log are
kept; the model reads no more than the end of a log anyway.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from failclass.errors import ConfigError, InputError
from failclass.inbound import utf8
from failclass.limits import LIMITS
from failclass.logs.text import BlockReader, open_log
from failclass.resources import CHECKOUT, user_data_dir

LABELS_ENV = "FAILCLASS_LABELS_DIR"


def labels_dir() -> Path:
    """FAILCLASS_LABELS_DIR, else corpora/labels in a checkout, else the user's data folder."""
    configured = os.environ.get(LABELS_ENV)
    if configured:
        return Path(configured)
    return CHECKOUT / "corpora" / "labels" if CHECKOUT else user_data_dir() / "labels"


def _last_bytes(path: Path) -> bytes:
    kept = b""
    with open_log(path) as stream:
        for block in BlockReader(stream):
            kept = (kept + block)[-LIMITS.label_bytes :]
    return kept


def add_label(log: Path, reason: str, known: set[str], directory: Path, note: str = "") -> Path:
    """Store ``log`` as an example of ``reason``; returns the stored copy."""
    return _store(_last_bytes(log), reason, known, directory, note, getpass.getuser(), str(log.resolve()))


def add_text_label(text: str, reason: str, known: set[str], directory: Path, note: str, by: str) -> Path:
    """Store a log given as text (an HTTP request) as an example of ``reason``."""
    data = utf8(text)[-LIMITS.label_bytes :]
    return _store(data, reason, known, directory, note, by, "request")


def _store(data: bytes, reason: str, known: set[str], directory: Path, note: str, by: str, original: str) -> Path:
    if reason not in known:
        raise ConfigError(f"unknown reason {reason!r}; one of: {', '.join(sorted(known))}")
    if not data.strip():
        raise InputError(f"{original}: empty log, nothing to learn from")
    name = hashlib.sha256(data).hexdigest()[:20]
    for earlier in directory.glob(f"*/{name}.*"):
        earlier.unlink()
    target = directory / reason / f"{name}.log"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    os.replace(partial, target)
    facts = {
        "reason": reason,
        "original": original,
        "labelled_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "by": by,
        "note": note,
    }
    target.with_suffix(".json").write_text(json.dumps(facts, indent=1) + "\n")
    return target
