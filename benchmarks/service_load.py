"""Latency and throughput of the HTTP service under load, measured with wrk.

Starts `failclass serve` (no tokens), then drives it with wrk (Lua scripts written here):

  POST /v1/classify  with a 10 KB and a 1 MB log (training progress, then a real NCCL
                     watchdog timeout excerpt from the corpus): classification only;
  POST /v1/attempts  with the 10 KB log and a new job id per request: classification,
                     decision and the database write, on SQLite (1 worker) and, with
                     --postgres, on a fresh schema of the test PostgreSQL server
                     (FAILCLASS_TEST_POSTGRES, 2 workers).

Prints requests/s and latency p50/p99 per case; writes benchmarks/results/service_load.json,
and with --readme WHAT the table into the README (between its service_load markers).

    python benchmarks/service_load.py [--duration 20] [--connections 16] [--postgres] [--only attempts] [--readme WHAT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import postgres_schema_url  # noqa: E402 (found through the sys.path entry above)
from readme import readme_options, write_table  # noqa: E402
from service_server import running_service  # noqa: E402 (found through the sys.path entry above)

FAILURE = (ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log").read_text()
CLASSIFY_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/plain"
local f = io.open("{path}", "rb")
wrk.body = f:read("*all")
f:close()
"""
ATTEMPTS_LUA = """
local f = io.open("{path}", "rb")
local log = f:read("*all")
f:close()
local counter = 0
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("thread_tag", threads)  -- each thread's own: its job ids are no other thread's
end
request = function()
  counter = counter + 1
  local body = '{{"job_id":"bench-' .. thread_tag .. '-' .. counter .. '","attempt":1,"user":"user-' .. (counter % 50) .. '","gpus":8,"log":' .. log .. '}}'
  return wrk.format("POST", "/v1/attempts", {{["Content-Type"] = "application/json"}}, body)
end
"""


def log_of_size(size: int) -> str:
    lines, step = [], 0
    while sum(len(line) + 1 for line in lines) + len(FAILURE) < size:
        step += 1
        lines.append(
            f"2026-11-02 09:{step // 60 % 60:02d}:{step % 60:02d},123 - train - INFO - Epoch [1/10] Step [{step}/90000] Loss: 2.{step % 997:03d}"
        )
    return "\n".join(lines) + "\n" + FAILURE


def seconds(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]


def run_wrk(url: str, script: Path, duration: int, connections: int) -> dict[str, float]:
    # a request slower than wrk's default timeout (2 s) would be left out of the latencies
    command = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "30s", "--latency", "-s", str(script), url]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.MULTILINE))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50_ms": round(seconds(latency["50"]) * 1000, 2),
        "p99_ms": round(seconds(latency["99"]) * 1000, 2),
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),  # type: ignore[union-attr]
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--postgres", action="store_true", help="also POST /v1/attempts on PostgreSQL")
    parser.add_argument("--only", choices=("classify", "attempts"), help="run only the cases of this route")
    readme_options(parser, "service_load")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install -y wrk")
    work = Path(tempfile.mkdtemp(prefix="failclass-load-"))
    cases = []
    for name, size in (("10 KB", 10_000), ("1 MB", 1_000_000)):
        log = work / f"log-{size}.txt"
        log.write_text(log_of_size(size))
        script = work / f"classify-{size}.lua"
        script.write_text(CLASSIFY_LUA.format(path=log))
        cases.append((f"POST /v1/classify, {name} log", "sqlite", "1", "/v1/classify", script))
    encoded = work / "log-10000.json"
    encoded.write_text(json.dumps(log_of_size(10_000)))
    attempts = work / "attempts.lua"
    attempts.write_text(ATTEMPTS_LUA.format(path=encoded))
    cases.append(("POST /v1/attempts, 10 KB log, SQLite, 1 worker", "sqlite", "1", "/", attempts))
    if args.postgres:
        cases.append(("POST /v1/attempts, 10 KB log, PostgreSQL, 2 workers", "postgresql", "2", "/", attempts))

    if args.only is not None:
        cases = [case for case in cases if case[0].startswith(f"POST /v1/{args.only},")]
    results = []
    print(f"{'case':58}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}")
    for title, database, workers, path, script in cases:
        schemas = postgres_schema_url() if database == "postgresql" else iter([f"sqlite:///{work / f'{len(results)}.db'}"])
        with running_service(next(schemas), work, "--workers", workers) as base:
            measured = run_wrk(base + path, script, args.duration, args.connections)
        next(schemas, None)  # drops the PostgreSQL schema
        results.append({"case": title, **measured})
        print(
            f"{title:58}{measured['requests_per_s']:>9.1f}{measured['p50_ms']:>9.1f}{measured['p99_ms']:>9.1f}{measured['non_2xx']:>9}"
        )
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "service_load.json").write_text(json.dumps(results, indent=1) + "\n")
    rows = ["| case | requests/s | p50 ms | p99 ms |", "|---|---:|---:|---:|"]
    rows += [f"| `{r['case']}` | {r['requests_per_s']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |" for r in results]
    detail = f"wrk 2 threads, {args.connections} connections, {args.duration} s per case, {os.cpu_count()} CPUs shared with wrk"
    write_table(args, "benchmarks/service_load.py", rows, detail)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
