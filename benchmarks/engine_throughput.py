"""Throughput and peak memory of `failclass classify` against grep and ripgrep.

Generates (once, seeded) a corpus of realistic training logs: progress lines, tqdm bars,
rank-prefixed output and warnings, 88% of them ending in a real failure excerpt (the
positive examples of the rules), 10% of those with the root cause early in the file.
Then runs, over the same files and the same patterns (the rules' expanded patterns):

  failclass classify --json FILES          (Hyperscan, all rules, root cause chosen)
  LC_ALL=C grep -E -c -f PATTERNS FILES    (case-sensitive and -i passes, summed)
  rg -j1 -c -f PATTERNS FILES              (ripgrep, Unicode default)
  rg -j1 -c -f PATTERNS FILES with (?-u)   (ripgrep, ASCII mode)

and prints MB/s, peak RSS and each tool's rate as a ratio to failclass's. A second,
"model-heavy" corpus ends its failures with real corpus logs that no explicit rule names,
so that every one of them is read by the fallback model: failclass with the model, without
it, and ASCII ripgrep run over it too. Unicode
ripgrep is orders of magnitude slower on these patterns, so it runs on a prefix of
the corpus (--slow-sample-mb), beside failclass on the same prefix. Page
cache is warmed first; the fast tools run --repeat times and the best run counts.

    python benchmarks/engine_throughput.py [--size-mb 512] [--repeat 3]
    python benchmarks/engine_throughput.py --corpus DIR   # any folder of logs, e.g. the independent corpus
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from readme import write_between

from failclass.classifier import Classifier
from failclass.matching.rules import RuleSet, load_rules

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data" / "logs"
RESULTS = HERE / "results"
PEAK_WRAPPER = (
    "import json, resource, subprocess, sys, time;"
    "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE);"
    "print(json.dumps({'rc': p.returncode, 'seconds': time.perf_counter() - t, 'err': p.stderr.decode()[-500:],"
    " 'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)


def progress_line(rng: random.Random, step: int) -> str:
    kind = rng.random()
    if kind < 0.55:
        return (
            f"[rank{rng.randrange(8)}]: epoch {step // 1000} step {step} loss {rng.uniform(0.1, 4):.4f} "
            f"lr {rng.uniform(1e-5, 1e-3):.2e} grad_norm {rng.uniform(0.1, 9):.3f} {rng.uniform(100, 900):.1f} samples/s"
        )
    if kind < 0.8:
        done = step % 500
        bar = "█" * (done * 20 // 500) + " " * (20 - done * 20 // 500)
        return f"Epoch {step // 500}: {done * 100 // 500:3d}%|{bar}| {done}/500 [00:{done % 60:02d}<01:{(500 - done) % 60:02d}, {rng.uniform(1, 9):.2f}it/s, loss={rng.uniform(0.1, 4):.3f}]"
    if kind < 0.9:
        return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(1_700_000_000 + step))},{step % 1000:03d} - trainer - INFO - saving metrics for step {step} to /mnt/output/run-{step % 7}/metrics.json"
    if kind < 0.97:
        return f"I1119 12:{step % 60:02d}:{step % 59:02d}.{step:06d} {1000 + step % 97} data_loader.cc:{step % 900}] prefetch queue depth {rng.randrange(64)}"
    return "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 16 worker processes in total."


def model_endings(ruleset: RuleSet) -> list[str]:
    """Ends of real corpus logs that no explicit rule names (the rules answer with a
    consequence or nothing): the logs the fallback model has to read."""
    classifier = Classifier(ruleset)
    endings = []
    for log in sorted((ROOT / "corpora" / "public").glob("*/*.log")):
        result = classifier.classify_path(log)
        if result.rule_id is None or classifier.rules[result.rule_id].kind == "implicit":
            endings.append(log.read_text(errors="replace")[-8000:])
    return endings


def generate(ruleset: RuleSet, size_mb: int, seed: int, folder: Path = DATA, failures: list[str] | None = None) -> list[Path]:
    """Write a corpus (or reuse it when the same size and seed were generated before)."""
    manifest = folder / "manifest.json"
    wanted = {"size_mb": size_mb, "seed": seed, "rules": len(ruleset.rules), "endings": "model" if failures else "rules"}
    if manifest.exists() and json.loads(manifest.read_text()).get("params") == wanted:
        return [folder / name for name in json.loads(manifest.read_text())["files"]]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = random.Random(seed)
    failures = failures or [example.text for rule in ruleset.rules for example in rule.positives]
    budget = size_mb << 20
    files: list[str] = []
    while budget > 0:
        size = min(int(rng.lognormvariate(10.8, 1.3)), 20 << 20, budget)  # median ~49 KB, a few up to 20 MB
        lines: list[str] = []
        written = step = 0
        failed = rng.random() < 0.88
        early = failed and rng.random() < 0.10
        if early:
            lines.append(rng.choice(failures))
        while written < size:
            line = progress_line(rng, step)
            lines.append(line)
            written += len(line) + 1
            step += 1
        if failed and not early:
            lines.append(rng.choice(failures))
        name = f"attempt-{len(files):05d}.log"
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(name)
        budget -= written
    manifest.write_text(json.dumps({"params": wanted, "files": files}))
    return [folder / name for name in files]


def export_patterns(ruleset: RuleSet, workdir: Path) -> dict[str, Path]:
    """Write the rules' expanded patterns as pattern files for ripgrep and grep."""
    workdir.mkdir(parents=True, exist_ok=True)
    rg_lines, rg_ascii, grep_exact, grep_caseless = [], [], [], []
    for rule in ruleset.rules:
        for pattern in rule.patterns:
            expanded = ruleset.expanded(pattern)
            flag = "(?i)" if rule.ignore_case else ""
            rg_lines.append(flag + expanded)
            rg_ascii.append("(?-u)" + flag + as_bytes(expanded))
            ere = to_ere(expanded)
            if ere is not None:
                (grep_caseless if rule.ignore_case else grep_exact).append(ere)
    files = {
        "rg": rg_lines,
        "rg_ascii": rg_ascii,
        "grep": grep_exact,
        "grep_i": grep_caseless,
    }
    paths = {}
    for name, lines in files.items():
        path = workdir / f"{name}.patterns"
        path.write_bytes(("\n".join(lines) + "\n").encode())
        paths[name] = path
    return paths


