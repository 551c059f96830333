"""What every command shares: exit codes, the classifier options given to the group,
and how library errors become click errors. Exit status: 0 success, 1 an input could
not be read, 2 a usage or configuration error (click's own usage errors included), 3 the
store cannot be opened or used."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from failclass.classifier import Classifier
from failclass.errors import ConfigError
from failclass.matching.rules import RuleSet
from failclass.model.artifact import LoadedModel
from failclass.options import ClassifierOptions

if TYPE_CHECKING:
    from failclass.executors import Executor
    from failclass.store.records import Records

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_STORE = 3


class ConfigProblem(click.ClickException):
    """Invalid rules, prefixes, taxonomy, model or policy: reported like a usage error."""

    exit_code = EXIT_USAGE


class StoreProblem(click.ClickException):
    """A store that cannot be opened or used (failclass.store.StoreUnavailable)."""

    exit_code = EXIT_STORE


def warn(text: str) -> None:
    click.echo(f"warning: {text}", err=True)


def options(ctx: click.Context) -> ClassifierOptions:
    """The classifier options given to `failclass` itself (--rules-dir, --model, ...)."""
    found = ctx.find_object(ClassifierOptions)
    return found if found is not None else ClassifierOptions()


def configured(build: Callable[[], T]) -> T:
    """``build()``, with a configuration error reported as exit status 2."""
    try:
        return build()
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


def ruleset(ctx: click.Context) -> RuleSet:
    return configured(options(ctx).ruleset)


def classifier(ctx: click.Context, with_model: bool = False) -> Classifier:
    """The classifier as every command builds it (the model only where it is used)."""
    return configured(lambda: options(ctx).build(warn, with_model))


def fallback(ctx: click.Context, rules: RuleSet, required: bool = False) -> LoadedModel | None:
    return configured(lambda: options(ctx).fallback(rules, warn, required))


def input_failure(ctx: click.Context, problem: Exception) -> None:
    """An input that cannot be read: said on stderr, exit status 1."""
    click.echo(f"error: {problem}", err=True)
    ctx.exit(EXIT_INPUT)


def check_corpus(manifest: Path, needs: str) -> None:
    """Where ``manifest`` is missing, one line saying what ``needs`` the corpus and how to
    point at it (exit status 2)."""
    if not manifest.is_file():
        raise ConfigProblem(
            f"{manifest}: no corpus manifest: {needs} the labelled corpus of a failclass checkout; run it in "
            "a checkout, or give the checkout's corpora/manifest.jsonl with --manifest"
        )


def database_option(help: str = "The store (default: the service's SQLite file).") -> Callable[[F], F]:
    """``--database-url`` (or FAILCLASS_DATABASE_URL): the store a command reads or records in."""
    return click.option("--database-url", envvar="FAILCLASS_DATABASE_URL", help=help)


@contextmanager
def records_at(database_url: str | None) -> Iterator[Records]:
    """The store at ``database_url`` (default: the service's), opened by its driver where it
    can be; a store that cannot be reached or used is exit status 3 (failclass.store.reach)."""
    from failclass.store.direct import open_records
    from failclass.store.reach import default_database_url, reaching

    url = database_url or default_database_url()
    with reaching(url):
        yield open_records(url)


def executor_options(what: str, processes: int | None = None) -> Callable[[F], F]:
    """--executor, --scheduler and --processes (by default ``processes``, else all cores):
    where ``what`` runs."""

    def decorate(command: F) -> F:
        for option in reversed(
            (
                click.option(
                    "--executor",
                    type=click.Choice(["local", "dask"]),
                    default="local",
                    show_default=True,
                    help=f"Where {what}: local processes, or the workers of a Dask cluster.",
                ),
                click.option("--scheduler", help="Dask scheduler address (tcp://host:8786) for --executor dask."),
                click.option(
                    "--processes",
                    type=click.IntRange(1, 256),
                    default=processes or os.cpu_count() or 1,
                    show_default=processes or "all cores",
                ),
            )
        ):
            command = option(command)
        return command

    return decorate


@contextmanager
def executor_at(executor: str, scheduler: str | None, processes: int) -> Iterator[Executor | None]:
    """The executor the options name (none for one local process); a Dask one needs --scheduler."""
    from failclass import executors

    if dask_scheduler(executor, scheduler):
        assert scheduler is not None
        with executors.dask_executor(scheduler) as client:
            yield client
    elif processes > 1:
        with executors.local_executor(processes) as pool:
            yield pool
    else:
        yield None


def dask_scheduler(executor: str, scheduler: str | None) -> str | None:
    """The scheduler's address for --executor dask (a usage error without one); else None."""
    if executor == "dask" and not scheduler:
        raise click.UsageError("--executor dask needs --scheduler ADDRESS")
    return scheduler if executor == "dask" else None
