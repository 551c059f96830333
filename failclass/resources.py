"""Where failclass's data lives.

Packaged with the code (read through importlib.resources, so a wheel installed anywhere
finds them): the rules, taxonomy and prefixes, the fallback model and its metadata, the
default policy, the Philly tables. Only in a checkout: the corpora that train and
evaluate the model (``CHECKOUT`` is None in an installed wheel).
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

PACKAGE_DATA = Path(str(files("failclass") / "data"))
SIGNATURES = PACKAGE_DATA / "signatures"
MODELS = PACKAGE_DATA / "models"
POLICY = PACKAGE_DATA / "policy"
PHILLY = PACKAGE_DATA / "philly"

_parent = PACKAGE_DATA.parent.parent
CHECKOUT: Path | None = _parent if (_parent / "corpora" / "manifest.jsonl").is_file() else None
CORPORA = (CHECKOUT or Path.cwd()) / "corpora"


def user_data_dir() -> Path:
    """failclass's folder in the user's data home (XDG_DATA_HOME, else ~/.local/share)."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "failclass"
