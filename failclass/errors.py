"""One root exception and its families; the CLI maps them to exit codes."""

from __future__ import annotations


class FailclassError(Exception):
    """Root of every error failclass raises on purpose."""


class ConfigError(FailclassError):
    """Rules, prefixes, taxonomy or settings are invalid; nothing should start."""


class RuleError(ConfigError):
    """A rule file is invalid; names the file, the rule and the field."""

    def __init__(self, path: str, rule_id: str | None, field: str | None, message: str) -> None:
        where = path
        if rule_id:
            where += f": rule {rule_id}"
        if field:
            where += f": field '{field}'"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.rule_id = rule_id
        self.field = field


class ModelError(ConfigError):
    """A model artifact that is missing, damaged or made for other library versions."""


class InputError(FailclassError):
    """A log cannot be read (missing, a directory, unreadable)."""


class DamagedMember(InputError):
    """An archive member that cannot be read whole: the batch reports it and goes on."""


class ServiceRefused(FailclassError):
    """The failclass service answered 4xx: a problem with the request, not with the service."""


class IdempotencyConflict(FailclassError):
    """An idempotency key reused for another request: the first one's answer does not fit."""