def as_bytes(pattern: str) -> str:
    """Spell non-ASCII characters as the UTF-8 bytes Hyperscan sees, for ripgrep's (?-u)."""
    return "".join(c if c.isascii() else "".join(f"\\x{b:02X}" for b in c.encode()) for c in pattern)


def to_ere(pattern: str) -> str | None:
    """POSIX ERE for GNU grep: no (?:...), escapes inside brackets spelled out; None if grep refuses it."""
    ere = pattern.replace("(?:", "(").replace("\\r", "\r").replace("\\t", "\t").replace("\\d", "[0-9]")
    ere = ere.replace("[^\\]\r\n]", "[^]\r]").replace("[^ \\]]", "[^] ]").replace("\\n", "")
    check = subprocess.run(["grep", "-E", "-e", ere, "/dev/null"], capture_output=True, env={"LC_ALL": "C"}, check=False)
    return ere if check.returncode == 1 else None


def measure(command: list[str], env: dict[str, str] | None, timeout: float) -> dict:
    wrapped = [sys.executable, "-c", PEAK_WRAPPER, "timeout", str(timeout), *command]
    done = subprocess.run(wrapped, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False)
    run = json.loads(done.stdout)
    if run["rc"] == 124:
        run["timed_out"] = True
    elif run["rc"] not in (0, 1):  # grep and rg exit 1 when nothing matched
        raise SystemExit(f"{command[0]} failed: {run['err']}")
    return run


def best_of(repeat: int, command: list[str], files: list[Path], env: dict[str, str] | None = None, timeout: float = 900) -> dict:
    """Best of ``repeat`` runs over ``files``, with the megabytes it covered."""
    runs = [measure(command + [str(f) for f in files], env, timeout) for _ in range(repeat)]
    best = min(runs, key=lambda run: run["seconds"])
    best["mb"] = sum(f.stat().st_size for f in files) / (1 << 20)
    best["files"] = len(files)
    return best


