"""What the fallback model costs: start-up, memory, and time per log it is asked about.

The model is unpickled only when a log has no explicit signature, and then reads only
the log's last 64 KiB. This runs the real command line over the same logs three ways:
logs that an explicit rule explains (the model is never loaded), and logs that no
explicit rule explains, with and without the model (``--no-model``); wall time and peak
RSS of each run, best of --repeat.

    python benchmarks/fallback_cost.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from failclass.classifier import Classifier
from failclass.model.corpus import read_manifest, resolve

PEAK_WRAPPER = (
    "import json, resource, subprocess, sys, time;"
    "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
    "print(json.dumps({'seconds': time.perf_counter() - t, 'rc': p.returncode,"
    " 'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)


def measured(args: list[str], repeat: int) -> dict[str, float]:
    command = [sys.executable, "-c", PEAK_WRAPPER, sys.executable, "-m", "failclass.cli", *args]
    runs = [json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout) for _ in range(repeat)]
    return min(runs, key=lambda run: run["seconds"])


def split_by_rules() -> tuple[list[str], list[str]]:
    """Corpus logs that an explicit rule explains, and those it does not."""
    rules = Classifier()
    explained, unexplained = [], []
    for entry in read_manifest():
        path = resolve(entry)
        result = rules.classify_path(path)
        is_explicit = result.rule_id is not None and rules.rules[result.rule_id].kind == "explicit"
        (explained if is_explicit else unexplained).append(str(path))
    return explained, unexplained


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    explained, unexplained = split_by_rules()
    rows = [
        ("explicit signature (model never loaded)", explained, []),
        ("no explicit signature, rules only", unexplained, ["--no-model"]),
        ("no explicit signature, rules + model", unexplained, []),
    ]
    print(f"{'logs':44}{'count':>7}{'seconds':>9}{'ms/log':>8}{'peak MB':>9}")
    started = time.monotonic()
    for title, logs, flags in rows:
        run = measured([*flags, "classify", "--json", *logs], args.repeat)
        print(f"{title:44}{len(logs):>7}{run['seconds']:>9.2f}{1000 * run['seconds'] / len(logs):>8.1f}{run['peak_mb']:>9.0f}")
    single = measured(["classify", "--json", unexplained[0]], args.repeat)
    print(f"{'one unexplained log, model loaded':44}{1:>7}{single['seconds']:>9.2f}{'':>8}{single['peak_mb']:>9.0f}")
    print(f"({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
