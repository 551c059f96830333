"""The README's 64-rank example, written by running the command it shows.

    python corpora/multirank/build.py --example --out corpora/multirank/examples   # a real Slurm, 64 real ranks
    python benchmarks/multirank/example.py corpora/multirank/examples/srun_label__missing_input__r37of64__0

It runs `failclass classify --attempt --facts FACTS.json FILE` on the attempt as a user
would (the facts are the scheduler's: nodes in rank order, tasks per node) and writes the
command and its output between the README's `multirank_example` markers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from readme import write_between

ROOT = Path(__file__).resolve().parent.parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("attempt", type=Path, help="an attempt folder of the multi-rank corpus (truth.json in it)")
    args = parser.parse_args()
    folder = args.attempt.resolve()
    truth = json.loads((folder / "truth.json").read_text())
    facts = folder / "facts.json"
    facts.write_text(json.dumps(truth["facts"]) + "\n")
    shown = [str((folder / f).relative_to(ROOT)) for f in ["facts.json", *truth["files"]]]
    command = ["failclass", "classify", "--attempt", "--facts", *shown]
    done = subprocess.run(
        [sys.executable, "-m", "failclass", *command[1:]], capture_output=True, text=True, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    ranks, nodes = truth["world_size"], len(truth["facts"]["nodes"])
    lines = [
        f"One attempt of {ranks} ranks on {nodes} nodes (`{truth['launcher']}`, style `{truth['style']}`, real; the fault "
        f"`{truth['fault']}` planted on rank {truth['origin']['rank']}), written by `benchmarks/multirank/example.py`:",
        "",
        "```",
        f"$ {' '.join(command)}",
        *done.stdout.rstrip("\n").splitlines(),
        "```",
    ]
    write_between("multirank_example", lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
