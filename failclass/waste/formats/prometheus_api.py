"""DCGM metrics straight from a Prometheus server's HTTP API, a time window at a time.

``/api/v1/series`` first tells how many series the selector matches over the range; then
``/api/v1/query_range`` is asked in chunks. By time: at most ``chunk_points`` steps per
series (Prometheus refuses more than 11,000), fewer where many series share a window, so
that one window over every series holds at most ``LIMITS.prometheus_window_points``
readings. By series: where the selector matches more than ``chunk_series`` series, the
hosts (``Hostname``, else ``instance``) are asked in groups of at most that many series.
Each answer is read by the range-query reader (failclass.waste.formats.prometheus).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx

from failclass.errors import InputError
from failclass.limits import LIMITS
from failclass.waste.formats.prometheus import METRICS, read_answers
from failclass.waste.samples import GpuSamples, concat

HOST_LABELS = ("Hostname", "instance")  # the reader's node, in its order
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


@dataclass(frozen=True)
class PrometheusQuery:
    """Where and what to ask: the server, the range (epoch seconds) and how to chunk it."""

    url: str
    start: float
    end: float
    step_s: float = 15.0
    match: str = ""  # label matchers added to the DCGM metrics' selector: Hostname=~"gpu-.*",cluster="a"
    token: str | None = field(default=None, repr=False)  # sent as a bearer token
    timeout_s: float = 30.0
    chunk_points: int = LIMITS.prometheus_points_per_series
    chunk_series: int = LIMITS.prometheus_series_per_query


@dataclass(frozen=True)
class Window:
    """One chunk of time: its first and last evaluation, in milliseconds."""

    first_ms: int
    last_ms: int


def selector(match: str, group: str = "") -> str:
    """The DCGM metrics, narrowed by the operator's matchers and a host group's."""
    extra = [part for part in (match.strip().removeprefix("{").removesuffix("}").strip(), group) if part]
    return "{" + ",".join([f'__name__=~"{"|".join(METRICS)}"', *extra]) + "}"


def windows(query: PrometheusQuery, series: int) -> tuple[int, Iterator[Window]]:
    """How many windows cover the range, and the windows: consecutive steps of one grid,
    at most ``chunk_points`` of them and at most the window budget over ``series``."""
    step_ms, first_ms = _step_ms(query), round(query.start * 1000)
    points = (round(query.end * 1000) - first_ms) // step_ms + 1
    per_window = max(1, min(query.chunk_points, LIMITS.prometheus_window_points // max(1, series)))
    count = -(-points // per_window)

    def each() -> Iterator[Window]:
        for begin in range(0, points, per_window):
            yield Window(first_ms + begin * step_ms, first_ms + (min(begin + per_window, points) - 1) * step_ms)

    return count, each()


def host_groups(found: list[dict[str, str]], limit: int) -> list[str]:
    """The matchers of each query: one empty one where the series fit one query, else
    groups of hosts of at most ``limit`` series (a host with more is a group alone)."""
    if len(found) <= limit:
        return [""]
    counts: dict[tuple[str, str], int] = {}
    for labels in found:
        key = next(((name, labels[name]) for name in HOST_LABELS if labels.get(name)), ("", ""))
        counts[key] = counts.get(key, 0) + 1
    groups: list[str] = []
    for label in HOST_LABELS:
        batch: list[str] = []
        size = 0
        for (name, value), count in sorted(counts.items()):
            if name != label:
                continue
            if batch and size + count > limit:
                groups.append(_hosts(label, batch))
                batch, size = [], 0
            batch.append(value)
            size += count
        if batch:
            groups.append(_hosts(label, batch))
    return groups


def _hosts(label: str, values: list[str]) -> str:
    """A regex matcher for these hosts (series under ``instance`` are those without ``Hostname``)."""
    pattern = "|".join(_RE2_SPECIAL.sub(r"\\\1", value) for value in values)
    quoted = pattern.replace("\\", "\\\\").replace('"', '\\"')
    return f'{label}=~"{quoted}"' + (',Hostname=""' if label != "Hostname" else "")


def fetch(query: PrometheusQuery) -> Iterator[tuple[float, GpuSamples]]:
    """Each window's end (epoch seconds) and its readings over every series, in time order."""
    headers = {"Authorization": f"Bearer {query.token}"} if query.token else {}
    with httpx.Client(base_url=query.url.rstrip("/"), headers=headers, timeout=query.timeout_s) as client:
        api = _Api(client, query)
        found = api.series()
        if not found:
            between = f"{query.start:.0f} and {query.end:.0f}"
            raise InputError(f"{query.url}: no DCGM series match {selector(query.match)} between {between}")
        groups = host_groups(found, query.chunk_series)
        count, spans = windows(query, len(found))
        if count * len(groups) > LIMITS.prometheus_queries:
            raise InputError(
                f"{query.url}: {count * len(groups):,} range queries ({len(found):,} series) is over the limit of "
                f"{LIMITS.prometheus_queries:,}; give a larger --step or a shorter range"
            )
        for span in spans:
            yield span.last_ms / 1000, concat([api.range(group, span) for group in groups])


class _Api:
    """The two calls, their failures each one line (InputError)."""

    def __init__(self, client: httpx.Client, query: PrometheusQuery) -> None:
        self.client, self.query = client, query

    def series(self) -> list[dict[str, str]]:
        q = self.query
        answer = self._post("/api/v1/series", {"match[]": selector(q.match), "start": f"{q.start:.3f}", "end": f"{q.end:.3f}"})
        found = answer.get("data")
        if not isinstance(found, list):
            raise InputError(f"{q.url}/api/v1/series: the answer has no list of series")
        return found

    def range(self, group: str, span: Window) -> GpuSamples:
        form = {
            "query": selector(self.query.match, group),
            "start": f"{span.first_ms / 1000:.3f}",
            "end": f"{span.last_ms / 1000:.3f}",
            "step": str(_step_ms(self.query) / 1000),
        }
        answer = self._post("/api/v1/query_range", form)
        return read_answers([answer], f"{self.query.url} query_range {form['query']} {form['start']}..{form['end']}", empty=True)

    def _post(self, path: str, form: dict[str, str]) -> dict[str, object]:
        where = f"{self.query.url.rstrip('/')}{path}"
        try:
            reply = self.client.post(path, data=form)
        except httpx.TimeoutException:
            raise InputError(f"{where}: no answer within {self.query.timeout_s:g} s (--timeout)") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise InputError(f"{where}: cannot reach the server: {_line(str(exc))}") from None
        try:
            body = reply.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("status") == "error":
            raise InputError(f"{where}: HTTP {reply.status_code}: {body.get('errorType')}: {_line(str(body.get('error')))}")
        if reply.status_code >= 400:
            raise InputError(f"{where}: HTTP {reply.status_code} {reply.reason_phrase}: {_line(reply.text)[:200]}")
        if not isinstance(body, dict):
            raise InputError(f"{where}: the answer is not Prometheus API JSON (is {self.query.url} a Prometheus server?)")
        return body


def _step_ms(query: PrometheusQuery) -> int:
    return max(1, round(query.step_s * 1000))


def _line(text: str) -> str:
    return " ".join(text.split())
