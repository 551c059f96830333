"""Where the project's data lives: the checkout failclass runs from (an editable install)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIGNATURES = ROOT / "signatures"
CORPORA = ROOT / "corpora"
MODELS = ROOT / "models"
POLICY = ROOT / "policy"
DATA = ROOT / "data"
