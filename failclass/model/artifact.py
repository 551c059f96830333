"""Saving and loading the trained fallback model with the metadata that vouches for it.

The model is plain arrays in numpy's .npz format, read without pickle (loading runs no
code) and only after the metadata JSON beside it checks out: format, the SHA-256 of the
.npz file, and classes that the taxonomy knows. Reading the arrays (numpy alone, no
scikit-learn) waits until a log needs the model: most logs have an explicit signature
and never do.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from failclass.errors import ModelError
from failclass.resources import MODELS

if TYPE_CHECKING:
    from failclass.model.estimator import FailureTextModel

BUILTIN_MODEL = MODELS / "fallback.npz"
MODEL_ENV = "FAILCLASS_MODEL"
FORMAT = 2  # 2: numpy arrays (.npz); 1 was a joblib pickle


@dataclass
class LoadedModel:
    """A checked model artifact; ``model`` unpickles it on first use (thread-safe)."""

    path: Path
    threshold: float
    metadata: dict[str, Any]
    payload: bytes = field(repr=False)
    _model: FailureTextModel | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def model(self) -> FailureTextModel:
        with self._lock:
            if self._model is None:
                self._model = _read_arrays(self.payload, self.path)
                self.payload = b""
            return self._model

    def with_threshold(self, threshold: float) -> LoadedModel:
        return LoadedModel(self.path, threshold, self.metadata, self.payload, self._model)

    @classmethod
    def fitted(cls, model: FailureTextModel, threshold: float) -> LoadedModel:
        """A model fitted in this process (a cross-validation fold), never saved."""
        return cls(Path("<fitted in memory>"), threshold, {}, b"", model)


def _read_arrays(payload: bytes, path: Path) -> FailureTextModel:
    """The model from its arrays (numpy's format, never pickle: loading runs no code)."""
    import numpy as np

    from failclass.model.estimator import FailureTextModel

    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
            return FailureTextModel.from_arrays({name: arrays[name] for name in arrays.files})
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ModelError(f"{path}: not a failclass model ({exc}); retrain it with `failclass train`") from None


def metadata_path(model_path: Path) -> Path:
    return model_path.with_suffix(".json")


def library_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {
        "failclass": version("failclass"),
        "scikit-learn": version("scikit-learn"),
        "numpy": version("numpy"),
        "scipy": version("scipy"),
        "python": platform.python_version(),
    }


def save(model: FailureTextModel, path: Path, threshold: float, facts: dict[str, Any]) -> dict[str, Any]:
    """Write the model's arrays (.npz) and its metadata JSON; returns the metadata."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    with partial.open("wb") as handle:
        np.savez_compressed(handle, allow_pickle=False, **model.to_arrays())
    sha = hashlib.sha256(partial.read_bytes()).hexdigest()
    metadata = {
        "format": FORMAT,
        "file": path.name,
        "sha256": sha,
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": library_versions(),
        "classes": [str(c) for c in model.classes_],
        "threshold": threshold,
        "params": model.get_params(),
        **facts,
    }
    os.replace(partial, path)
    metadata_path(path).write_text(json.dumps(metadata, indent=1, sort_keys=True) + "\n")
    return metadata


def check_metadata(metadata: dict[str, Any], data: bytes, known_reasons: set[str], where: Path) -> None:
    retrain = "retrain it with `failclass train`"
    if metadata.get("format") != FORMAT:
        raise ModelError(f"{where}: model format {metadata.get('format')!r}, this failclass reads {FORMAT}; {retrain}")
    if hashlib.sha256(data).hexdigest() != metadata.get("sha256"):
        raise ModelError(f"{where}: the model file does not match the SHA-256 in its metadata (damaged or replaced)")
    unknown = set(metadata.get("classes", [])) - known_reasons
    if unknown:
        raise ModelError(f"{where}: classes unknown to the taxonomy: {sorted(unknown)}")


def load(path: Path, known_reasons: set[str]) -> LoadedModel:
    """Check a model's metadata and keep its verified bytes; ModelError says what is wrong."""
    meta_file = metadata_path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ModelError(f"{path}: no model file (train one with `failclass train`)") from None
    try:
        metadata = json.loads(meta_file.read_text())
    except FileNotFoundError:
        raise ModelError(f"{meta_file}: the model has no metadata beside it; refusing to load it") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{meta_file}: not valid JSON: {exc}") from None
    check_metadata(metadata, data, known_reasons, path)
    return LoadedModel(path, float(metadata["threshold"]), metadata, data)


def load_configured(
    explicit: Path | None, known_reasons: set[str], warn: Callable[[str], None], required: bool = False
) -> LoadedModel | None:
    """The model to classify with: ``explicit`` (else FAILCLASS_MODEL, else the built-in
    one). A model asked for by name, or ``required``, must load (ModelError); the built-in
    one, if it cannot, is reported through ``warn`` and classification goes on with rules
    only (None)."""
    path, named = (explicit, True) if explicit else configured_path()
    try:
        return load(path, known_reasons)
    except ModelError as exc:
        if named or required:
            raise
        warn(f"{exc}; classifying with rules only")
        return None


def configured_path() -> tuple[Path, bool]:
    """The model to use and whether it was asked for explicitly (FAILCLASS_MODEL)."""
    configured = os.environ.get(MODEL_ENV)
    return (Path(configured), True) if configured else (BUILTIN_MODEL, False)
