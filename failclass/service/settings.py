"""Service settings, validated at start: environment variables FAILCLASS_<NAME> or
arguments of ``failclass serve``. Every limit the service enforces is here."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from failclass.limits import LIMITS
from failclass.options import ClassifierOptions
from failclass.policy.config import POLICY_ENV
from failclass.store.repository import default_database_url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FAILCLASS_", extra="forbid")

    database_url: str = Field(default_factory=default_database_url, description="SQLAlchemy URL; SQLite file by default")
    tokens_file: Path | None = Field(default=None, description="JSON list of API tokens (name, sha256, scopes); none: no auth")
    policy_file: Path | None = Field(
        default=None,
        validation_alias=POLICY_ENV,  # the one name the hook and the service read
        description="operator policy overriding the built-in policy (FAILCLASS_POLICY)",
    )
    model: Path | None = Field(default=None, description="fallback model (.npz beside its .json); default the built-in one")
    no_model: bool = Field(default=False, description="rules only")
    model_threshold: float | None = Field(default=None, ge=0, le=1, description="the model's threshold; default its own")
    labels_dir: Path | None = Field(default=None, description="where POST /v1/labels keeps logs; default corpora/labels")
    max_request_bytes: int = Field(default=LIMITS.request_bytes, ge=1024, description="larger request bodies get 413")
    max_page: int = Field(default=LIMITS.page_rows, ge=1, description="largest `limit` a listing accepts")

    def classifier_options(self) -> ClassifierOptions:
        """Extra rule folders come from FAILCLASS_RULES_DIR, read by the rule loader."""
        return ClassifierOptions(model=self.model, no_model=self.no_model, threshold=self.model_threshold)

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, url: str) -> str:
        if not url.startswith(("sqlite", "postgresql")):
            raise ValueError("database_url must be a sqlite:// or postgresql:// URL")
        return url
