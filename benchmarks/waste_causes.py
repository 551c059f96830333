"""How well `failclass waste report` names the planted causes of low GPU utilisation, per
Gao et al. category, on traces with a known truth: the independent generator's
(`benchmarks/independent_waste/generate.py`, `truth.json`; written without reading the
detectors), the real GPU recordings (`corpora/gpu_recordings/*/planted.json`) and
failclass's own generator (`failclass waste generate`, `planted.json`; the detectors were
tuned on it). The report runs as a user runs it, `failclass waste report --format json`.

    python3 benchmarks/independent_waste/generate.py --out /tmp/w20 --jobs 40 --seed 20
    python benchmarks/waste_causes.py /tmp/w20 [more traces] [--readme WHAT]

A job's causes are those its intervals were explained by (failclass's own
`model_evaluation`, no Gao category, left out). Recall and precision per category are over
the low jobs (U <= 50 %, the jobs Gao et al. explain); macro figures average the categories
planted or named. Headline shares are compared with what the truth says.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from readme import readme_options, write_table

ROOT = Path(__file__).resolve().parent.parent
ALIASES = {"inefficient_host_gpu_data_transfer": "inefficient_host_gpu_transfer"}
NOT_GAO = {"model_evaluation", "", "unexplained"}


@dataclass
class Trace:
    """One trace's inputs for the report and its truth: each job's planted causes."""

    name: str
    signals: list[Path]
    jobs_file: Path
    logs: Path | None
    planted: dict[str, set[str]]
    low: set[str]
    headline: dict[str, float] = field(default_factory=dict)


def read_trace(folder: Path) -> Trace:
    if (folder / "truth.json").exists():  # the independent generator
        truth = json.loads((folder / "truth.json").read_text())
        jobs = truth["jobs"]
        planted = {j["job"]: {ALIASES.get(c["id"], c["id"]) for c in j["causes"]} - NOT_GAO for j in jobs}
        summary = truth["summary"]
        headline = {
            "idle-slot share, batch (%)": 100 * summary["idle_slot_share_batch"],
            "idle-slot share, interactive (%)": 100 * summary["idle_slot_share_interactive"],
            "multi-GPU jobs with a never-used GPU (%)": 100 * summary["multi_gpu_jobs_with_never_used_gpu"],
            "low jobs (%)": 100 * summary["low_utilisation_jobs"] / summary["jobs"],
        }
        (jobs_file,) = sorted((folder / "jobs").iterdir())
        signals = sorted((folder / "metrics").iterdir())
        low = {j["job"] for j in jobs if j["low_utilisation"]}
        return Trace(folder.name, signals, jobs_file, folder / "logs", planted, low, headline)
    planted_doc = json.loads((folder / "planted.json").read_text())
    planted = {j["job"]: set(j["causes"]) - NOT_GAO for j in planted_doc["jobs"]}
    if "machine" in planted_doc:  # a real recording: every job with a planted cause is one to explain
        signals = sorted((folder / "signals").glob("*--nvidia-smi-lms200*.csv"))
    else:  # failclass's own generator
        signals = [folder / "samples.parquet"]
    return Trace(folder.name, signals, folder / "jobs.csv", None, planted, {job for job, causes in planted.items() if causes})


def named_causes(trace: Trace) -> tuple[dict[str, set[str]], dict[str, float]]:
    """Each job's causes as the report names them, and the report's headline shares."""
    command = [sys.executable, "-m", "failclass", "waste", "report", "--jobs", str(trace.jobs_file), "--format", "json"]
    command += ["--logs", str(trace.logs)] if trace.logs else []
    done = subprocess.run([*command, *map(str, trace.signals)], check=False, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{trace.name}: waste report exited {done.returncode}: {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    named: dict[str, set[str]] = {}
    for row in report["intervals"]:
        if row["cause"] not in NOT_GAO:
            named.setdefault(row["job"], set()).add(row["cause"])
    top = report["headline"]
    headline = {
        "idle-slot share, batch (%)": top["batch_idle_pct"],
        "idle-slot share, interactive (%)": top["interactive_idle_pct"],
        "multi-GPU jobs with a never-used GPU (%)": top["multi_gpu_never_used_pct"],
        "low jobs (%)": top["low_jobs_pct"],
    }
    return named, headline


def report_job(job: str, named: dict[str, set[str]]) -> str:
    """The report's name for a truth job: the same, or for a pod of a Kubernetes Job or
    training job, the owner the report groups its pods under (``ns/train`` for ``ns/train-x7k2p``)."""
    if job in named or "/" not in job:
        return job
    namespace, pod = job.split("/", 1)
    owners = [name for name in named if name.startswith(f"{namespace}/") and pod.startswith(name.split("/", 1)[1] + "-")]
    return max(owners, key=len, default=job)


def score(traces: list[Trace]) -> tuple[dict[str, Counter[str]], list[tuple[str, str, float, float]]]:
    """Per category: planted, named, both (over low jobs); and each headline share, truth vs report."""
    counts: dict[str, Counter[str]] = {}
    shares = []
    for trace in traces:
        named, headline = named_causes(trace)
        for job in trace.low:
            truth, found = trace.planted.get(job, set()), named.get(report_job(job, named), set())
            for cause in truth | found:
                tally = counts.setdefault(cause, Counter())
                tally["planted"] += cause in truth
                tally["named"] += cause in found
                tally["both"] += cause in truth and cause in found
        shares += [(trace.name, what, value, headline[what]) for what, value in trace.headline.items()]
    return counts, shares


def table(counts: dict[str, Counter[str]]) -> list[str]:
    rows = ["| category | planted | named | recall | precision |", "|---|---:|---:|---:|---:|"]
    recalls, precisions = [], []
    for cause, tally in sorted(counts.items()):
        recall = tally["both"] / tally["planted"] if tally["planted"] else None
        precision = tally["both"] / tally["named"] if tally["named"] else None
        recalls += [recall] if recall is not None else []
        precisions += [precision] if precision is not None else [0.0] if tally["planted"] else []
        shown = [f"{v:.2f}" if v is not None else "-" for v in (recall, precision)]
        rows.append(f"| {cause} | {tally['planted']} | {tally['named']} | {shown[0]} | {shown[1]} |")
    macro = [sum(v) / len(v) if v else 0.0 for v in (recalls, precisions)]
    rows.append(f"| **macro** | | | **{macro[0]:.2f}** | **{macro[1]:.2f}** |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", type=Path, nargs="+", help="trace folders (truth.json or planted.json beside the data)")
    readme_options(parser, "waste_causes")
    args = parser.parse_args()
    counts, shares = score([read_trace(folder) for folder in args.traces])
    rows = table(counts)
    if shares:
        rows += ["", "| trace | headline share | truth | report | off by (points) |", "|---|---|---:|---:|---:|"]
        rows += [f"| {name} | {what} | {truth:.2f} | {got:.2f} | {abs(truth - got):.2f} |" for name, what, truth, got in shares]
    print("\n".join(rows))
    write_table(args, "benchmarks/waste_causes.py", rows)


if __name__ == "__main__":
    main()
