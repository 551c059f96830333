"""The cache of compiled rules: files in FAILCLASS_CACHE_DIR (else the XDG cache folder),
each named by a hash of what it was built from, so that a start whose rules have not
changed reads them back instead of building them: the Hyperscan databases
(failclass.matching.matcher, .structure) and the validated rule set
(failclass.matching.rules); besides them, the JSON Schema the scheduler hook checks
attempt facts against (failclass.hook.facts).

Best effort both ways: a file that is missing, unreadable or damaged (each carries the
SHA-256 of its contents) is ignored and rebuilt, and a folder that cannot be written
only costs the next start the same build. Neither ever fails a command.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

CACHE_ENV = "FAILCLASS_CACHE_DIR"
CACHE_KEEP = 8  # files of each kind kept (built-in rules, operator folders, recent edits)

log = logging.getLogger(__name__)


def cache_dir() -> Path | None:
    """Where compiled rules are kept: FAILCLASS_CACHE_DIR, else the XDG cache; None for a
    user without a home (then every start builds them)."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    try:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "failclass"
    except RuntimeError:  # Path.home(): no HOME and no passwd entry
        return None


def read(name: str) -> bytes | None:
    """The contents kept under ``name``, if the file is there and intact."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        data = (folder / name).read_bytes()
    except OSError:
        return None
    digest, payload = data[:32], data[32:]
    if hashlib.sha256(payload).digest() != digest:
        log.debug("ignoring the damaged cache file %s", folder / name)
        return None
    return payload


def write(name: str, payload: bytes) -> None:
    """Keep ``payload`` under ``name`` (``<kind>-<hash>.<suffix>``), and only the newest
    CACHE_KEEP files of its kind."""
    folder = cache_dir()
    if folder is None:
        return
    kind, suffix = name.split("-", 1)[0], Path(name).suffix
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
            out.write(hashlib.sha256(payload).digest() + payload)
        os.replace(out.name, folder / name)
        older = sorted(folder.glob(f"{kind}-*{suffix}"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in older[CACHE_KEEP:]:
            stale.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("cannot keep %s in the cache: %s", name, exc)
