"""How long `failclass hook decide` takes, end to end, as a scheduler runs it once per
finished job: a new process on a local SQLite store, with a real log from samples/.

Each round runs, one after the other (so that a machine busy with other work slows all
of them alike): `python -c pass` (the interpreter's start), `python -c "import
sqlalchemy"` (the store's library alone), `hook decide` with an empty cache folder (the
rules are read from their YAML files and compiled, Hyperscan included, then cached) and
`hook decide` with the cache of the run before (a warm cache). Every decision is about a
new job of a new user, on a store created and migrated before the first round; Python's
bytecode is compiled by that first run too (as pip compiles an installed package's).
It prints a Markdown table: median, min and max wall time over the rounds, the median
as a multiple of `import sqlalchemy`'s, and the largest peak RSS of a run; with
--readme it writes the table into the README (between its hook_latency markers). It
measures; it asserts no timing.

    python benchmarks/hook_latency.py [--runs 15] [--log samples/<name>.log] [--readme]
    python benchmarks/hook_latency.py --database-url postgresql+psycopg://...   # a store of one's own
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from readme import write_between

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "gpu_oom--nccl_p2p_setup_cuda_oom.log"
SETTINGS = ("FAILCLASS_MODEL", "FAILCLASS_POLICY", "FAILCLASS_SERVICE_URL", "FAILCLASS_DATABASE_URL", "FAILCLASS_TOKEN")


@dataclass
class Figures:
    """The wall times (s) and peak RSS (MiB) of one command's runs."""

    title: str
    seconds: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)

    def row(self, unit: float) -> str:
        """The table's row; ``unit``: the median of `import sqlalchemy`."""
        median, low, high = statistics.median(self.seconds), min(self.seconds), max(self.seconds)
        return f"| {self.title} | {median:.3f} | {low:.3f} | {high:.3f} | {median / unit:.2f} | {max(self.peak_mib):.0f} |"


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MiB) of the process alone, exit status and stdout of one run."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        said, complaint = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if complaint.strip():
        raise SystemExit(f"{' '.join(command)}: said on stderr: {complaint.strip()}")
    return seconds, usage.ru_maxrss / 1024, process.returncode, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="rounds (each command runs once per round)")
    parser.add_argument("--log", type=Path, default=SAMPLE, help="the attempt's log")
    parser.add_argument("--database-url", help="the store (default: a SQLite file of this run's own)")
    parser.add_argument("--readme", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hook-latency-"))
    cache = work / "cache"
    env = {k: v for k, v in os.environ.items() if k not in (*SETTINGS, "PYTHONDONTWRITEBYTECODE")}
    # no operator rules folder, a cache and a store of this run's own; bytecode compiled
    # once, as an installed package has it
    env |= {"FAILCLASS_CACHE_DIR": str(cache), "FAILCLASS_RULES_DIR": "", "XDG_DATA_HOME": str(work / "data")}
    env |= {"PYTHONPYCACHEPREFIX": str(work / "bytecode")}
    store = args.database_url or f"sqlite:///{work / 'failclass.db'}"
    run = f"{os.getpid()}-{int(time.time())}"  # new jobs, in a store of one's own too

    def decide(job: str) -> list[str]:
        facts = ["--job-id", job, "--attempt", "1", "--user", job, "--gpus", "8", "--node", "gpu-07"]
        return [sys.executable, "-m", "failclass.cli", "hook", "decide", *facts, "--log", str(args.log.resolve())]

    def decide_in(job: str) -> list[str]:
        return [*decide(job), "--database-url", store, "--json"]

    rows = {
        "pass": Figures("`python -c pass`"),
        "sqlalchemy": Figures('`python -c "import sqlalchemy"`'),
        "cold": Figures("`hook decide`, cold cache"),
        "warm": Figures("`hook decide`, warm cache"),
    }
    first = timed(decide_in(f"bench-setup-{run}"), env, ROOT)  # creates and migrates the store
    load_before = os.getloadavg()
    for index in range(args.runs):
        runs = {
            "pass": [sys.executable, "-c", "pass"],
            "sqlalchemy": [sys.executable, "-c", "import sqlalchemy"],
            "cold": decide_in(f"bench-cold-{run}-{index}"),
            "warm": decide_in(f"bench-warm-{run}-{index}"),
        }
        for key, command in runs.items():
            if key == "cold":
                shutil.rmtree(cache, ignore_errors=True)
            seconds, peak, status, said = timed(command, env, ROOT)
            if key in ("cold", "warm") and (status != first[2] or _answer(said) != _answer(first[3])):
                raise SystemExit(f"{key} run {index}: exit {status}, {said.strip()}; the first run: exit {first[2]}, {first[3]}")
            rows[key].seconds.append(seconds)
            rows[key].peak_mib.append(peak)
    load_after = os.getloadavg()
    shutil.rmtree(work, ignore_errors=True)
    dialect = store.split(":", 1)[0].split("+", 1)[0]
    kind = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(dialect, dialect)
    what = (
        f"`hook decide` on a local {kind} store, log `{args.log.name}` (exit {first[2]}), {args.runs} rounds; "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after."
    )
    lines = [
        what,
        "",
        "| command | median s | min s | max s | median / `import sqlalchemy` | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    unit = statistics.median(rows["sqlalchemy"].seconds)
    lines += [figures.row(unit) for figures in rows.values()]
    print("\n".join(lines))
    warm = statistics.median(rows["warm"].seconds)
    print(f"\nwarm median {warm:.3f} s, {warm / unit:.2f} times `import sqlalchemy` ({unit:.3f} s)")
    if args.readme:
        write_between("hook_latency", ["Written by `benchmarks/hook_latency.py --readme`:", "", *lines])


def _answer(said: str) -> tuple[str, str]:
    """The classification and the action (a backoff's jitter and the ids differ by job)."""
    answer = json.loads(said)
    return json.dumps(answer["classification"], sort_keys=True), answer["action"]


if __name__ == "__main__":
    main()
