"""MIG profiles per GPU model (``failclass/data/waste/mig_profiles.yaml``, each model with
NVIDIA's page that lists them): the slices right-sizing advice may offer a job instead of a
whole GPU. A model is named as the GPU model table names it (failclass.waste.memory), so a
GPU's reported name finds its profiles through that table's patterns."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from failclass.errors import ConfigError
from failclass.resources import PACKAGE_DATA
from failclass.schema import Invalid, allowed, load
from failclass.waste.memory import MIB_PER_GB, gpu_models, model_of

MIG_PROFILES = PACKAGE_DATA / "waste" / "mig_profiles.yaml"
_NAME = re.compile(r"(\d+)g\.(\d+)gb")


@dataclass(frozen=True)
class MigProfile:
    """One GPU instance profile: ``<compute slices>g.<memory GB>gb``."""

    name: str = allowed(fullmatch=_NAME.pattern)
    memory_gb: float = allowed(gt=0)
    compute_slices: int = allowed(ge=1)

    def __post_init__(self) -> None:
        match = _NAME.fullmatch(self.name)
        assert match is not None  # the schema checked it
        if (int(match.group(1)), int(match.group(2))) != (self.compute_slices, round(self.memory_gb)):
            raise Invalid(f"{self.name} says {match.group(1)} compute slices and {match.group(2)} GB")

    @property
    def mib(self) -> float:
        return self.memory_gb * MIB_PER_GB


@dataclass(frozen=True)
class MigModel:
    """A MIG-capable GPU model's profiles; the whole-GPU one (all ``slices``) is among them."""

    model: str
    source: str = allowed(fullmatch=r"https://\S+")
    slices: int = allowed(ge=2)
    profiles: tuple[MigProfile, ...] = allowed(unique="name")

    def __post_init__(self) -> None:
        if any(p.compute_slices > self.slices for p in self.profiles):
            raise Invalid(f"a profile has more than the GPU's {self.slices} compute slices", "profiles")
        if not any(p.compute_slices == self.slices for p in self.profiles):
            raise Invalid(f"no whole-GPU profile ({self.slices}g)", "profiles")

    @property
    def whole(self) -> MigProfile:
        return max(self.profiles, key=lambda p: (p.compute_slices, p.memory_gb))

    def share(self, profile: MigProfile) -> float:
        """The part of the GPU a profile takes: its compute or its memory, the larger."""
        return max(profile.compute_slices / self.slices, profile.memory_gb / self.whole.memory_gb)


@dataclass(frozen=True)
class MigTable:
    models: tuple[MigModel, ...] = allowed(unique="model")


@functools.cache
def mig_models(path: Path = MIG_PROFILES) -> dict[str, MigModel]:
    """GPU model name -> its profiles; a model the GPU model table lacks is refused."""
    table = load(path, MigTable, "the MIG profile table")
    known = {m.name for m in gpu_models()}
    for index, row in enumerate(table.models):
        if row.model not in known:
            raise ConfigError(f"{path}: models[{index}].model: {row.model!r} is not a name in the GPU model table")
    return {row.model: row for row in table.models}


def profiles_of(reported: str) -> MigModel | None:
    """The MIG profiles of the GPU a reading names (nvidia-smi's ``name``, DCGM's
    ``modelName``), if its model is known and MIG-capable."""
    model = model_of(reported) if reported else None
    return mig_models().get(model.name) if model else None