def sample(files: list[Path], megabytes: float) -> list[Path]:
    """A prefix of the corpus of about ``megabytes`` (for tools too slow for all of it)."""
    chosen, total = [], 0
    for f in files:
        if total >= megabytes * (1 << 20):
            break
        chosen.append(f)
        total += f.stat().st_size
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=512)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--slow-sample-mb", type=float, default=4, help="corpus prefix for Unicode ripgrep, the slowest")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a tool run is cut off")
    parser.add_argument(
        "--corpus",
        type=Path,
        help="measure over this folder's *.log files instead (e.g. benchmarks/independent/generate.py's logs/, "
        "written without reading the rules); the model-heavy corpus is then left out",
    )
    parser.add_argument("--readme", metavar="WHAT", help="write the table into README.md, saying WHAT corpus it was")
    args = parser.parse_args()
    if not shutil.which("rg"):
        raise SystemExit("ripgrep is needed for the comparison: apt-get install -y ripgrep")
    ruleset = load_rules()
    files = sorted(args.corpus.rglob("*.log")) if args.corpus else generate(ruleset, args.size_mb, args.seed)
    if not files:
        raise SystemExit(f"{args.corpus}: no *.log files")
    patterns = export_patterns(ruleset, RESULTS / "patterns")
    for f in files:  # warm the page cache
        f.read_bytes()
    slow = sample(files, args.slow_sample_mb)
    rg = ["rg", "-j1", "-c", "-a", "--no-ignore", "-f"]
    grep = ["grep", "-E", "-c", "-a", "-f"]
    c = {"LC_ALL": "C"}
    rows = {
        "failclass classify": best_of(args.repeat, [sys.executable, "-m", "failclass.cli", "classify", "--json"], files),
        "ripgrep -j1 (?-u) ASCII": best_of(args.repeat, [*rg, str(patterns["rg_ascii"])], files, timeout=args.timeout),
        "failclass classify (sample)": best_of(args.repeat, [sys.executable, "-m", "failclass.cli", "classify", "--json"], slow),
        "ripgrep -j1 Unicode (sample)": best_of(1, [*rg, str(patterns["rg"])], slow, timeout=args.timeout),
    }
    rows["failclass --no-model"] = best_of(
        args.repeat, [sys.executable, "-m", "failclass.cli", "--no-model", "classify", "--json"], files
    )
    if not args.corpus:
        heavy = generate(ruleset, max(args.size_mb // 4, 8), args.seed, DATA.parent / "logs-model", model_endings(ruleset))
        for f in heavy:
            f.read_bytes()
        classify = [sys.executable, "-m", "failclass.cli", "classify", "--json"]
        rows["failclass classify (model-heavy)"] = best_of(args.repeat, classify, heavy)
        rows["failclass --no-model (model-heavy)"] = best_of(
            args.repeat, [sys.executable, "-m", "failclass.cli", "--no-model", "classify", "--json"], heavy
        )
        rows["ripgrep -j1 (?-u) ASCII (model-heavy)"] = best_of(
            args.repeat, [*rg, str(patterns["rg_ascii"])], heavy, timeout=args.timeout
        )
    exact = best_of(1, [*grep, str(patterns["grep"])], files, c, args.timeout)
    caseless = best_of(1, ["grep", "-E", "-i", "-c", "-a", "-f", str(patterns["grep_i"])], files, c, args.timeout)
    rows["grep -E -f LC_ALL=C, 2 passes"] = {
        "seconds": exact["seconds"] + caseless["seconds"],
        "peak_mb": max(exact["peak_mb"], caseless["peak_mb"]),
        "mb": exact["mb"],
        "files": exact["files"],
        "timed_out": exact.get("timed_out", False) or caseless.get("timed_out", False),
    }
    report(ruleset, patterns, rows, args.readme)


def report(ruleset: RuleSet, patterns: dict[str, Path], rows: dict[str, dict], readme: str | None = None) -> None:
    """Print the table (and, with ``readme``, write it into the README between its
    markers, under that heading: the figures there are this run's)."""
    pattern_count = sum(len(r.patterns) for r in ruleset.rules)
    grep_count = sum(patterns[k].read_bytes().count(b"\n") for k in ("grep", "grep_i"))
    full = rows["failclass classify"]
    sampled = rows["failclass classify (sample)"]
    print(f"corpus: {full['files']} logs, {full['mb']:.0f} MB; sample: {sampled['files']} logs, {sampled['mb']:.1f} MB")
    print(
        f"{len(ruleset.rules)} rules, {pattern_count} patterns (grep runs {grep_count} of them: the rest use syntax POSIX ERE lacks)"
    )
    table = ["| tool | MB | seconds | MB/s | peak RSS MB | rate vs failclass |", "|---|---:|---:|---:|---:|---:|"]
    for name, row in rows.items():
        rate = row["mb"] / row["seconds"]
        group = "(sample)" if "(sample)" in name else "(model-heavy)" if "(model-heavy)" in name else ""
        base = rows[f"failclass classify {group}".strip()]
        ratio = rate / (base["mb"] / base["seconds"])
        note = " (timed out: an upper bound)" if row.get("timed_out") else ""
        table.append(
            f"| {name} | {row['mb']:.1f} | {row['seconds']:.2f} | {rate:.1f} | {row['peak_mb']:.0f} | {ratio:.2f}x{note} |"
        )
    print("\n".join(table))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "engine.json").write_text(json.dumps(rows, indent=2))
    if readme is not None:
        what = f"{full['files']} logs, {full['mb']:.0f} MB; {len(ruleset.rules)} rules"
        write_between(
            "engine_throughput", [f"Written by `benchmarks/engine_throughput.py --readme` ({readme}: {what}):", "", *table]
        )


if __name__ == "__main__":
    main()
