"""`waste report --prometheus` and `waste watch --prometheus` against a real Prometheus:
its TSDB backfilled by promtool with planted DCGM series (label sets copied from the
corpus's real exporter scrapes), asked in chunks, gives the report of the same series read
from a range-query file; the server's failures are one line and exit status 1."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import run_cli

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("prometheus") is None or shutil.which("promtool") is None,
        reason="no prometheus/promtool binaries (apt-get install prometheus; make test does)",
    ),
]

SIGNALS = Path(__file__).resolve().parents[2] / "corpora" / "gpu_signals"
SCRAPES = {  # host -> the real scrape whose label sets its series carry
    "cp-bm14r7": "dcgm_scrape--ericsson_ccd_t4_busy.prom",
    "k8s-gpu1": "dcgm_scrape--issue363_rtxa5000_idle_mem_held.prom",
    "lke529760-766837-0a634ab30000": "dcgm_scrape--lke_rtx4000ada_pod_labels.prom",
}
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED")
STEP, HOURS = 15, 6
POD = "default/cuda-75454ffb9f-8ljq7"  # the LKE scrape's pod labels name its job


def planted(host: str, metric: str, scraped: float, t: int) -> float:
    """train-1 on the T4 and the A5000: busy 2 h, then 1 h idle holding its memory;
    notebook-2 on the A5000: 2 h idle; the LKE pod: the scrape's idle reading all along."""
    if host == "lke529760-766837-0a634ab30000" or metric == "DCGM_FI_DEV_FB_RESERVED":
        return scraped
    busy, train = t < 2 * 3600, t < 3 * 3600
    if metric == "DCGM_FI_DEV_GPU_UTIL":
        return 91.0 if busy else 0.0
    used = 5120.0 if train else 0.0
    return used if metric == "DCGM_FI_DEV_FB_USED" else 15358.0 - 447.0 - used


