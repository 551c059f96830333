"""Rewrite public/KNOWN_MISSES.md: the development-side logs the rules get wrong today.

    python corpora/known_misses.py

The public side is where rules are written from; a log here that the rules miss is a
rule still to write (or a real ambiguity, said in its row). The test suite marks each
listed log as an expected failure, strictly: fixing one makes the test ask for this
file to be rewritten. A reason written by hand in the last column is kept.
"""

from __future__ import annotations

from pathlib import Path

from failclass.model.corpus import read_manifest
from failclass.options import ClassifierOptions

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT / "corpora" / "public"
TARGET = PUBLIC / "KNOWN_MISSES.md"
HEADER = """# Public logs the rules classify wrongly

The development side (corpora/public) holds every public log that rules may be written
from. These are the ones the rules still get wrong: each is a rule still to write, or a
real ambiguity said in its row. The test suite marks them as expected failures (strict:
a fix makes the test say so, then run `python corpora/known_misses.py`). Generalisation
is measured elsewhere: on corpora/holdout and by leave-repository-out cross-validation
(`failclass evaluate --folds`).

| log | labelled | classified | rule | why it is left |
|---|---|---|---|---|
"""


def kept_reasons() -> dict[str, str]:
    if not TARGET.exists():
        return {}
    kept = {}
    for line in TARGET.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 6 and "/" in cells[1] and cells[5] and cells[5] != "not yet covered":
            kept[cells[1]] = cells[5]
    return kept


def public_logs() -> list[Path]:
    """The public logs of the manifest (a log added but not yet listed there is not part
    of the corpus yet)."""
    return sorted(ROOT / e.path for e in read_manifest() if e.path.startswith("corpora/public/"))


def main() -> None:
    classifier = ClassifierOptions(no_model=True).build(print)
    kept = kept_reasons()
    rows = []
    logs = public_logs()
    for log in logs:
        result = classifier.classify_path(log)
        if result.reason != log.parent.name:
            name = f"{log.parent.name}/{log.stem}"
            why = kept.get(name, "not yet covered")
            rows.append(f"| {name} | {log.parent.name} | {result.reason} | {result.rule_id or '-'} | {why} |\n")
    TARGET.write_text(HEADER + "".join(rows))
    print(f"{len(rows)} known misses of {len(logs)} public logs -> {TARGET}")


if __name__ == "__main__":
    main()
