"""`failclass serve`, `db upgrade` and `token create`: the HTTP service and its state."""

from __future__ import annotations

import os
from pathlib import Path

import click

from failclass.cli.common import ConfigProblem, configured, options, warn
from failclass.cli.extras import needs


@click.command()
@click.option("--host", envvar="FAILCLASS_HOST", default="127.0.0.1", show_default=True)
@click.option("--port", envvar="FAILCLASS_PORT", default=8080, show_default=True, type=int)
@click.option("--workers", envvar="FAILCLASS_WORKERS", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--database-url", envvar="FAILCLASS_DATABASE_URL", help="SQLAlchemy URL (default: a SQLite file in ~/.local/share/failclass)."
)
@click.option(
    "--tokens-file",
    envvar="FAILCLASS_TOKENS_FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="API tokens; without one, no auth.",
)
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Policy overrides.")
@click.pass_context
@needs("service", reaches=("postgres",))
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    workers: int,
    database_url: str | None,
    tokens_file: Path | None,
    policy_file: Path | None,
) -> None:
    """Run the HTTP service (OpenAPI docs at /docs). Exit status 2: invalid settings or
    tokens file; 3: the store cannot be opened."""
    import uvicorn

    chosen = options(ctx)
    settings = {
        "FAILCLASS_DATABASE_URL": database_url,
        "FAILCLASS_TOKENS_FILE": str(tokens_file) if tokens_file else None,
        "FAILCLASS_POLICY": str(policy_file) if policy_file else None,
        "FAILCLASS_MODEL": str(chosen.model) if chosen.model else None,
        "FAILCLASS_NO_MODEL": "true" if chosen.no_model else None,
        "FAILCLASS_MODEL_THRESHOLD": str(chosen.threshold) if chosen.threshold is not None else None,
        "FAILCLASS_RULES_DIR": os.pathsep.join([os.environ.get("FAILCLASS_RULES_DIR", ""), *map(str, chosen.rules_dirs)]).strip(
            os.pathsep
        )
        or None,
    }
    os.environ.update({k: v for k, v in settings.items() if v is not None})
    if tokens_file is None and host not in ("127.0.0.1", "localhost", "::1"):
        warn(f"no --tokens-file: anyone who reaches {host}:{port} can read and write")
    check_before_serving()
    from failclass.service.metrics import shared_between_workers

    with shared_between_workers():  # every worker's metrics in one folder: a scrape counts them all
        uvicorn.run(
            "failclass.service.app:app_from_environment",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            http="failclass.service.protocol:JsonErrorsProtocol",
        )


def check_before_serving() -> None:
    """What each worker would otherwise find out alone, said once in one line: invalid
    settings or tokens file (exit 2), a store that cannot be opened (StoreUnavailable,
    exit 3); a store that cannot be written is a warning (classify still works, what
    records and /readyz answer 503)."""
    from pydantic import ValidationError

    from failclass.service.auth import load_tokens, too_open
    from failclass.service.settings import Settings
    from failclass.store.database import UNAVAILABLE
    from failclass.store.reach import cause, masked
    from failclass.store.repository import Store

    try:
        settings = Settings()
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise ConfigProblem(f"FAILCLASS_{'_'.join(map(str, problem['loc'])).upper()}: {problem['msg']}") from None
    tokens_file = settings.tokens_file
    if tokens_file is not None:
        configured(lambda: load_tokens(tokens_file))
        loose = too_open(tokens_file)
        if loose:
            warn(loose)
    store = Store.open(settings.database_url)
    try:
        store.check_writable()
    except UNAVAILABLE as exc:
        warn(
            f"store {masked(settings.database_url)} cannot record: {cause(exc)};"
            " serving, but what records answers 503 (so does /readyz)"
        )
    store.engine.dispose()


@click.group()
def db() -> None:
    """The service's database."""


@db.command("upgrade")
@click.option("--database-url", envvar="FAILCLASS_DATABASE_URL", help="SQLAlchemy URL (default: the service's SQLite file).")
@needs(reaches=("postgres",))
def db_upgrade(database_url: str | None) -> None:
    """Apply the schema migrations (the service also does at start)."""
    from failclass.store.database import open_engine
    from failclass.store.migrate import current
    from failclass.store.reach import default_database_url, masked, reaching

    url = database_url or default_database_url()
    engine = open_engine(url)
    with reaching(url):
        revision = current(engine)
    click.echo(f"{masked(url)}: schema at revision {revision}")


@click.group()
def token() -> None:
    """API tokens for the service."""


@token.command("create")
@click.argument("name")
@click.option("--scopes", default="read", show_default=True, help="Comma-separated: read, write.")
@click.option("--file", "path", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The tokens file.")
@needs("service")
def token_create(name: str, scopes: str, path: Path) -> None:
    """Create a token; it is printed once, only its SHA-256 is kept."""
    from failclass.service.auth import create_token

    try:
        secret = configured(lambda: create_token(path, name, [s.strip() for s in scopes.split(",") if s.strip()]))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(secret)
