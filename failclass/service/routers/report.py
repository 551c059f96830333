"""GET /v1/report: Table 7, Table 6 and repeats per reason over the attempts in the store,
filtered as `failclass report` filters (the same Selection), optionally compared with
another period; as JSON, Markdown or the HTML page."""

from __future__ import annotations

import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from failclass.analytics.analysis import StoreSource, analyse, database_label
from failclass.analytics.selection import parse_comparison, parse_selection
from failclass.errors import InputError
from failclass.service.bodies import JsonRoute
from failclass.service.deps import ClassifierDep, MetricsDep, Reader, SettingsDep, StoreDep
from failclass.service.errors import STORED, documented
from failclass.service.fields import Moment, Period
from failclass.service.responses import ReportOut

router = APIRouter(prefix="/v1", route_class=JsonRoute, tags=["report"])
PLOTTING = threading.Lock()  # pyplot keeps global state: one page drawn at a time

Values = Annotated[list[str], Query()]


PAGES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The report: JSON by default, Markdown or the HTML page with `format`",
        "content": {"text/markdown": {"schema": {"type": "string"}}, "text/html": {"schema": {"type": "string"}}},
    }
}


@router.get("/report", response_model=ReportOut, responses={**PAGES, **documented(*STORED)})
def report(
    store: StoreDep,
    classifier: ClassifierDep,
    settings: SettingsDep,
    metrics: MetricsDep,
    _: Reader,
    since: Annotated[Moment | None, Query(description="ISO 8601 or a span before now: 7d, 12h, 90m")] = None,
    until: Annotated[Moment | None, Query(description="First time left out (as since); now by default")] = None,
    user: Values = [],  # noqa: B006 (FastAPI copies defaults)
    vc: Annotated[list[str], Query(description="Virtual cluster: Slurm partition, Kubernetes namespace")] = [],  # noqa: B006
    reason: Values = [],  # noqa: B006
    status: Values = [],  # noqa: B006
    compare_to: Annotated[Period | None, Query(description="'previous' (needs since) or START/END, each as since")] = None,
    format: Literal["json", "markdown", "html"] = "json",
) -> ReportOut | Response:
    taxonomy = classifier.ruleset.taxonomy
    try:
        selection = parse_selection(since, until, user, vc, reason, status)
        against = parse_comparison(compare_to, selection)
        source = StoreSource(store, database_label(settings.database_url))
        analysis = analyse(source, selection, taxonomy, against, read_logs=False)  # no path a client named is opened
    except InputError as exc:
        raise HTTPException(422, str(exc)) from None
    metrics.report_built(analysis.report.goodput)
    if format == "html":
        from failclass.analytics.html import to_html  # matplotlib loads only here

        with PLOTTING:
            return HTMLResponse(to_html(analysis, taxonomy))
    if format == "markdown":
        from failclass.analytics.render import to_markdown

        return PlainTextResponse(to_markdown(analysis), media_type="text/markdown; charset=utf-8")
    return ReportOut.model_validate(analysis.to_dict())
