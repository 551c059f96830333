"""How well `failclass classify --attempt` names where a multi-rank attempt failed and why:
origin rank, origin node, origin GPU and reason against each attempt's truth.json, per
launcher style and per reason, with every miss listed. The answer is taken as a user gets it:

    python -m failclass classify --attempt --json --facts FACTS.json FILE...

with FACTS.json the scheduler's facts of the truth (job_id, nodes in rank order,
tasks_per_node) and FILE... the attempt's files, as written by its launcher.

    python benchmarks/multirank/score.py corpora/multirank/attempts [more folders] [--readme WHAT --name MARKER]

A folder is one attempt (truth.json in it) or holds attempts below it. An attempt whose
command fails or prints no JSON counts as wrong on every measure and is listed with the
command's own error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from readme import readme_options, write_table

MEASURES = ("rank", "node", "gpu", "reason", "cascade")
TIMEOUT = 300


@dataclass(frozen=True)
class Attempt:
    folder: Path
    truth: dict

    @property
    def name(self) -> str:
        return str(self.truth.get("attempt", self.folder.name))

    @property
    def files(self) -> list[Path]:
        return [self.folder / name for name in self.truth["files"]]


@dataclass(frozen=True)
class Outcome:
    attempt: Attempt
    answer: dict | None
    error: str | None

    def right(self) -> dict[str, bool]:
        return compare(self.attempt.truth, self.answer)


def find_attempts(folders: list[Path]) -> list[Attempt]:
    paths = sorted({path for folder in folders for path in folder.rglob("truth.json")})
    return [Attempt(path.parent, json.loads(path.read_text())) for path in paths]


def compare(truth: dict, answer: dict | None) -> dict[str, bool]:
    """Which measures the answer gets right: the origin's rank, node and GPU (none where
    the attempt ran without GPUs: a GPU named there is wrong), the reason, and the cascade
    (the same set of ranks). No answer is wrong on all of them; no origin, on its three."""
    if answer is None:
        return dict.fromkeys(MEASURES, False)
    origin = answer.get("origin") or {}
    return {
        "rank": origin.get("rank") == truth["origin"]["rank"],
        "node": origin.get("node") == truth["origin"]["node"],
        "gpu": bool(origin) and origin.get("gpu") == truth["origin"].get("gpu"),
        "reason": answer.get("reason") == truth["reason"],
        "cascade": sorted(answer.get("cascade") or []) == sorted(truth["cascade"]),
    }


def parse_answer(done: subprocess.CompletedProcess[str]) -> tuple[dict | None, str | None]:
    """The JSON object the command printed, else why there is none."""
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        said = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        return None, f"exit {done.returncode}: {said[-1][:300]}"
    if not isinstance(answer, dict):
        return None, f"exit {done.returncode}: printed {type(answer).__name__}, not one JSON object"
    return answer, None


def classify(attempt: Attempt) -> Outcome:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as facts:
        json.dump(attempt.truth["facts"], facts)
        facts.flush()
        command = [sys.executable, "-m", "failclass", "classify", "--attempt", "--json", "--facts", facts.name]
        try:
            done = subprocess.run(
                [*command, *map(str, attempt.files)], capture_output=True, text=True, timeout=TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            return Outcome(attempt, None, f"no answer within {TIMEOUT} s")
    answer, error = parse_answer(done)
    return Outcome(attempt, answer, error)


def table(outcomes: list[Outcome], key: str, title: str) -> list[str]:
    """Accuracy of each measure per value of a truth field (style, reason)."""
    groups: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for outcome in outcomes:
        groups[str(outcome.attempt.truth[key])].append(outcome.right())
        groups["**all**"].append(outcome.right())
    rows = [f"| {title} | attempts | {' | '.join(MEASURES)} |", "|---|---:|" + "---:|" * len(MEASURES)]
    for value, rights in sorted(groups.items(), key=lambda item: (item[0] == "**all**", item[0])):
        shares = [sum(right[measure] for right in rights) / len(rights) for measure in MEASURES]
        rows.append(f"| {value} | {len(rights)} | {' | '.join(f'{share:.2f}' for share in shares)} |")
    return rows


def misses(outcomes: list[Outcome]) -> list[str]:
    lines = []
    for outcome in outcomes:
        right = outcome.right()
        if all(right[measure] for measure in ("rank", "node", "gpu", "reason")):
            continue
        truth = outcome.attempt.truth
        expected = (
            f"rank {truth['origin']['rank']} on {truth['origin']['node']} (GPU {truth['origin'].get('gpu')}), {truth['reason']}"
        )
        if outcome.answer is None:
            lines.append(f"- {outcome.attempt.name}: want {expected}; ERROR {outcome.error}")
            continue
        origin = outcome.answer.get("origin") or {}
        got = f"rank {origin.get('rank')} on {origin.get('node')} (GPU {origin.get('gpu')}), {outcome.answer.get('reason')}"
        lines.append(f"- {outcome.attempt.name}: want {expected}; got {got} (how: {origin.get('how')})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="+", help="folders of attempts (truth.json in each attempt)")
    readme_options(parser, "multirank")
    args = parser.parse_args()
    attempts = find_attempts(args.corpus)
    if not attempts:
        raise SystemExit(f"no truth.json under {', '.join(map(str, args.corpus))}")
    outcomes = []
    for attempt in attempts:
        outcomes.append(classify(attempt))
        if outcomes[-1].error:
            print(f"ERROR {attempt.name}: {outcomes[-1].error}", file=sys.stderr, flush=True)
    rows = [*table(outcomes, "style", "launcher style"), "", *table(outcomes, "reason", "reason")]
    rows += ["", *table(outcomes, "origin_prints_error", "origin printed its error")]
    errors = sum(outcome.answer is None for outcome in outcomes)
    summary = f"{len(outcomes)} attempts, {errors} without an answer"
    print("\n".join([*rows, "", summary, "", "Misses:", *misses(outcomes)]))
    write_table(args, "benchmarks/multirank/score.py", rows, summary)


if __name__ == "__main__":
    main()
