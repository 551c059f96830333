"""One operator's week: a generated week of GPU jobs (`failclass waste generate`, planted
idle notebooks, hung-free) replayed through the idle watch every ten minutes, as cron would
run `failclass waste watch --act slurm`, on a store with the notices routed to a webhook;
what the week's steps and notices were, per user, beside the week's waste report (GPU-hours
held, idle, and what right-sizing would free), and one notice as the webhook got it.
The scheduler is not called: each step's commands are those `--act slurm` would run.

    .venv/bin/python benchmarks/operator_week.py [--jobs 60] [--seed 50]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from failclass.adapters.slurm_idle import act
from failclass.contracts import Notice, from_json
from failclass.notify.channels import EmailSender
from failclass.notify.config import Channel, Notifications
from failclass.notify.delivery import deliver
from failclass.policy.config import load_policy
from failclass.store.repository import Store
from failclass.waste.allocation import assign
from failclass.waste.analyse import WasteOptions, analyse
from failclass.waste.enforce import enforce
from failclass.waste.formats import read_signals
from failclass.waste.generate import TraceSpec, write_trace
from failclass.waste.jobfiles import read_jobs
from failclass.waste.watch import watch

TICK_S = 600  # cron's period
WINDOW_S = 3 * 3600  # the readings a run reads back (a Prometheus range query's)


def dry_run(signal: Any) -> list[str]:
    """What `--act slurm` would run, without a Slurm."""
    ran: list[list[str]] = []

    def record(command: list[str]) -> Any:
        ran.append(command)
        return type("Done", (), {"returncode": 0, "stderr": ""})()

    return act(signal, record)


def receiver() -> tuple[ThreadingHTTPServer, list[dict[str, Any]]]:
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=50)
    args = parser.parse_args()
    server, posted = receiver()
    kinds = ("idle_warning", "release", "hung_job", "repeat_idle")
    channels = {"ops": Channel("webhook", url=f"http://127.0.0.1:{server.server_address[1]}/ops")}
    policy = replace(load_policy(), notifications=Notifications(channels, dict.fromkeys(kinds, ("ops",))))
    with tempfile.TemporaryDirectory() as folder:
        write_trace(TraceSpec(jobs=args.jobs, seed=args.seed, interval_s=60, span_days=7), Path(folder))
        jobs = read_jobs(Path(folder) / "jobs.csv")
        samples = assign(read_signals([Path(folder) / "samples.parquet"]), jobs).sorted()
        by_time = np.argsort(samples.ts, kind="stable")
        times = samples.ts[by_time]
        store = Store.open(f"sqlite:///{folder}/failclass.db")
        ticks = np.arange(float(times.min()) + TICK_S, float(times.max()), TICK_S)
        known = {job.job: job for job in jobs}  # the watch skips those not started or ended by now
        for now in ticks:
            rows = by_time[np.searchsorted(times, now - WINDOW_S) : np.searchsorted(times, now, side="right")]
            moment = datetime.fromtimestamp(float(now), UTC)
            enforce(watch(samples.take(np.sort(rows)), known, float(now), policy.watch), store, policy, moment, dry_run)
            deliver(store, policy.notifications, seconds=10)
        steps = store.watch_steps(limit=100_000)
        week = analyse([Path(folder) / "samples.parquet"], WasteOptions(Path(folder) / "jobs.csv"))
    server.shutdown()
    first, last = (datetime.fromtimestamp(float(t), UTC) for t in (ticks[0], ticks[-1]))
    print(f"{len(ticks)} watch runs from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC over {len(jobs)} jobs")
    print(f"steps: {dict(Counter(s.action for s in steps))}; notices received: {dict(Counter(p['kind'] for p in posted))}")
    ends = {job.job: job.end for job in jobs}

    def freed(step: Any) -> float:
        """GPU-hours the release gave back: from the step to the job's end in the trace."""
        return max(ends[step.job_id] - step.taken_at.timestamp(), 0.0) * len(step.gpus) / 3600

    held = {group.name: group for group in week.users}
    sized = {user.user: user for user in week.rightsizing.users}
    print(
        "\n| user | GPU-h held | idle | warnings | releases | GPU-h released | other steps | right-sizing frees (held / reserved) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for user in sorted(held):
        mine = [s for s in steps if s.user == user]
        count = Counter(s.action for s in mine)
        hours = sum(freed(s) for s in mine if s.action == "release")
        other = ", ".join(f"{a} {n}" for a, n in sorted(count.items()) if a not in ("warn", "release")) or "-"
        size = sized.get(user)
        frees = f"{size.smaller_gpu_h + size.fewer_gpus_h:.1f} / {size.shorter_limit_h:.1f}" if size else "-"
        group = held[user]
        print(
            f"| {user} | {group.held_gpu_h:.1f} | {group.idle_gpu_h:.1f} | {count['warn']} | {count['release']} | {hours:.1f} "
            f"| {other} | {frees} |"
        )
    release = next((p for p in posted if p["kind"] == "release"), None)
    if release:
        print("\nA release as the webhook got it:\n" + json.dumps(release, indent=1))
        mail = Channel("email", smtp_host="smtp.example.org", sender="failclass@example.org", to_user="{user}@example.org")
        message = EmailSender(mail).message(from_json(Notice, release))
        head = "".join(f"{key}: {message[key]}\n" for key in ("Subject", "To"))
        print(f"\nThe same as an email channel writes it:\n{head}\n{message.get_content()}")


if __name__ == "__main__":
    sys.exit(main())
