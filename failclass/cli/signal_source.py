"""Where `waste report` and `waste watch` read their signals: SIGNALS files, or
``--prometheus URL`` with a range (``--start``/``--end`` for a report, ``--lookback``
before ``--now`` for the watch). The bearer token comes from ``--token-file`` or
FAILCLASS_PROMETHEUS_TOKEN, never from the command line."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from failclass.limits import LIMITS

F = TypeVar("F", bound=Callable[..., Any])
TOKEN_ENV = "FAILCLASS_PROMETHEUS_TOKEN"
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")


class Duration(click.ParamType):
    """Seconds, or a Prometheus duration: 15s, 2h, 1h30m, 7d."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        parts = _DURATION.findall(text)
        if re.fullmatch(r"\d+(\.\d+)?", text):
            seconds = float(text)
        elif parts and "".join(n + u for n, u in parts) == text:
            seconds = sum(float(n) * _UNITS[u] for n, u in parts)
        else:
            self.fail(f"{text!r} is not a duration (15s, 2h, 1h30m, 7d or seconds)", param, ctx)
        if seconds <= 0:
            self.fail(f"{text!r} is not above zero", param, ctx)
        return seconds


class Moment(click.ParamType):
    """An RFC 3339 / ISO 8601 time (without a zone: UTC) or epoch seconds."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{text!r} is not a time (2026-11-01T00:00:00Z or epoch seconds)", param, ctx)
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _options(recent: bool) -> list[Callable[[F], F]]:
    span = (
        [click.option("--lookback", type=Duration(), default="2h", show_default=True, help="With --prometheus: the span read.")]
        if recent
        else [
            click.option("--start", type=Moment(), help="With --prometheus: the range's start (RFC 3339 or epoch seconds)."),
            click.option("--end", type=Moment(), help="With --prometheus: the range's end (default: now)."),
        ]
    )
    return [
        click.option("--prometheus", metavar="URL", help="Read the DCGM exporter's metrics from this Prometheus server's API."),
        *span,
        click.option("--step", type=Duration(), default="15s", show_default=True, help="With --prometheus: the query step."),
        click.option("--match", default="", help='With --prometheus: label matchers narrowing the series: Hostname=~"gpu-a.*".'),
        click.option(
            "--token-file",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help=f"With --prometheus: a file holding a bearer token (else ${TOKEN_ENV}, if set).",
        ),
        click.option("--timeout", type=Duration(), default="30s", show_default=True, help="With --prometheus: per request."),
        click.option(
            "--chunk-points",
            type=click.IntRange(1, LIMITS.prometheus_points_per_series),
            default=LIMITS.prometheus_points_per_series,
            show_default=True,
            help="With --prometheus: at most this many steps per series in one query.",
        ),
        click.option(
            "--chunk-series",
            type=click.IntRange(min=1),
            default=LIMITS.prometheus_series_per_query,
            show_default=True,
            help="With --prometheus: a selector matching more series is asked a group of hosts of at most this many at a time.",
        ),
    ]


def signal_source(recent: bool = False) -> Callable[[F], F]:
    """Adds the --prometheus options to a command whose SIGNALS argument is optional; the
    command receives ``signals``: its files, or a PrometheusQuery."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs["signals"] = _source(kwargs, recent)
            return command(*args, **kwargs)

        for option in reversed(_options(recent)):
            wrapper = option(wrapper)
        return cast(F, wrapper)

    return decorate


def _source(kwargs: dict[str, Any], recent: bool) -> tuple[Path, ...] | Any:
    """The files, or the query the --prometheus options describe (usage errors exit 2)."""
    from failclass.waste.formats.prometheus_api import PrometheusQuery

    files, url = kwargs.pop("signals"), kwargs.pop("prometheus")
    step, match, token_file, timeout = (kwargs.pop(k) for k in ("step", "match", "token_file", "timeout"))
    points, series = kwargs.pop("chunk_points"), kwargs.pop("chunk_series")
    if recent:
        now = kwargs.get("now") or datetime.now(UTC)
        end = (now if now.tzinfo else now.replace(tzinfo=UTC)).timestamp()
        start = end - kwargs.pop("lookback")
    else:
        start, end = kwargs.pop("start"), kwargs.pop("end") or datetime.now(UTC).timestamp()
    if bool(files) == bool(url):
        raise click.UsageError("give SIGNALS files or --prometheus URL, one of the two")
    if not url:
        return files
    if not re.match(r"https?://", url):
        raise click.UsageError(f"--prometheus {url}: not an http:// or https:// URL")
    if start is None or start >= end:
        raise click.UsageError("--prometheus needs --start before --end" if start is not None else "--prometheus needs --start")
    token = token_file.read_text().strip() if token_file else os.environ.get(TOKEN_ENV) or None
    return PrometheusQuery(url, start, end, step, match, token, timeout, points, series)
