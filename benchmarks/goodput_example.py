"""The README's example of GPU time lost per user: `failclass report` run on the small trace
whose figures tests/analytics/test_goodput.py checks (tests/analytics/goodput_trace.py),
its per-user table printed, or written into the README (--readme).

    .venv/bin/python benchmarks/goodput_example.py --readme
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from readme import write_between

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "analytics"))
from goodput_trace import trace, waste_report  # noqa: E402

TITLE = "## GPU time lost per user (ETTR)"


def rendered() -> list[str]:
    """The command, then the report's per-user table as it prints it."""
    with tempfile.TemporaryDirectory() as folder:
        manifest, waste = trace(Path(folder)), waste_report(Path(folder))
        done = subprocess.run(
            [sys.executable, "-m", "failclass.cli", "report", str(manifest), "--waste", str(waste)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
    table = done.stdout.split(TITLE, 1)[1].strip().split("\n\n")[0]
    command = "failclass report attempts.jsonl --waste waste.json"
    return [f"Written by `benchmarks/goodput_example.py --readme` (`{command}`):", "", table]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="write the table into README.md")
    lines = rendered()
    if parser.parse_args().readme:
        write_between("goodput_example", lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
