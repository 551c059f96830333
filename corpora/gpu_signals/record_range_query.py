"""Record a real Prometheus range-query answer for DCGM metrics: serve a real DCGM
exporter scrape (a file of this folder) over HTTP, let a real Prometheus scrape it every
second, and ask its HTTP API for the series.

    python corpora/gpu_signals/record_range_query.py SCRAPE.prom OUT.json [--seconds 8]

Needs the `prometheus` binary (Debian's package). The e2e test
tests/waste/test_prometheus.py runs the same function.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

QUERY = '{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE|DCGM_FI_PROF_GR_ENGINE_ACTIVE"}'


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record(scrape: Path, seconds: float = 8.0) -> dict[str, object]:
    """The range-query answer once it holds ``seconds`` readings (or a minute after that)."""
    work = Path(tempfile.mkdtemp(prefix="failclass-prom-"))
    try:
        (work / "site").mkdir()
        shutil.copy(scrape, work / "site" / "metrics")
        handler = functools.partial(_Quiet, directory=str(work / "site"))
        exporter = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
        threading.Thread(target=exporter.serve_forever, daemon=True).start()
        port = free_port()
        (work / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s}\n"
            f"scrape_configs: [{{job_name: dcgm, static_configs: [{{targets: ['127.0.0.1:{exporter.server_address[1]}']}}]}}]\n"
        )
        server = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            start = time.time()
            deadline = start + seconds + 60  # a busy machine may take a while to start Prometheus
            while True:
                time.sleep(1)
                answer = _range(port, start, time.time())
                if _points(answer) >= seconds or time.time() > deadline:
                    return answer
        finally:
            server.terminate()
            server.wait(timeout=10)
            exporter.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _range(port: int, start: float, end: float) -> dict[str, object]:
    query = urllib.parse.urlencode({"query": QUERY, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "1"})
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query_range?{query}", timeout=10) as answer:
            return json.load(answer)  # type: ignore[no-any-return]
    except OSError:  # not listening yet
        return {}


def _points(answer: dict[str, object]) -> int:
    """Readings in the answer's first series (one a second once Prometheus scrapes)."""
    data = answer.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    return len(result[0]["values"]) if result else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scrape", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    args.out.write_text(json.dumps(record(args.scrape, args.seconds)) + "\n")


if __name__ == "__main__":
    main()
