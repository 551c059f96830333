"""Which optional extra a command needs, said in one line instead of an ImportError.

The core install (``pip install failclass``) runs ``classify``, ``rules`` and every mode
of ``hook``; the other commands name their extra, as pyproject.toml's
``[project.optional-dependencies]`` does. A command declares the extras it always needs
(checked before it runs) and those it reaches only for some inputs (a postgresql://
URL, a Parquet file, an HTML page): a module of either that is missing exits with
status 2 (a configuration error, as in failclass.cli.common) and the line
``failclass serve needs the 'service' extra: pip install 'failclass[service]'``."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from failclass.cli.common import EXIT_USAGE

# extra -> the top-level modules of its libraries that failclass imports
EXTRAS: dict[str, tuple[str, ...]] = {
    "report": ("matplotlib", "jinja2", "pyarrow"),
    "waste": ("matplotlib", "jinja2", "pyarrow"),
    "service": ("fastapi", "fastapi_offline", "starlette", "uvicorn", "pydantic_settings", "prometheus_client"),
    "postgres": ("psycopg",),
    "batch": ("zstandard", "fsspec", "distributed", "dask", "pyarrow", "matplotlib", "jinja2"),
    "train": ("sklearn", "scipy"),
    "kubernetes": ("kubernetes", "urllib3"),
}

Params = ParamSpec("Params")
Result = TypeVar("Result")


class MissingExtra(click.ClickException):
    """An optional library the command needs is not installed."""

    exit_code = EXIT_USAGE

    def __init__(self, command: str, extra: str) -> None:
        super().__init__(f"{command} needs the '{extra}' extra: pip install 'failclass[{extra}]'")


def missing_modules(extra: str) -> list[str]:
    """The extra's modules that cannot be imported here (found without importing them)."""
    return [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]


def needs(*extras: str, reaches: tuple[str, ...] = ()) -> Callable[[Callable[Params, Result]], Callable[Params, Result]]:
    """Decorates a click command's function (below its @click decorators): ``extras``
    are checked before it runs, ``reaches`` name the module it failed to import."""
    unknown = set(extras + reaches) - EXTRAS.keys()
    if unknown:
        raise ValueError(f"unknown extras: {sorted(unknown)}")

    def decorate(command: Callable[Params, Result]) -> Callable[Params, Result]:
        @functools.wraps(command)
        def checked(*args: Params.args, **kwargs: Params.kwargs) -> Result:
            path = click.get_current_context().command_path
            for extra in extras:
                if missing_modules(extra):
                    raise MissingExtra(path, extra)
            try:
                return command(*args, **kwargs)
            except ModuleNotFoundError as exc:
                module = (exc.name or "").split(".")[0]
                providing = [name for name in extras + reaches if module in EXTRAS[name]]
                if not providing:
                    raise
                raise MissingExtra(path, providing[0]) from None

        return checked

    return decorate