def series() -> list[tuple[str, str, str, float]]:
    """(host, metric, label text as the scrape prints it, the scrape's value)."""
    found = []
    for host, name in SCRAPES.items():
        for line in (SIGNALS / name).read_text().splitlines():
            match = re.match(r"(\w+)\{(.*)\} (\S+)$", line)
            if match and match.group(1) in METRICS:
                found.append((host, match.group(1), match.group(2), float(match.group(3))))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def range_file(path: Path, t0: int, since: int = 0) -> None:
    """The planted series as one range-query answer, from ``since`` seconds into the span."""
    result = []
    for host, metric, labels, value in series():
        metric_labels = {"__name__": metric, **dict(re.findall(r'(\w+)="([^"]*)"', labels))}
        points = [[t0 + t, f"{planted(host, metric, value, t):g}"] for t in range(since, HOURS * 3600, STEP)]
        result.append({"metric": {k: v for k, v in metric_labels.items() if v}, "values": points})
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, Path]]:
    """A Prometheus over the planted series, ending 4 h ago (older than its head block)."""
    work = tmp_path_factory.mktemp("prometheus")
    t0 = (int(time.time()) - (HOURS + 4) * 3600) // 60 * 60
    lines = []
    for metric in METRICS:
        lines.append(f"# TYPE {metric} gauge")
        for host, name, labels, value in series():
            if name == metric:
                lines += [
                    f"{metric}{{{labels}}} {planted(host, metric, value, t):g} {t0 + t}" for t in range(0, HOURS * 3600, STEP)
                ]
    (work / "dcgm.om").write_text("\n".join([*lines, "# EOF", ""]))
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "dcgm.om", "data"], cwd=work, check=True, capture_output=True
    )
    (work / "prometheus.yml").write_text("global: {scrape_interval: 1m}\n")
    port = free_port()
    process = subprocess.Popen(
        ["prometheus", "--config.file=prometheus.yml", "--storage.tsdb.path=data", f"--web.listen-address=127.0.0.1:{port}"],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=(work / "prometheus.log").open("w"),
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while not _ready(url):
            assert process.poll() is None and time.time() < deadline, (work / "prometheus.log").read_text()[-2000:]
            time.sleep(0.3)
        (work / "jobs.csv").write_text(
            "job,user,kind,gpus,start,end\n"
            f"train-1,ana,batch,cp-bm14r7:0 k8s-gpu1:0,{_iso(t0)},{_iso(t0 + 3 * 3600 - STEP)}\n"
            f"notebook-2,bo,interactive,k8s-gpu1:0,{_iso(t0 + 3 * 3600)},{_iso(t0 + 8 * 3600)}\n"
        )
        range_file(work / "range.json", t0)
        yield url, t0, work
    finally:
        process.terminate()
        process.wait(timeout=20)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def report(*args: str) -> dict[str, object]:
    done = run_cli("waste", "report", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def span(t0: int) -> list[str]:
    return ["--start", str(t0), "--end", str(t0 + HOURS * 3600 - STEP)]


def test_a_report_from_prometheus_in_chunks_equals_the_report_from_the_range_query_file(server):
    url, t0, work = server
    jobs = ["--jobs", str(work / "jobs.csv")]
    expected = report(str(work / "range.json"), *jobs)
    assert {job["job"]: round(job["util"], 1) for job in expected["jobs"]} == {"train-1": 60.7, "notebook-2": 0.0, POD: 0.0}
    assert report("--prometheus", url, *span(t0), *jobs) == expected
    tiny = ["--chunk-points", "50", "--chunk-series", "2"]  # 29 windows, each asked host by host
    assert report("--prometheus", url, *span(t0), *jobs, *tiny) == expected
    earlier = ["--start", str(t0 - 3600), "--end", span(t0)[-1]]  # the first 5 windows find nothing
    assert report("--prometheus", url, *earlier, *jobs, *tiny) == expected
    page = run_cli("waste", "report", "--prometheus", url, *span(t0), *jobs, *tiny, "--format", "html", "--top", "1")
    assert page.returncode == 0 and url in page.stdout and "<svg" in page.stdout  # its timeline asked again
    narrowed = report("--prometheus", url, *span(t0), *jobs, "--match", '{Hostname="lke529760-766837-0a634ab30000"}')
    assert [job["job"] for job in narrowed["jobs"]] == [POD]


def test_the_watch_reads_the_last_lookback_from_prometheus(server):
    url, t0, work = server
    now = _iso(t0 + HOURS * 3600 - STEP)
    range_file(work / "recent.json", t0, since=HOURS * 3600 - STEP - 2 * 3600)
    common = ["--jobs", str(work / "jobs.csv"), "--now", now, "--format", "json"]
    from_file = run_cli("waste", "watch", str(work / "recent.json"), *common)
    from_server = run_cli("waste", "watch", "--prometheus", url, "--lookback", "2h", *common)
    assert from_file.returncode == from_server.returncode == 0, from_server.stderr
    assert from_server.stdout == from_file.stdout
    assert "notebook-2" in {json.loads(line)["job"] for line in from_server.stdout.splitlines()}


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A reverse proxy that wants a bearer token, as operators put in front of Prometheus."""

    target, token, delay = "", "", 0.0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b"Unauthorized\n")
            return
        time.sleep(self.delay)
        headers = {"Content-Type": self.headers["Content-Type"]}
        try:
            with urllib.request.urlopen(urllib.request.Request(self.target + self.path, body, headers)) as answer:
                status, data = answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_bearer_token_from_a_file_or_the_environment_and_a_timeout(server, tmp_path, monkeypatch):
    url, t0, work = server
    handler = type("Handler", (_Proxy,), {"target": url, "token": "s3cret"})
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    front = f"http://127.0.0.1:{proxy.server_address[1]}"
    try:
        jobs = ["--jobs", str(work / "jobs.csv")]
        refused = run_cli("waste", "report", "--prometheus", front, *span(t0), *jobs)
        assert (
            refused.returncode == 1 and refused.stderr == f"error: {front}/api/v1/series: HTTP 401 Unauthorized: Unauthorized\n"
        )
        (tmp_path / "token").write_text("s3cret\n")
        expected = report(str(work / "range.json"), *jobs)
        assert report("--prometheus", front, *span(t0), *jobs, "--token-file", str(tmp_path / "token")) == expected
        monkeypatch.setenv("FAILCLASS_PROMETHEUS_TOKEN", "s3cret")
        assert report("--prometheus", front, *span(t0), *jobs) == expected
        handler.delay = 3.0
        slow = run_cli("waste", "report", "--prometheus", front, *span(t0), *jobs, "--timeout", "1s")
        assert slow.returncode == 1 and slow.stderr == f"error: {front}/api/v1/series: no answer within 1 s (--timeout)\n"
    finally:
        proxy.shutdown()


def test_an_unreachable_server_a_bad_selector_and_too_many_queries_are_one_line_and_exit_1(server):
    url, t0, _ = server
    closed = f"http://127.0.0.1:{free_port()}"
    done = run_cli("waste", "report", "--prometheus", closed, *span(t0))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: {closed}/api/v1/series: cannot reach the server: ")
    done = run_cli("waste", "report", "--prometheus", url, *span(t0), "--match", 'Hostname=~"("')
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {url}/api/v1/series: HTTP 400: bad_data: ") and "missing closing )" in done.stderr
    done = run_cli("waste", "report", "--prometheus", url, *span(t0), "--step", "1ms", "--chunk-points", "1")
    assert done.returncode == 1 and "range queries (10 series) is over the limit of 100,000; give a larger --step" in done.stderr
    done = run_cli("waste", "report", "--prometheus", url, "--start", str(t0), "--end", str(t0 - 60))
    assert done.returncode == 2 and "--start before --end" in done.stderr
    done = run_cli("waste", "report", str(SIGNALS / SCRAPES["k8s-gpu1"]), "--prometheus", url, *span(t0))
    assert done.returncode == 2 and "give SIGNALS files or --prometheus URL, one of the two" in done.stderr
