"""How a range is cut into Prometheus queries: windows of one step grid, host groups of a
bounded number of series, the selector of each, and the command's durations and times."""

from __future__ import annotations

import click
import pytest

from failclass.cli.signal_source import Duration, Moment
from failclass.limits import LIMITS
from failclass.waste.formats.prometheus_api import PrometheusQuery, host_groups, selector, windows

NAMES = '__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE|DCGM_FI_DEV_FB_RESERVED|DCGM_FI_PROF_GR_ENGINE_ACTIVE"'


def test_windows_cover_the_grid_of_one_query_without_overlap():
    query = PrometheusQuery("http://p", start=1000.0, end=1000.0 + 15 * 99, step_s=15, chunk_points=30)
    count, spans = windows(query, series=4)
    found = list(spans)
    assert count == len(found) == 4
    steps = [t for w in found for t in range(w.first_ms, w.last_ms + 1, 15_000)]
    assert steps == list(range(1_000_000, 1_000_000 + 15_000 * 100, 15_000))
    assert [(w.last_ms - w.first_ms) // 15_000 + 1 for w in found] == [30, 30, 30, 10]


def test_many_series_shorten_a_window_to_the_memory_budget():
    query = PrometheusQuery("http://p", start=0.0, end=15.0 * 20_000, step_s=15)
    series = LIMITS.prometheus_window_points // 100
    count, spans = windows(query, series)
    first = next(spans)
    assert (first.last_ms - first.first_ms) // 15_000 + 1 == 100 and count == 201
    count, _ = windows(query, 1)
    assert count == 2  # at most Prometheus's 11,000 steps


def test_series_are_grouped_by_host_under_the_limit_and_hosts_without_hostname_by_instance():
    found = [{"Hostname": "gpu-a.x", "gpu": str(g)} for g in range(3)]
    found += [{"Hostname": "gpu-b", "gpu": "0"}, {"Hostname": "gpu-c", "gpu": "0"}, {"instance": "10.0.0.5:9400", "gpu": "0"}]
    assert host_groups(found, 6) == [""]
    assert host_groups(found, 3) == [
        'Hostname=~"gpu-a\\\\.x"',
        'Hostname=~"gpu-b|gpu-c"',
        'instance=~"10\\\\.0\\\\.0\\\\.5:9400",Hostname=""',
    ]
    assert host_groups(found, 1)[0] == 'Hostname=~"gpu-a\\\\.x"'  # a host over the limit is a group alone


def test_the_selector_adds_the_operator_matchers_with_or_without_braces():
    assert selector("") == "{" + NAMES + "}"
    assert selector('{cluster="a"}', 'Hostname=~"h"') == "{" + NAMES + ',cluster="a",Hostname=~"h"}'
    assert selector(' cluster="a" ') == "{" + NAMES + ',cluster="a"}'


def test_durations_and_times_read_as_prometheus_writes_them():
    assert [Duration().convert(text, None, None) for text in ("15s", "2h", "1h30m", "90", "500ms")] == [15, 7200, 5400, 90, 0.5]
    assert Moment().convert("2026-11-01T00:00:00Z", None, None) == Moment().convert("2026-11-01T00:00:00", None, None)
    assert Moment().convert("1793491200", None, None) == 1793491200.0
    for bad in ("15x", "0s", "h"):
        with pytest.raises(click.BadParameter):
            Duration().convert(bad, None, None)
    with pytest.raises(click.BadParameter):
        Moment().convert("yesterday", None, None)
