"""Regenerate the produced corpus and the manifest: one command, `make corpus`.

    python corpora/build.py [--variants N] [--jobs N] [--only SUBSTRING]... [--manifest-only]

1. Every failing scenario (corpora/scenarios/<reason>__<slug>) is run N times (default 2).
   Each run's output is appended to real surrounding output, as a job's log holds it:
   the training progress of corpora/programs/train_progress.py (a real PyTorch CPU run,
   its last line dropped: the job never got there) or, for failures that happen at start
   up, the environment report that PyTorch's own ``torch.utils.collect_env`` prints. One
   prelude in four also carries real warnings, and one in four a logged traceback that the
   job survived (the hard case: a scary message before an unrelated root cause). The log
   goes to ``produced/<reason>/<scenario>__<k>.log`` with its facts in ``.json``.
2. Passed jobs: train_progress.py runs to the end in every output style, with and without
   warnings, and the passed__* scenarios run N times: ``passed/runs/``.
3. ``manifest.jsonl``: one row per log of the corpus (failclass.model.corpus).

Paths of this checkout are written as ``/work/main`` (where the corpus was first built),
so a rebuild elsewhere differs only where the programs' output really differs (pids,
addresses, timings).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_scenarios import RECORDED_ROOT, ROOT, execute, missing_tool, scenario_paths

sys.path.insert(0, str(ROOT))
from failclass.model.corpus import scan_corpus, write_manifest

CORPORA = ROOT / "corpora"
PROGRESS = CORPORA / "programs" / "train_progress.py"
STYLES = ("plain", "logging", "bar", "dict")
STARTUP_REASONS = {
    "syntax_error",
    "import_error",
    "cannot_load_libs",
    "cuda_init_failed",
    "cuda_version_mismatch",
    "permission_error",
}
PASSED_SEEDS = range(12)


def run_program(args: list[str]) -> bytes:
    done = subprocess.run([sys.executable, *args], capture_output=True, cwd="/tmp", timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]!r}")
    output = done.stderr + done.stdout  # warnings (stderr) come first in these programs
    return output.replace(str(ROOT).encode(), RECORDED_ROOT.encode())


def progress_args(style: str, seed: int, epochs: int, warnings: bool, recovered: bool) -> list[str]:
    args = ["corpora/programs/train_progress.py", f"--style={style}", f"--seed={seed}", f"--epochs={epochs}"]
    return args + ["--warnings"] * warnings + ["--recovered-error"] * recovered


RELABELLED: dict[str, str] = yaml.safe_load((CORPORA / "scenarios" / "labels.yaml").read_text()) or {}


def prelude_args(reason: str, scenario: str, variant: int) -> list[str]:
    """The surrounding output of one produced log, chosen deterministically."""
    h = int(hashlib.sha1(f"{scenario}:{variant}".encode()).hexdigest(), 16)
    if reason in STARTUP_REASONS and variant % 2 == 0:
        return ["-m", "torch.utils.collect_env"]
    return progress_args(STYLES[h % 4], h % 11, 1 + (h >> 4) % 3, (h >> 8) % 4 == 0, (h >> 12) % 4 == 0)


def prelude(args: list[str]) -> bytes:
    output = run_program([str(ROOT / args[0]) if args[0].endswith(".py") else args[0], *args[1:]])
    if args[0].endswith(".py"):  # a failing job never prints its "training finished" line
        output = output.rstrip(b"\n").rsplit(b"\n", 1)[0] + b"\n"
    return output


def shell(args: list[str]) -> str:
    return "$PY " + " ".join(args)


def produce(path: Path, variants: int) -> list[str]:
    reason = path.stem.split("__", 1)[0]
    label = RELABELLED.get(path.stem, reason)  # the guide's reason (scenarios/labels.yaml)
    folder = CORPORA / ("passed/runs" if reason == "passed" else f"produced/{label}")
    folder.mkdir(parents=True, exist_ok=True)
    done = []
    for variant in range(variants):
        output, facts = execute(path)
        facts.pop("bytes")
        facts.pop("seconds")
        surrounding = b""
        if reason != "passed":
            args = prelude_args(reason, path.stem, variant)
            surrounding = prelude(args)
            facts["prelude"] = shell(args)
        facts.update(reason="no_signature" if reason == "passed" else label, variant=variant)
        log = folder / f"{path.stem}__{variant}.log"
        log.write_bytes(surrounding + output)
        log.with_suffix(".json").write_text(json.dumps(facts, indent=1) + "\n")
        done.append(f"{facts['status']!s:>7}  {log.relative_to(CORPORA)}")
    return done


def passed_run(style: str, seed: int, warnings: bool) -> list[str]:
    args = progress_args(style, seed, 1 + seed % 3, warnings, False)
    folder = CORPORA / "passed" / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"train_progress_{style}_{seed}{'_warnings' * warnings}.log"
    log.write_bytes(run_program([str(ROOT / args[0]), *args[1:]]))
    facts = {"program": shell(args), "reason": "no_signature", "status": 0}
    log.with_suffix(".json").write_text(json.dumps(facts, indent=1) + "\n")
    return [f"      0  {log.relative_to(CORPORA)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", action="append", help="only scenarios whose name contains this (repeatable)")
    parser.add_argument("--passed-only", action="store_true", help="only the passed runs of train_progress.py")
    parser.add_argument("--manifest-only", action="store_true", help="only rewrite manifest.jsonl")
    args = parser.parse_args()
    if not args.manifest_only:
        tasks = []
        with ThreadPoolExecutor(args.jobs) as pool:
            for path in [] if args.passed_only else scenario_paths(args.only):
                tool = missing_tool(path)
                if tool:
                    print(f"skip {path.stem}: needs {tool}")
                    continue
                tasks.append(pool.submit(produce, path, args.variants))
            if not args.only:
                for style in STYLES:
                    for seed in PASSED_SEEDS:
                        tasks.append(pool.submit(passed_run, style, seed, seed % 2 == 1))
            for task in tasks:
                print("\n".join(task.result()), flush=True)
    entries = list(scan_corpus())
    write_manifest(entries)
    print(f"manifest: {len(entries)} logs")


if __name__ == "__main__":
    main()
