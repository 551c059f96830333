"""The README's examples and figures say what the code does today: each command under
"What it prints" is run and its header line (reason, source, confidence) compared with
the README's; the model's threshold, precision and coverage are those of the built-in
model's metadata (failclass/data/models/fallback.json)."""

from __future__ import annotations

import json
import re
import shlex

from conftest import ROOT, run_cli

README = (ROOT / "README.md").read_text()
METADATA = json.loads((ROOT / "failclass" / "data" / "models" / "fallback.json").read_text())
PROMPT = "$ .venv/bin/failclass "


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def examples(text: str) -> list[tuple[list[str], str]]:
    """(the command's arguments, the first line the README shows it printing)."""
    lines = text.splitlines()
    return [(shlex.split(line[len(PROMPT) :]), lines[i + 1]) for i, line in enumerate(lines) if line.startswith(PROMPT)]


def test_the_examples_under_what_it_prints_print_the_same_header_line() -> None:
    shown = examples(section("What it prints"))
    assert len(shown) >= 2 and {args[0] for args, _ in shown} == {"classify"}
    for args, header in shown:
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] == header, f"the README shows for `failclass {shlex.join(args)}`:\n{header}"


def test_the_model_threshold_and_its_precision_are_the_built_in_models() -> None:
    threshold = METADATA["threshold"]
    point = next(p for p in METADATA["threshold_choice"]["curve"] if p["threshold"] == threshold)
    said = re.findall(r"its threshold, chosen\s+by `failclass train`, is (\d\.\d+)", README)
    assert said and {float(value) for value in said} == {threshold}
    ((value, precision, coverage),) = re.findall(r"\((\d\.\d+) now: (\d+\.\d)% precision, answering (\d+)% of", README)
    assert float(value) == threshold
    assert (precision, coverage) == (f"{100 * point['precision']:.1f}", f"{100 * point['coverage']:.0f}")


def rules_table() -> list[str]:
    """The README's rules-per-reason rows as `failclass rules list --json` and the corpus
    folders give them today."""
    rules = [json.loads(line) for line in run_cli("rules", "list", "--json").stdout.splitlines()]
    logs = {side: ROOT / "corpora" / side for side in ("public", "holdout")}
    rows, totals = [], [0, 0, 0, 0, 0, 0]
    for reason in dict.fromkeys([*(r["reason"] for r in rules), "no_signature"]):
        own = [r for r in rules if r["reason"] == reason]
        counts = [
            len(own),
            sum(r["kind"] == "explicit" for r in own),
            sum(r["kind"] == "implicit" for r in own),
            sum(r["exception"] is not None for r in own),
            *(len(list((logs[side] / reason).glob("*.log"))) for side in ("public", "holdout")),
        ]
        totals = [t + c for t, c in zip(totals, counts, strict=True)]
        shown = [str(c) for c in counts] if own else ["-"] * 4 + [str(c) for c in counts[4:]]
        rows.append(f"| {reason} | {' | '.join(shown)} |")
    rows.append(f"| **all** | **{totals[0]}** | {' | '.join(str(t) for t in totals[1:])} |")
    return rows


def test_the_rules_per_reason_table_and_the_rule_count_are_todays() -> None:
    rows = rules_table()
    shown = [line for line in section("Rules").splitlines() if line.startswith("| ") and not line.startswith("| reason")]
    expected = "\n".join(rows)
    assert sorted(shown) == sorted(rows), f"the README's rules table should read (any order):\n{expected}"
    total = re.search(r"\*\*(\d+)\*\*", rows[-1])
    assert total is not None and f"signature engine: {total.group(1)} rules" in README
