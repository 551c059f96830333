"""Each job's log found in a folder of logs by the job's name in the file's: Slurm's
``slurm-<job>.out`` (and ``-%x-%j``, ``_<task>`` forms), ``<namespace>_<pod>.log`` as
collected from Kubernetes, ``<job>.log``. A name counts where it is the whole file name
(without its extensions) or one end of it after a ``-``, ``_`` or ``.``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from failclass.errors import InputError
from failclass.limits import LIMITS
from failclass.waste.allocation import JobAllocation

SEPARATORS = "-_."
SUFFIXES = (".gz", ".out", ".err", ".log", ".txt")


def find_logs(folder: Path, jobs: Iterable[JobAllocation]) -> dict[str, Path]:
    """Job -> its log in ``folder`` (searched to any depth), for the jobs the index names."""
    index: dict[str, Path] = {}
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    if len(files) > LIMITS.waste_log_files:
        raise InputError(f"{folder}: {len(files):,} files; at most {LIMITS.waste_log_files:,} logs are searched")
    for path in files:
        for key in _keys(_stem(path.name)):
            index.setdefault(key, path)
    found = {}
    for job in jobs:
        names = (job.job, *job.aliases)
        keys = [key for name in names for key in (name, name.replace("/", "_"), name.rsplit("/", 1)[-1])]
        match = next((index[key] for key in keys if key in index), None)
        if match is not None:
            found[job.job] = match
    return found


def _stem(name: str) -> str:
    while name.endswith(SUFFIXES):
        name = name.rsplit(".", 1)[0]
    return name


def _keys(stem: str) -> set[str]:
    """The stem, and each part of it before or after a separator."""
    keys = {stem}
    for at, char in enumerate(stem):
        if char in SEPARATORS:
            keys.update(part for part in (stem[:at], stem[at + 1 :]) if part)
    return keys
