"""Run the scenario scripts (real failing programs) and keep what they print.

    python corpora/run_scenarios.py [--out DIR] [--only SUBSTRING] [--check]

Each ``corpora/scenarios/<name>.sh|.py`` runs with PY set to this interpreter (the
project's virtualenv, which has torch) and TORCHRUN beside it; its stdout and stderr
go to ``DIR/<name>.log`` (default build/scenarios/) and one row per scenario to ``DIR/manifest.jsonl`` (command,
exit status, seconds, bytes). With ``--check``, every rule example whose source is
``scenario:<name>`` must appear, line for line, in what that scenario printed now
(paths of this checkout are written as in the original run, ``/work/main``): the
proof that the example is real output and not a reconstruction. A scenario whose tool
is missing here (mpirun, gcc, ...) is reported as skipped, not as a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "corpora" / "scenarios"
RECORDED_ROOT = "/work/main"  # where the committed examples were produced
TIMEOUT = 120
NEEDS = {
    "mpi_error__mpi": "mpirun",
    "mpi_error__not_enough": "mpirun",
    "mpi_runtime_failure__rank": "mpirun",
    "mpi_runtime_failure__ssh": "mpirun",
    "cannot_load_libs__": "gcc",
    "invalid_mem_access__asan": "gcc",
    "invalid_mem_access__glibc": "gcc",
    "core_dump__native": "g++",
    "cpu_oom__cxx": "g++",
}


def scenario_paths(only: list[str] | None) -> list[Path]:
    paths = sorted(p for p in SCENARIOS.iterdir() if p.suffix in (".sh", ".py"))
    return [p for p in paths if not only or any(part in p.stem for part in only)]


def missing_tool(path: Path) -> str | None:
    for prefix, tool in NEEDS.items():
        if path.stem.startswith(prefix) and shutil.which(tool) is None:
            return tool
    return None


def execute(path: Path) -> tuple[bytes, dict]:
    """Run one scenario; its output (checkout paths written as in the recorded runs) and facts."""
    # Run from the scenarios folder by relative name, as the recorded runs were: bash and
    # Python print the script's name in their messages.
    command = ["bash", path.name] if path.suffix == ".sh" else [sys.executable, f"./{path.name}"]
    venv_bin = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PY": sys.executable,
        "TORCHRUN": str(Path(sys.executable).with_name("torchrun")),
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}",
    }
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, env=env, cwd=SCENARIOS, timeout=TIMEOUT, check=False)
        output, status = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        output, status = (exc.stdout or b"") + (exc.stderr or b""), "timeout"
    facts = {
        "scenario": path.stem,
        "command": f"cd corpora/scenarios && {' '.join(command).replace(sys.executable, '$PY')}",
        "status": status,
        "seconds": round(time.monotonic() - started, 1),
        "bytes": len(output),
    }
    return output.replace(str(ROOT).encode(), RECORDED_ROOT.encode()), facts


def run(path: Path, out: Path) -> dict:
    output, facts = execute(path)
    log = out / f"{path.stem}.log"
    log.write_bytes(output)
    return {**facts, "log": str(log)}


def ungrounded(printed: dict[str, str]) -> list[str]:
    """Examples citing a scenario whose lines are not all in that scenario's output."""
    sys.path.insert(0, str(ROOT))
    from failclass.matching.rules import load_rules

    problems = []
    for rule in load_rules().rules:
        for kind, examples in (("positive", rule.positives), ("negative", rule.negatives)):
            for number, example in enumerate(examples):
                name = (example.source or "").removeprefix("scenario:")
                if not example.source or not example.source.startswith("scenario:") or name not in printed:
                    continue
                text = normalise(printed[name])
                lost = [line for line in example.text.splitlines() if line.strip() and normalise(line).strip() not in text]
                if lost:
                    problems.append(f"{rule.id} examples.{kind}[{number}] ({name}): not printed now: {lost[0]!r}")
    return problems


def normalise(text: str) -> str:
    """Forget what differs between two honest runs: pids, addresses, times, temp names,
    ports, column padding, and ``dir/./script`` versus ``dir/script``."""
    text = re.sub(r"[ \t]+", " ", text).replace("/./", "/")
    text = re.sub(r"0x[0-9a-fA-F]+", "0x_", text)
    text = re.sub(r"/tmp/[A-Za-z0-9_.-]+", "/tmp/_", text)
    return re.sub(r"\d+", "0", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "scenarios")
    parser.add_argument("--only", action="append", help="run only scenarios whose name contains this (repeatable)")
    parser.add_argument("--check", action="store_true", help="verify that scenario-sourced examples are printed now")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows, printed = [], {}
    for path in scenario_paths(args.only):
        tool = missing_tool(path)
        if tool:
            print(f"skip {path.stem}: needs {tool}")
            continue
        row = run(path, args.out)
        rows.append(row)
        printed[path.stem] = Path(row["log"]).read_text(errors="replace")
        print(f"{row['status']!s:>7} {row['seconds']:6.1f}s {row['bytes']:8d} B  {path.stem}", flush=True)
    with (args.out / "manifest.jsonl").open("w") as manifest:
        for row in rows:
            manifest.write(json.dumps(row) + "\n")
    if args.check:
        problems = ungrounded(printed)
        for problem in problems:
            print("UNGROUNDED", problem)
        print(f"{len(rows)} scenarios run, {len(problems)} examples not reproduced")
        sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
