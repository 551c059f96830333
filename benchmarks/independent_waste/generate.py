#!/usr/bin/env python3
"""An independent generator of GPU-cluster waste traces with planted causes of low GPU
utilisation (Gao et al., ICSE 2024: 15 categories in 4 dimensions), to measure waste
detectors on data they were not tuned on.

Written without reading failclass's waste code, its cause catalogue, its corpora or its own
generator: another author's reading of the paper (Table 1 and Section 4), of DCGM exporter,
Prometheus, nvidia-smi, Slurm and Kubernetes output, and of real log lines copied from public
pages (snippets.yaml, each entry with its source URL).

    python3 benchmarks/independent_waste/generate.py --out /tmp/waste --jobs 40 --seed 1
    python3 benchmarks/independent_waste/generate.py --out /tmp/waste --jobs 40 --seed 1 --describe

Writes OUT/metrics/ (DCGM exporter series as Prometheus range-query JSON, or nvidia-smi CSV
logs), OUT/jobs/ (sacct --json, sacct -P, a CSV export or Kubernetes pod JSON), OUT/logs/
(each job's stdout) and OUT/truth.json. Standard library and numpy only; the same seed and
options give the same bytes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import random
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
UTC = dt.UTC

# Gao et al., ICSE 2024, Table 1: (stable id, category name as the paper writes it, dimension).
CATEGORIES: tuple[tuple[str, str, str], ...] = (
    ("interactive_job", "Interactive Job", "Job"),
    ("gpu_oversubscription", "GPU Oversubscription", "Job"),
    ("unreleased_job", "Unreleased Job", "Job"),
    ("non_dl_job", "Non-DL Job", "Job"),
    ("improper_batch_size", "Improper Batch Size", "Model"),
    ("insufficient_gpu_memory", "Insufficient GPU Memory", "Model"),
    ("model_checkpointing", "Model Checkpointing", "Model"),
    ("inefficient_host_gpu_data_transfer", "Inefficient Host-GPU Data Transfer", "Data"),
    ("data_preprocessing", "Data Preprocessing", "Data"),
    ("remote_data_read", "Remote Data Read", "Data"),
    ("external_data_usage", "External Data Usage", "Data"),
    ("intermediate_result_upload", "Intermediate Result Upload", "Data"),
    ("data_exchange", "Data Exchange", "Data"),
    ("long_library_installation", "Long Library Installation", "Library"),
    ("api_misuse", "API Misuse", "Library"),
)
CATEGORY = {cid: (name, dim) for cid, name, dim in CATEGORIES}
STARTUP_CAUSES = ("long_library_installation", "external_data_usage", "data_preprocessing")
DIP_CAUSES = ("model_checkpointing", "intermediate_result_upload", "remote_data_read", "data_exchange")
STEADY_CAUSES = ("improper_batch_size", "insufficient_gpu_memory", "inefficient_host_gpu_data_transfer")
# Two causes in one job: (first, second), each pair possible in one job's life.
PAIRS: tuple[tuple[str, str], ...] = (
    ("long_library_installation", "model_checkpointing"),
    ("external_data_usage", "improper_batch_size"),
    ("data_preprocessing", "data_exchange"),
    ("long_library_installation", "insufficient_gpu_memory"),
    ("external_data_usage", "intermediate_result_upload"),
    ("data_preprocessing", "remote_data_read"),
    ("gpu_oversubscription", "model_checkpointing"),
    ("model_checkpointing", "unreleased_job"),
    ("inefficient_host_gpu_data_transfer", "unreleased_job"),
    ("external_data_usage", "api_misuse"),
    ("data_exchange", "model_checkpointing"),
    ("long_library_installation", "inefficient_host_gpu_data_transfer"),
    ("gpu_oversubscription", "data_preprocessing"),
    ("improper_batch_size", "intermediate_result_upload"),
)
# GPU models: name as nvidia-smi and DCGM's modelName print it, memory.total in MiB as
# nvidia-smi prints it (each seen in a public nvidia-smi output, see README), GPUs per node.
GPU_MODELS: dict[str, tuple[int, int]] = {
    "NVIDIA A100-SXM4-80GB": (81920, 8),
    "NVIDIA A800-SXM4-80GB": (81920, 8),
    "Tesla V100-SXM2-32GB": (32768, 4),
    "NVIDIA H200": (143771, 8),
}
RESERVED_MIB = 512  # frame buffer the driver keeps: DCGM's FB_FREE + FB_USED = total - reserved
PCI_BUS = ("07", "0F", "47", "4E", "87", "90", "B7", "BD")
JOBS_FORMATS = ("sacct-json", "csv", "k8s-pods", "sacct-parsable")
USERS = ("akumar", "lchen", "mrossi", "jdoe", "swang", "tnguyen", "epetrov", "rgarcia", "hsato", "okim")
PROMETHEUS_MAX_POINTS = 11000  # Prometheus refuses range queries over 11,000 points per series

# ------------------------------------------------------------------------------- snippets


@dataclass(frozen=True)
class Snippet:
    """One entry of snippets.yaml: real log lines and the page they come from."""

    id: str
    group: str
    role: str
    stamp: str
    source: str
    lines: tuple[str, ...]


def _unquote(text: str, where: str) -> str:
    if len(text) < 2 or text[0] != "'" or text[-1] != "'":
        raise ValueError(f"{where}: a line must be one single-quoted string")
    inner = text[1:-1]
    if "'" in inner.replace("''", ""):
        raise ValueError(f"{where}: a lone ' inside a single-quoted string")
    return inner.replace("''", "'")


def load_snippets(path: Path) -> list[Snippet]:
    """Read snippets.yaml (a strict YAML subset, no PyYAML needed); errors name file and line."""
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{number}"
        if not raw.strip() or raw.startswith("#"):
            continue
        if raw.startswith("- id: "):
            lines = []
            entries.append({"id": raw[6:].strip(), "lines": lines, "where": where})
        elif raw == "  lines:":
            continue
        elif raw.startswith("  - ") and entries:
            lines.append(_unquote(raw[4:], where))
        elif (m := re.fullmatch(r"  (group|role|stamp|source): (\S+)", raw)) and entries:
            entries[-1][m.group(1)] = m.group(2)
        else:
            raise ValueError(f"{where}: not part of the snippet format: {raw!r}")
    snippets = []
    for e in entries:
        missing = {"group", "role", "stamp", "source"} - set(e)
        if missing or not e["lines"]:
            raise ValueError(f"{e['where']}: entry {e['id']} lacks {sorted(missing) or ['lines']}")
        if e["role"] not in ("setup", "repeat", "end") or e["stamp"] not in ("own", "logger"):
            raise ValueError(f"{e['where']}: role or stamp of {e['id']} is not a known value")
        if not str(e["source"]).startswith("https://"):
            raise ValueError(f"{e['where']}: source of {e['id']} is not a URL")
        snippets.append(
            Snippet(str(e["id"]), str(e["group"]), str(e["role"]), str(e["stamp"]), str(e["source"]), tuple(e["lines"]))
        )
    if len({s.id for s in snippets}) != len(snippets):
        raise ValueError(f"{path.name}: duplicate ids")
    return snippets


class Library:
    """Snippets by group and role."""

    def __init__(self, snippets: list[Snippet]) -> None:
        self.snippets = snippets

    def pick(self, rng: random.Random, group: str, role: str | None = None) -> Snippet:
        found = [s for s in self.snippets if s.group == group and (role is None or s.role == role)]
        if not found:
            raise KeyError(f"no snippet in group {group} with role {role}")
        return rng.choice(found)

    def has(self, group: str, role: str) -> bool:
        return any(s.group == group and s.role == role for s in self.snippets)


def family(snippet_id: str) -> str:
    """The tool a snippet comes from: the first word of its id (ids taken over keep their "ind_")."""
    return snippet_id.removeprefix("ind_").split("_")[0]


PH = re.compile(r"\$\{(\w+)(?::([^}]*))?\}")


class Filler:
    """Fills ${...} placeholders: numbers, names and timestamps taken from the line's clock."""

    def __init__(self, rng: random.Random, ctx: dict[str, str]) -> None:
        self.rng = rng
        self.ctx = ctx
        self.last = "0"

    def fill(self, template: str, clock: dt.datetime, extra: dict[str, str]) -> str:
        def sub(m: re.Match[str]) -> str:
            return self._one(m.group(1), m.group(2), clock, extra)

        return PH.sub(sub, template)

    def _one(self, name: str, arg: str | None, c: dt.datetime, extra: dict[str, str]) -> str:
        rng = self.rng
        if name in extra:
            return extra[name]
        if name in self.ctx:
            return self.ctx[name]
        if name == "int" and arg:
            a, b = arg.split(":")
            self.last = str(rng.randint(int(a), int(b)))
            return self.last
        if name.startswith("pad") and arg:
            a, b = arg.split(":")
            self.last = str(rng.randint(int(a), int(b))).zfill(int(name[3:]))
            return self.last
        if name == "float" and arg:
            a, b, d = arg.split(":")
            return f"{rng.uniform(float(a), float(b)):.{int(d)}f}"
        if name == "hex" and arg:
            return "".join(rng.choice("0123456789abcdef") for _ in range(int(arg)))
        if name == "same":
            return self.last
        if name == "uuid":
            h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        stamps: dict[str, Callable[[dt.datetime], str]] = {
            "ms": lambda t: f"{t.microsecond // 1000:03d}",
            "dashts": lambda t: t.strftime("%Y-%m-%d %H:%M:%S"),
            "tfts": lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f"),
            "jupts": lambda t: t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}",
            "wgetts": lambda t: t.strftime("%Y-%m-%d %H:%M:%S"),
            "hms": lambda t: t.strftime("%H:%M:%S"),
            "date": lambda t: t.strftime("%Y-%m-%d"),
            "udate8": lambda t: t.strftime("%Y%m%d"),
            "hms6": lambda t: t.strftime("%H%M%S"),
            "yy": lambda t: t.strftime("%y"),
            "mmdd": lambda t: t.strftime("%m-%d"),
            "mmdd2": lambda t: t.strftime("%m/%d"),
            "glogdate": lambda t: t.strftime("%m%d"),
        }
        if name in stamps:
            return stamps[name](c)
        raise KeyError(f"unknown placeholder ${{{name}}}")


# ---------------------------------------------------------------------- configuration


@dataclass
class Config:
    """What a trace looks like: chosen from the seed, each choice overridable by an option."""

    seed: int
    jobs: int
    jobs_format: str
    signals: str  # prometheus | nvidia-smi
    series_layout: str  # per-metric | combined
    step: int  # seconds between readings
    gpu_model: str
    csv_flavour: int
    t0: dt.datetime

    @property
    def total_mib(self) -> int:
        return GPU_MODELS[self.gpu_model][0]

    @property
    def per_node(self) -> int:
        return GPU_MODELS[self.gpu_model][1]

    @property
    def whole_nodes(self) -> bool:
        """nvidia-smi logs carry no job labels, so every job holds whole nodes."""
        return self.signals == "nvidia-smi"


def make_config(args: argparse.Namespace) -> Config:
    s = args.seed
    jobs_format = args.jobs_format or JOBS_FORMATS[s % 4]
    if args.signals:
        signals = args.signals
    elif jobs_format in ("csv", "sacct-parsable") and (s // 4) % 2 == 0:
        signals = "nvidia-smi"
    else:
        signals = "prometheus"
    if signals == "nvidia-smi" and jobs_format == "k8s-pods":
        raise SystemExit("nvidia-smi logs carry no pod labels: use --signals prometheus with k8s-pods")
    models = list(GPU_MODELS)
    return Config(
        seed=s,
        jobs=args.jobs,
        jobs_format=jobs_format,
        signals=signals,
        series_layout=args.series_layout or ("combined" if (s // 2) % 2 else "per-metric"),
        step=args.step or (15 if s % 3 == 0 else 30),
        gpu_model=args.gpu_model or models[(s // 3) % len(models)],
        csv_flavour=(s // 4) % 3,
        t0=dt.datetime(2024, 5, 1, tzinfo=UTC) + dt.timedelta(days=s % 97),
    )


# ---------------------------------------------------------------------- job plans


@dataclass
class Plan:
    """What one job is: its causes, size, shape parameters and how it logs."""

    index: int
    causes: list[str]
    n_gpus: int
    kind: str  # batch | interactive
    variant: str = ""  # interactive: jupyter | notebook | vscode | sshd | shell; api_misuse: cpu | single
    log_style: str = "none"  # dash | bracket | none (logger-stamped lines)
    rank_tag: str = ""  # [rank0]: | [default0]: | ""


def plan_jobs(cfg: Config, rng: random.Random) -> list[Plan]:
    """Blocks of 20 jobs: 4 healthy, 11 with one cause, 5 with two; causes cycle in shuffled order."""
    singles: list[str] = []
    pairs: list[tuple[str, str]] = []
    plans = []
    for i in range(cfg.jobs):
        slot = i % 20
        if slot in (3, 8, 13, 18):
            causes: list[str] = []
        elif slot in (5, 10, 15, 17, 19):
            if not pairs:
                pairs = list(PAIRS)
                rng.shuffle(pairs)
            causes = list(pairs.pop())
        else:
            if not singles:
                singles = [c for c, _, _ in CATEGORIES]
                rng.shuffle(singles)
            causes = [singles.pop()]
        plans.append(_size(cfg, rng, Plan(i, causes, 1, "batch")))
    return plans


def _size(cfg: Config, rng: random.Random, p: Plan) -> Plan:
    gpn = cfg.per_node
    multi_needed = {"gpu_oversubscription", "data_exchange"} & set(p.causes)
    if "interactive_job" in p.causes:
        p.kind = "interactive"
        # JupyterHub pods on Kubernetes; on Slurm also code tunnels, sshd and `srun --pty bash` (no log)
        p.variant = rng.choice(
            ("jupyter", "notebook") if cfg.jobs_format == "k8s-pods" else ("jupyter", "notebook", "vscode", "sshd", "shell")
        )
    if "api_misuse" in p.causes:
        p.variant = "single" if len(p.causes) > 1 or rng.random() < 0.5 else "cpu"
        if p.variant == "single":
            multi_needed.add("api_misuse")
    if cfg.whole_nodes:
        nodes = 2 if "data_exchange" in p.causes or rng.random() < 0.15 else 1
        p.n_gpus = nodes * gpn
    elif "data_exchange" in p.causes:
        p.n_gpus = rng.choice((gpn, 2 * gpn, 2 * gpn))
    elif multi_needed:
        p.n_gpus = rng.choice([g for g in (2, 4, gpn, 2 * gpn) if g <= 2 * gpn and g >= 2])
    elif p.kind == "interactive":
        p.n_gpus = rng.choice((1, 1, 2, 4))
    else:
        p.n_gpus = rng.choice((1, 1, 2, 4, 4, gpn, gpn, 2 * gpn))
    p.log_style = rng.choice(("dash", "bracket", "none", "none"))
    p.rank_tag = rng.choice(("", "", "[rank0]:", "[default0]:")) if p.n_gpus > 1 else ""
    return p


# ---------------------------------------------------------------------- one job's series


@dataclass
class LogEvent:
    """Lines of one snippet printed at t seconds after the job started."""

    t: float
    snippet: Snippet
    cause: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    in_process: bool = True  # printed by the training process (rank tags apply)


@dataclass
class Built:
    """One job's readings (GPUs x steps), its planted causes and its log events."""

    util: np.ndarray
    mem: np.ndarray
    causes: dict[str, dict[str, Any]]
    benign: list[dict[str, Any]]
    events: list[LogEvent]


class JobBuilder:
    """Draws one job's phases, their readings and the log lines that fall in them."""

    def __init__(self, cfg: Config, lib: Library, rng: random.Random, npr: np.random.Generator, plan: Plan) -> None:
        self.cfg, self.lib, self.rng, self.npr, self.plan = cfg, lib, rng, npr, plan
        self.s = cfg.step
        self.chosen: dict[tuple[str, str], Snippet] = {}
        self.family: dict[str, str] = {}

    def fam(self, group: str, role: str) -> Snippet | None:
        """This job's snippet of a group and role from one tool (the id's first word): a wget header
        is followed by wget progress, not by another downloader's. None when that tool has none."""
        if group not in self.family:
            self.family[group] = family(self.rng.choice([x for x in self.lib.snippets if x.group == group]).id)
        found = [x for x in self.lib.snippets if x.group == group and x.role == role and family(x.id) == self.family[group]]
        if not found:
            return None
        if (group, role) not in self.chosen:
            self.chosen[(group, role)] = self.rng.choice(found)
        return self.chosen[(group, role)]

    def once(self, group: str, role: str) -> Snippet:
        """The snippet this job prints for a group and role, again and again: one tool per job."""
        if (group, role) not in self.chosen:
            self.chosen[(group, role)] = self.lib.pick(self.rng, group, role)
        return self.chosen[(group, role)]

    def steps(self, minutes_lo: float, minutes_hi: float) -> int:
        return max(1, round(self.rng.uniform(minutes_lo, minutes_hi) * 60 / self.s))

    def build(self) -> Built:
        p, rng = self.plan, self.rng
        G = p.n_gpus
        total = self.cfg.total_mib
        causes = set(p.causes)
        ev: list[LogEvent] = []
        spans: dict[str, dict[str, Any]] = {}
        benign: list[dict[str, Any]] = []
        # -- lengths (in readings)
        startup = next((c for c in p.causes if c in STARTUP_CAUSES), None)
        boot = rng.randint(1, max(1, 120 // self.s))  # interpreter start, imports: no CUDA context yet
        pre = 0
        if startup == "long_library_installation":
            pre = self.steps(12, 45)
        elif startup == "external_data_usage":
            pre = self.steps(12, 60)
        elif startup == "data_preprocessing":
            pre = self.steps(18, 90)
        if p.kind == "interactive":
            train = self.steps(120, 540)
        elif "non_dl_job" in causes:
            train = self.steps(60, 240)
        elif startup and len(causes) == 1:
            train = max(4, round(pre * rng.uniform(0.45, 1.1)))
        else:
            train = self.steps(60, 330)
        tail = 0
        if "unreleased_job" in causes:
            frac = rng.uniform(0.45, 0.65) if len(causes) == 1 else rng.uniform(0.3, 0.45)
            tail = max(2, round((boot + pre + train) * frac / (1 - frac)))
        L = boot + pre + train + tail
        util = np.zeros((G, L), dtype=np.int64)
        mem = np.zeros((G, L), dtype=np.int64)
        used = list(range(G))
        if "gpu_oversubscription" in causes:
            used = list(range(max(1, G // 2)))
        if "api_misuse" in causes:
            used = [] if p.variant == "cpu" else [0]
        if "non_dl_job" in causes:
            used = []
        if p.kind == "interactive" and (G == 1 or rng.random() < 0.6):
            used = [0]
        unused = [g for g in range(G) if g not in used]
        # -- memory the model holds
        if "improper_batch_size" in causes:
            frac_mem = rng.uniform(0.08, 0.4)
        elif "insufficient_gpu_memory" in causes:
            frac_mem = rng.uniform(0.84, 0.95)
        else:
            frac_mem = rng.uniform(0.3, 0.78)
        model_mib = [int(total * frac_mem * rng.uniform(0.97, 1.0)) for _ in range(G)]
        ctx_mib = rng.randint(380, 620)
        a = boot
        shell_first = startup in ("long_library_installation", "external_data_usage")  # before python starts
        if p.kind == "batch" and "non_dl_job" not in causes:
            ev += self._banners((boot + (pre if shell_first else 0)) * self.s)
        # -- start-up cause
        if startup:
            self._startup(startup, util, mem, used, a, pre, model_mib, ctx_mib, ev, spans)
        a += pre
        # -- the main phase
        if p.kind == "interactive":
            self._interactive(util, mem, used, a, train, ev, spans)
        elif "non_dl_job" in causes:
            self._whole(ev, "non_dl", a, train)
            spans["non_dl_job"] = {
                "ranges": [(0, L)],
                "gpus": list(range(G)),
                "shape": "all GPUs at 0 % and 0 MiB for the whole job",
            }
        elif "api_misuse" in causes and p.variant == "cpu":
            self._api_misuse_cpu(ev, a, train)
            spans["api_misuse"] = {
                "ranges": [(0, L)],
                "gpus": list(range(G)),
                "shape": "GPUs allocated, code on the CPU: every GPU at 0 % and 0 MiB for the whole job",
            }
        else:
            self._training(util, mem, used, a, train, model_mib, ctx_mib, ev, spans, benign)
        a += train
        # -- idle tail after the work is done
        if tail:
            hung = rng.random() < 0.3
            for g in used:
                util[g, a:] = 0
                mem[g, a:] = model_mib[g] if hung else 0
            ev.append(LogEvent(a * self.s + rng.uniform(1, 20), self.lib.pick(rng, "finish"), "unreleased_job"))
            if hung:
                ev.append(LogEvent(a * self.s + rng.uniform(25, 60), self.lib.pick(rng, "unreleased"), "unreleased_job"))
            spans["unreleased_job"] = {
                "ranges": [(a, L)],
                "gpus": list(used) or list(range(G)),
                "shape": "idle tail after training ended: 0 % with " + ("the model's memory still held" if hung else "0 MiB"),
            }
        elif p.kind == "batch" and "non_dl_job" not in causes:
            ev.append(LogEvent(a * self.s - rng.uniform(2, 20), self.lib.pick(rng, "finish")))
        # -- GPUs the job holds and never touches
        for g in unused:
            util[g] = 0
            mem[g] = 0
        if "gpu_oversubscription" in causes:
            spans["gpu_oversubscription"] = {
                "ranges": [(0, L)],
                "gpus": unused,
                "shape": f"{len(unused)} of {G} GPUs never used (0 % and 0 MiB) for the whole job",
            }
            ev += self._world_events(len(used))
        if "api_misuse" in causes and p.variant == "single":
            spans["api_misuse"] = {
                "ranges": [(0, L)],
                "gpus": unused,
                "shape": f"one process on GPU 0 only: {len(unused)} of {G} GPUs never used for the whole job",
            }
            at = (boot + pre) * self.s + rng.uniform(3, 30)
            ev.append(LogEvent(at, self.lib.pick(rng, "api_misuse_single"), "api_misuse"))
        np.clip(util, 0, 100, out=util)
        np.clip(mem, 0, total - RESERVED_MIB, out=mem)
        return Built(util, mem, spans, benign, ev)

    # -- pieces of a job

    def _banners(self, at: float) -> list[LogEvent]:
        """Start-up lines of a training process; none that name a GPU when the code runs on the CPU,
        no NCCL lines for a single-GPU job."""
        rng = self.rng
        on_cpu = self.plan.variant == "cpu"
        fitting = [
            b
            for b in self.lib.snippets
            if b.group == "banner"
            and not (on_cpu and any("cuda" in x or "GPU" in x for x in b.lines))
            and not (self.plan.n_gpus == 1 and any("NCCL" in x for x in b.lines))
        ]
        out = []
        t = at + rng.uniform(2, 20)
        for banner in rng.sample(fitting, rng.randint(1, 3)):
            out.append(LogEvent(t, banner))
            t += rng.uniform(1, 15)
        return out

    def _world_events(self, nproc: int) -> list[LogEvent]:
        """The launcher starts fewer ranks than the job holds GPUs; per-rank lines come once per rank."""
        rng = self.rng
        snippet = self.lib.pick(rng, "launcher_world")
        gpus = ", ".join(str(i) for i in range(nproc))
        per_rank = any("${rank}" in line or "${member}" in line for line in snippet.lines)
        t = rng.uniform(1, 8)
        return [
            LogEvent(
                t + r * rng.uniform(0.01, 0.3),
                snippet,
                "gpu_oversubscription",
                {"nproc": str(nproc), "gpu_list": gpus, "member": str(r + 1), "rank": str(r)},
                in_process=False,
            )
            for r in range(nproc if per_rank else 1)
        ]

    def _startup(
        self,
        cause: str,
        util: np.ndarray,
        mem: np.ndarray,
        used: list[int],
        a: int,
        n: int,
        model_mib: list[int],
        ctx_mib: int,
        ev: list[LogEvent],
        spans: dict[str, dict[str, Any]],
    ) -> None:
        rng, s = self.rng, self.s
        b = a + n
        group = {"long_library_installation": "install", "external_data_usage": "download", "data_preprocessing": "preprocess"}[
            cause
        ]
        if cause == "data_preprocessing":
            # CPU tokenisation with the model already on the GPUs: a low plateau of a few percent
            held = rng.random() < 0.6
            for g in used:
                util[g, a:b] = self.npr.integers(0, rng.randint(3, 7), size=n)
                mem[g, a:b] = model_mib[g] if held else ctx_mib
            shape = "plateau of 0-6 % with " + ("the model in memory" if held else "only the CUDA context in memory")
        else:
            shape = "GPUs at 0 % and 0 MiB before any CUDA context: " + (
                "pip/conda installing" if group == "install" else "downloading from external sites"
            )
        in_process = cause == "data_preprocessing"

        def choose(role: str) -> Snippet | None:  # pip and conda lines mix in one install; other tools do not
            return self.lib.pick(rng, group, role) if group == "install" else self.fam(group, role)

        if first := choose("setup"):
            ev.append(LogEvent(a * s + rng.uniform(0, 10), first, cause, in_process=in_process))
        t = a * s + rng.uniform(20, 90)
        every = rng.uniform(60, 300)
        while t < b * s - 30 and (again := choose("repeat")):
            ev.append(LogEvent(t, again, cause, in_process=in_process))
            t += every * rng.uniform(0.6, 1.4)
        if last := choose("end"):
            ev.append(LogEvent(b * s - rng.uniform(2, 20), last, cause, in_process=in_process))
        spans[cause] = {"ranges": [(a, b)], "gpus": list(used) or list(range(util.shape[0])), "shape": shape}

    def _whole(self, ev: list[LogEvent], group: str, a: int, n: int) -> None:
        rng, s = self.rng, self.s
        cause = "non_dl_job"
        for _ in range(rng.randint(1, 2)):
            ev.append(LogEvent(a * s + rng.uniform(1, 30), self.lib.pick(rng, group, "setup"), cause))
        t = a * s + rng.uniform(60, 200)
        every = rng.uniform(120, 600)
        while t < (a + n) * s:
            ev.append(LogEvent(t, self.once(group, "repeat"), cause))
            t += every * rng.uniform(0.5, 1.5)

    def _api_misuse_cpu(self, ev: list[LogEvent], a: int, n: int) -> None:
        rng, s = self.rng, self.s
        for _ in range(rng.randint(1, 2)):
            ev.append(LogEvent(a * s + rng.uniform(1, 40), self.lib.pick(rng, "api_misuse"), "api_misuse"))
        train = self.lib.pick(rng, "train")
        t = a * s + rng.uniform(120, 400)
        while t < (a + n) * s:
            ev.append(LogEvent(t, train))
            t += rng.uniform(300, 900)

    def _interactive(
        self,
        util: np.ndarray,
        mem: np.ndarray,
        used: list[int],
        a: int,
        n: int,
        ev: list[LogEvent],
        spans: dict[str, dict[str, Any]],
    ) -> None:
        rng, s, npr = self.rng, self.s, self.npr
        variant = self.plan.variant
        group = {
            "jupyter": "interactive_jupyter",
            "notebook": "interactive_notebook",
            "vscode": "interactive_vscode",
            "sshd": "interactive_sshd",
        }.get(variant)
        if group:
            ev.append(
                LogEvent(a * s + rng.uniform(3, 40), self.lib.pick(rng, group, "setup"), "interactive_job", in_process=False)
            )
        kernel_mib = int(self.cfg.total_mib * rng.uniform(0.03, 0.35))
        held = False
        j = a + self.steps(3, 40)
        while j < a + n - 2:
            width = self.steps(1, 12)
            k = min(a + n, j + width)
            for g in used:
                util[g, j:k] = npr.integers(15, 101, size=k - j)
            held = held or rng.random() < 0.8
            if held:
                for g in used:
                    mem[g, j:] = kernel_mib
            if group and self.lib.has(group, "repeat"):
                ev.append(LogEvent(j * s + rng.uniform(-30, 0), self.once(group, "repeat"), "interactive_job", in_process=False))
            if rng.random() < 0.15:  # kernel restart or shutdown: memory released
                held = False
                for g in used:
                    mem[g, k:] = 0
            j = k + self.steps(15, 90)
        spans["interactive_job"] = {
            "ranges": [(0, util.shape[1])],
            "gpus": list(range(util.shape[0])),
            "shape": "a notebook/shell session: GPUs idle between short bursts of use; memory held while a kernel lives",
        }

    def _training(
        self,
        util: np.ndarray,
        mem: np.ndarray,
        used: list[int],
        a: int,
        n: int,
        model_mib: list[int],
        ctx_mib: int,
        ev: list[LogEvent],
        spans: dict[str, dict[str, Any]],
        benign: list[dict[str, Any]],
    ) -> None:
        rng, s, npr = self.rng, self.s, self.npr
        causes = set(self.plan.causes)
        b = a + n
        load = min(n // 4, max(1, round(rng.uniform(20, 150) / s)))  # model load: context up, weights arriving
        for g in used:
            mem[g, a : a + load] = ctx_mib
            mem[g, a + load : b] = model_mib[g]
        t0 = a + load
        m = b - t0
        steady = next((c for c in self.plan.causes if c in STEADY_CAUSES), None)
        # steady level during training
        if steady == "improper_batch_size":
            base = self._ar(len(used), m, rng.uniform(12, 36), rng.uniform(2, 4))
            shape = "steady low utilisation {:.0f}-{:.0f} % with at most half the memory used"
        elif steady == "insufficient_gpu_memory":
            base = self._ar(len(used), m, rng.uniform(22, 42), rng.uniform(5, 9))
            shape = "steady low utilisation {:.0f}-{:.0f} % with more than 80 % of the memory used"
            for g in used:
                mem[g, t0:b] = np.minimum(
                    self.cfg.total_mib - RESERVED_MIB, model_mib[g] + npr.integers(0, int(self.cfg.total_mib * 0.03), size=m)
                )
        elif steady == "inefficient_host_gpu_data_transfer":
            base = (rng.uniform(6, 14) + rng.uniform(50, 62) * npr.beta(1.6, 2.4, size=(len(used), m))).round()
            shape = "never-settling band {:.0f}-{:.0f} %: the GPU waits for every batch to cross from host memory"
        else:
            base = self._ar(len(used), m, rng.uniform(80, 95), rng.uniform(2.5, 6))
            shape = ""
        for i, g in enumerate(used):
            util[g, t0:b] = np.clip(base[i], 1, 100)
        if steady:
            lo, hi = np.percentile(base, 5), np.percentile(base, 95)
            spans[steady] = {"ranges": [(t0, b)], "gpus": list(used), "shape": shape.format(lo, hi)}
            group = {
                "improper_batch_size": "batch_size",
                "insufficient_gpu_memory": "memory_pressure",
                "inefficient_host_gpu_data_transfer": "host_transfer",
            }[steady]
            role = "repeat" if steady == "insufficient_gpu_memory" else "setup"
            if role == "setup":
                ev.append(
                    LogEvent(t0 * s + rng.uniform(1, 20), self.lib.pick(rng, group, role), steady, {"ngpu": str(len(used) or 1)})
                )
            else:
                t = t0 * s + rng.uniform(60, 300)
                pct = 100 * max(model_mib) / self.cfg.total_mib
                while t < b * s:
                    ev.append(
                        LogEvent(
                            t,
                            self.once(group, role),
                            steady,
                            {"memgib": f"{max(model_mib) / 1024:.2f}", "mempct": f"{pct:.2f}"},
                        )
                    )
                    t += rng.uniform(240, 900)
        dips = np.zeros(m, dtype=bool)
        ckpt = self.lib.pick(rng, "ckpt")
        # -- dips the causes put into the training phase (relative to t0); long ones first
        dip_causes = sorted((c for c in self.plan.causes if c in DIP_CAUSES), key=lambda c: c == "data_exchange")
        shape_of = {
            "model_checkpointing": "periodic drops to 0-2 % with memory held while the checkpoint is written out",
            "intermediate_result_upload": "after each evaluation, a drop to 0-2 % with memory held while results upload",
            "remote_data_read": "irregular drops to 0-2 % with memory held while input is read from remote storage",
            "data_exchange": "drops to 0-5 % at the same readings on every GPU of the job",
        }
        for dip_cause in dip_causes:
            dip_ranges = self._dips(dip_cause, m, dips)
            for j, k in dip_ranges:
                dips[j:k] = True
                for g in used:
                    util[g, t0 + j : t0 + k] = npr.integers(0, 3 if dip_cause != "data_exchange" else 6, size=k - j)
            spans[dip_cause] = {
                "ranges": [(t0 + j, t0 + k) for j, k in dip_ranges],
                "gpus": list(used),
                "shape": shape_of[dip_cause],
            }
            self._dip_logs(dip_cause, ckpt, t0, dip_ranges, ev)
        if not dip_causes:
            self._benign(util, used, t0, m, dips, ckpt, ev, benign)
        # -- training progress lines where the GPU works
        train = self.lib.pick(rng, "train")
        every = rng.uniform(60, 360)
        t = t0 * s + rng.uniform(30, 120)
        step = 0
        while t < b * s - 5:
            j = int(t // s) - t0
            if 0 <= j < m and not dips[j]:
                step += rng.randint(10, 200)
                ev.append(LogEvent(t, train, None, {"step": str(step), "epoch": str(step // 2000)}))
            t += every * rng.uniform(0.7, 1.3)
        if "data_exchange" in causes:
            for _ in range(rng.randint(1, 2)):
                ev.append(LogEvent(a * s + rng.uniform(2, 30), self.lib.pick(rng, "exchange"), "data_exchange"))

    def _dips(self, cause: str, m: int, taken: np.ndarray) -> list[tuple[int, int]]:
        """Where a cause stalls the GPUs: periodic, irregular or synchronised frequent dips."""
        rng, s = self.rng, self.s
        out: list[tuple[int, int]] = []
        if cause in ("model_checkpointing", "intermediate_result_upload"):
            period = max(4, self.steps(5, 30))
            width = max(2, round(period * rng.uniform(0.5, 0.66)))
            j = rng.randint(period // 2, period)
            while j + width <= m:
                out.append((j, j + width))
                j += period + rng.randint(-1, 1)
        elif cause == "remote_data_read":
            j = rng.randint(2, 12)
            while j < m - 2:
                width = rng.randint(2, max(3, round(240 / s)))
                out.append((j, min(m, j + width)))
                j += width + rng.randint(1, max(2, round(width * 0.8)))
        else:  # data exchange: every few readings, all GPUs at once
            cycle = rng.randint(3, 6)
            width = max(1, round(cycle * rng.uniform(0.45, 0.62)))
            j = rng.randint(0, cycle)
            while j + width <= m:
                if not taken[j : j + width].any():
                    out.append((j, j + width))
                j += cycle
        return out

    def _ar(self, rows: int, n: int, level: float, sd: float) -> np.ndarray:
        """AR(1) noise around a level, rounded to whole percent as GPU_UTIL reports it."""
        rows = max(rows, 1)
        e = self.npr.normal(0, sd, size=(rows, n))
        x = np.zeros((rows, n))
        for j in range(n):
            x[:, j] = (0.6 * x[:, j - 1] if j else 0) + e[:, j]
        return np.round(level + x)

    def _dip_logs(self, cause: str, ckpt: Snippet, t0: int, ranges: list[tuple[int, int]], ev: list[LogEvent]) -> None:
        rng, s = self.rng, self.s
        if cause == "data_exchange":
            return
        if cause == "model_checkpointing":
            for j, k in ranges:
                extra = {"elapsed": f"{(k - j) * s - rng.uniform(0, s):.10f}", "step": str(rng.randint(100, 90000))}
                when = (t0 + (k if ckpt.role == "end" else j)) * s + rng.uniform(0.5, 4)
                ev.append(LogEvent(when, ckpt, cause, extra))
        elif cause == "intermediate_result_upload":
            eval_snippet = self.lib.pick(rng, "eval")
            upload, done = self.fam("upload", "repeat"), self.fam("upload", "end")
            for j, k in ranges:
                ev.append(LogEvent((t0 + j) * s - rng.uniform(5, 30), eval_snippet, cause))
                if upload:
                    extra = {"step": str(rng.randint(100, 90000))}
                    ev.append(LogEvent((t0 + j) * s + rng.uniform(1, 10), upload, cause, extra))
                if done:
                    ev.append(LogEvent((t0 + k) * s - rng.uniform(1, 5), done, cause))
        elif cause == "remote_data_read":
            read = self.lib.pick(rng, "remote_read")
            for j, _ in ranges:
                ev.append(LogEvent((t0 + j) * s + rng.uniform(0.5, 8), read, cause))

    def _benign(
        self,
        util: np.ndarray,
        used: list[int],
        t0: int,
        m: int,
        dips: np.ndarray,
        ckpt: Snippet,
        ev: list[LogEvent],
        benign: list[dict[str, Any]],
    ) -> None:
        """Short checkpoint saves and evaluations that a healthy job also has: not causes."""
        rng, s, npr = self.rng, self.s, self.npr
        period = self.steps(30, 75)
        saves: list[tuple[int, int]] = []
        evals: list[tuple[int, int]] = []
        j = period
        while j + 1 < m:
            saves.append((j, j + 1))
            j += period
        for j, k in saves:
            dips[j:k] = True
            for g in used:
                util[g, t0 + j : t0 + k] = npr.integers(20, 60, size=k - j)
            ev.append(
                LogEvent(
                    (t0 + (k if ckpt.role == "end" else j)) * s + rng.uniform(0.5, 4),
                    ckpt,
                    None,
                    {"elapsed": f"{rng.uniform(3, s):.10f}", "step": str(rng.randint(100, 90000))},
                )
            )
        if rng.random() < 0.6:
            period = self.steps(40, 90)
            eval_snippet = self.lib.pick(rng, "eval")
            j = period // 2
            while j + 2 < m:
                k = min(m, j + max(1, round(rng.uniform(60, 240) / s)))
                evals.append((j, k))
                for g in used:
                    util[g, t0 + j : t0 + k] = npr.integers(40, 75, size=k - j)
                ev.append(LogEvent((t0 + k) * s + rng.uniform(0, 5), eval_snippet))
                j += period
        if saves:
            benign.append({"what": "checkpoint saves of one reading each", "ranges": [(t0 + j, t0 + k) for j, k in saves]})
        if evals:
            benign.append({"what": "evaluations at 40-75 %", "ranges": [(t0 + j, t0 + k) for j, k in evals]})


# ---------------------------------------------------------------------- the trace


@dataclass
class Gpu:
    node: str
    index: int
    uuid: str
    bus: str


@dataclass
class Job:
    """A placed job: its plan, GPUs, readings, identity in the jobs file and its log."""

    plan: Plan
    built: Built
    gpus: list[Gpu]
    first: int  # grid index of its first reading
    start: int  # epoch seconds
    end: int
    id: str = ""
    name: str = ""
    user: str = ""
    namespace: str = ""
    pod: str = ""
    container: str = ""
    log: str | None = None
    log_lines: dict[str, list[int]] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    pod_of_node: dict[str, str] = field(default_factory=dict)


@dataclass
class Trace:
    cfg: Config
    nodes: list[str]
    gpus: list[Gpu]
    K: int  # readings per GPU
    offset: float  # seconds from grid point to reading timestamp (nvidia-smi samples are not on the second)
    util: np.ndarray  # all GPUs x K
    mem: np.ndarray
    owner: np.ndarray  # job index per GPU reading, -1 when free
    jobs: list[Job]

    def ts(self, k: int) -> float:
        return self.cfg.t0.timestamp() + k * self.cfg.step + self.offset


def node_names(cfg: Config, n: int, rng: random.Random) -> list[str]:
    if cfg.jobs_format == "k8s-pods":
        pool = rng.choice(("gpu-pool-a100", "a100-pool", "gpu-workers"))
        return [
            f"gke-train-{pool}-{rng.getrandbits(32):08x}-{''.join(rng.choice('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(4))}"
            for _ in range(n)
        ]
    prefix = rng.choice(("gpu", "dgx", "node-gpu-", "hpc-g"))
    width = 2 if prefix in ("gpu", "dgx") else 3
    return [f"{prefix}{i + 1:0{width}d}" for i in range(n)]


def build_trace(cfg: Config, lib: Library) -> Trace:
    rng = random.Random(cfg.seed)
    npr = np.random.default_rng(cfg.seed)
    plans = plan_jobs(cfg, rng)
    built: list[Built] = []
    for plan in plans:
        built.append(_built_within_bounds(cfg, lib, rng, npr, plan))
    gpn = cfg.per_node
    demand = sum(p.n_gpus * b.util.shape[1] for p, b in zip(plans, built, strict=False))
    n_nodes = max(2, math.ceil(demand / (gpn * 18 * 3600 / cfg.step)))
    n_nodes = max(n_nodes, max(math.ceil(p.n_gpus / gpn) for p in plans))
    nodes = node_names(cfg, n_nodes, rng)
    gpus = [Gpu(n, i, _uuid(rng), f"00000000:{PCI_BUS[i % len(PCI_BUS)]}:00.0") for n in nodes for i in range(gpn)]
    free_at = [rng.randint(0, round(900 / cfg.step)) for _ in gpus]  # grid index from which each GPU is free
    placed: list[tuple[Plan, Built, list[int], int]] = []
    submit = 0
    for plan, b in zip(plans, built, strict=False):
        submit += rng.randint(0, round(1500 / cfg.step))
        chosen, first = _place(cfg, plan.n_gpus, free_at, submit, rng)
        L = b.util.shape[1]
        for g in chosen:
            free_at[g] = first + L + rng.randint(round(120 / cfg.step), round(1200 / cfg.step))
        placed.append((plan, b, chosen, first))
    K = max(first + b.util.shape[1] for _, b, _, first in placed) + rng.randint(10, 60)
    offset = round(rng.uniform(0.05, 0.95), 3) if cfg.signals == "nvidia-smi" else 0.0
    util = np.zeros((len(gpus), K), dtype=np.int64)
    mem = np.zeros((len(gpus), K), dtype=np.int64)
    owner = np.full((len(gpus), K), -1, dtype=np.int64)
    jobs: list[Job] = []
    t0 = cfg.t0.timestamp()
    for index, (plan, b, chosen, first) in enumerate(sorted(placed, key=lambda x: x[3])):
        L = b.util.shape[1]
        for r, g in enumerate(chosen):
            util[g, first : first + L] = b.util[r]
            mem[g, first : first + L] = b.mem[r]
            owner[g, first : first + L] = index
        # a reading at ts_k stands for the step before it: the job's readings are those with start < ts_k <= end
        start = int(t0 + (first - 1) * cfg.step) if not offset else int(t0 + first * cfg.step)
        end = start + L * cfg.step
        jobs.append(Job(plan, b, [gpus[g] for g in chosen], first, start, end))
    trace = Trace(cfg, nodes, gpus, K, offset, util, mem, owner, jobs)
    _name_jobs(trace, rng)
    return trace


def _built_within_bounds(cfg: Config, lib: Library, rng: random.Random, npr: np.random.Generator, plan: Plan) -> Built:
    """Draw until a job with causes is low (U <= 45 %) and a healthy one is not (U >= 70 %)."""
    for _ in range(40):
        b = JobBuilder(cfg, lib, rng, npr, plan).build()
        u = float(b.util.mean())
        if (plan.causes and u <= 45) or (not plan.causes and u >= 70):
            return b
    raise RuntimeError(f"job {plan.index} ({plan.causes}) could not be drawn within bounds")


def _uuid(rng: random.Random) -> str:
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _place(cfg: Config, n: int, free_at: list[int], submit: int, rng: random.Random) -> tuple[list[int], int]:
    """Earliest start at or after submit with n GPUs on one node (or whole nodes for n > per node)."""
    gpn = cfg.per_node
    n_nodes = len(free_at) // gpn
    best: tuple[int, list[int]] | None = None
    if n >= gpn or cfg.whole_nodes:
        need = max(1, math.ceil(n / gpn))
        ready = sorted(range(n_nodes), key=lambda k: (max(free_at[k * gpn : (k + 1) * gpn]), k))[:need]
        when = max(submit, max(max(free_at[k * gpn : (k + 1) * gpn]) for k in ready))
        chosen = [k * gpn + i for k in sorted(ready) for i in range(gpn)][:n]
        return chosen, when
    for k in range(n_nodes):
        ids = sorted(range(k * gpn, (k + 1) * gpn), key=lambda g: (free_at[g], g))[:n]
        when = max(submit, max(free_at[g] for g in ids))
        if best is None or when < best[0]:
            best = (when, sorted(ids))
    assert best is not None
    return best[1], best[0]


def _name_jobs(trace: Trace, rng: random.Random) -> None:
    cfg = trace.cfg
    next_id = 4_000_000 + rng.randint(0, 900_000)
    notebooks: dict[str, int] = {}
    names_batch = (
        "train",
        "finetune",
        "pretrain_bert",
        "llama_sft",
        "resnet50",
        "swin_t",
        "gpt2_medium",
        "nerf",
        "gnn_arxiv",
        "asr_conformer",
        "detr_coco",
        "yolo_v5",
        "wav2vec2",
        "t5_base",
    )
    for _i, job in enumerate(trace.jobs):
        p = job.plan
        job.user = rng.choice(USERS)
        next_id += rng.randint(1, 40)
        job.id = str(next_id)
        if p.kind == "interactive":
            job.name = {
                "jupyter": "jupyterlab",
                "notebook": "jupyter-notebook",
                "vscode": "vscode-tunnel",
                "sshd": "sshd",
                "shell": "bash",
            }[p.variant]
        elif "non_dl_job" in p.causes:
            job.name = rng.choice(("xgb_sweep", "feature_eng", "gridsearch", "lgbm_cv"))
        else:
            job.name = rng.choice(names_batch)
        if cfg.jobs_format == "k8s-pods":
            job.namespace = rng.choice(("ml-research", "team-nlp", "team-vision", f"user-{job.user}"))
            if p.kind == "interactive":
                notebooks[job.user] = notebooks.get(job.user, 0) + 1
                job.pod = f"jupyter-{job.user}" + (f"--gpu{notebooks[job.user]}" if notebooks[job.user] > 1 else "")
                job.container = "notebook"
                job.namespace = "jupyterhub"
            elif len({g.node for g in job.gpus}) > 1:
                job.pod = f"{job.name.replace('_', '-')}-{rng.getrandbits(16):04x}-master-0"
                job.container = "pytorch"
            else:
                job.pod = f"{job.name.replace('_', '-')}-{''.join(rng.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))}"
                job.container = "trainer"
            job.id = f"{job.namespace}/{job.pod}"
            for r, node in enumerate(sorted({g.node for g in job.gpus}, key=[g.node for g in job.gpus].index)):
                job.pod_of_node[node] = job.pod if r == 0 else job.pod.replace("-master-0", f"-worker-{r - 1}")
            job.log = f"logs/{job.namespace}_{job.pod}.log"
        else:
            job.log = None if p.variant == "shell" else f"logs/slurm-{job.id}.out"


# ---------------------------------------------------------------------- logs


def render_logs(trace: Trace, lib: Library) -> dict[str, str]:
    """Each job's stdout: its events in time order, dressed in the job's styles."""
    out: dict[str, str] = {}
    for job in trace.jobs:
        if job.log is None:
            continue
        rng = random.Random(f"{trace.cfg.seed}-log-{job.id}")
        p = job.plan
        hosts = sorted({g.node for g in job.gpus})
        ctx = {
            "host": hosts[0],
            "ip": f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
            "ip2": f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
            "pid": str(rng.randint(2000, 4_000_000)),
            "tid": str(rng.randint(2000, 4_000_000)),
            "gpu": "0",
            "rank": "0",
            "member": "1",
            "user": job.user,
            "home": f"/home/{job.user}",
            "workdir": rng.choice(("work", "notebooks", "projects/llm")),
            "outdir": rng.choice(("./output", "./outputs", "/scratch/" + job.user + "/runs/exp" + str(rng.randint(1, 99)))),
            "bucket": rng.choice(("ml-datasets-prod", "team-nlp-data", "research-shards")),
            "sitepkgs": rng.choice(
                (
                    "/opt/conda/lib/python3.10/site-packages",
                    f"/home/{job.user}/.conda/envs/train/lib/python3.11/site-packages",
                    "/usr/local/lib/python3.10/dist-packages",
                )
            ),
            "env": rng.choice(("train", "llm", "torch2")),
            "port": str(rng.randint(8000, 9999)),
            "ngpu": str(len(job.gpus)),
            "nproc": str(len(job.gpus)),
            "gpu_list": ", ".join(str(i) for i in range(len(job.gpus))),
            "step": "0",
            "epoch": "0",
            "elapsed": "0",
            "memgib": "0",
            "mempct": "0",
        }
        filler = Filler(rng, ctx)
        t_start = dt.datetime.fromtimestamp(job.start, UTC)
        lines: list[str] = []
        by_cause: dict[str, list[int]] = {}
        events = sorted(job.built.events, key=lambda e: e.t)
        last = -1.0
        for e in events:
            filler.ctx.update({k: e.extra[k] for k in ("step", "epoch") if k in e.extra})
            t = max(e.t, 0.5, last + rng.uniform(0.001, 0.4))
            last = t
            t = min(t, job.end - job.start - 0.5)
            for raw in e.snippet.lines:
                t += rng.uniform(0.0005, 0.02)
                clock = t_start + dt.timedelta(seconds=t)
                text = filler.fill(raw, clock, e.extra)
                if e.snippet.stamp == "logger" and p.log_style != "none":
                    ms = f"{clock.microsecond // 1000:03d}"
                    prefix = {
                        "dash": f"{clock:%Y-%m-%d %H:%M:%S},{ms} - INFO - ",
                        "bracket": f"[{clock:%Y-%m-%d %H:%M:%S},{ms}] [INFO] ",
                    }[p.log_style]
                    text = prefix + text
                if p.rank_tag and e.in_process and not text.startswith(("[rank", "[default")):
                    text = p.rank_tag + text
                if trace.cfg.jobs_format == "k8s-pods":
                    text = clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{clock.microsecond:06d}{rng.randint(0, 999):03d}Z " + text
                lines.append(text)
                if e.cause:
                    by_cause.setdefault(e.cause, []).append(len(lines))
        job.log_lines = by_cause
        out[job.log] = "\n".join(lines) + ("\n" if lines else "")
    return out


# ---------------------------------------------------------------------- headline figures


def figures(trace: Trace) -> None:
    """U_i, U, idle slots and never-used GPUs per job, from the readings as written."""
    s = trace.cfg.step
    gindex = {(g.node, g.index): i for i, g in enumerate(trace.gpus)}
    for job in trace.jobs:
        L = job.built.util.shape[1]
        per_gpu: dict[str, float] = {}
        idle = 0
        never: list[str] = []
        for g in job.gpus:
            r = gindex[(g.node, g.index)]
            u = trace.util[r, job.first : job.first + L]
            m = trace.mem[r, job.first : job.first + L]
            key = f"{g.node}:{g.index}"
            per_gpu[key] = round(float(u.mean()), 3)
            zero = (u == 0) & (m == 0)
            if zero.all():
                never.append(key)
            run = 0
            for z in [*list(zero), False]:
                if z:
                    run += 1
                else:
                    if run * s >= 60:
                        idle += run * s
                    run = 0
        held = L * s * len(job.gpus)
        job.figures = {
            "U": round(sum(per_gpu.values()) / len(per_gpu), 3),
            "U_i": per_gpu,
            "low_utilisation": sum(per_gpu.values()) / len(per_gpu) <= 50,
            "gpu_seconds": held,
            "idle_slot_seconds": idle,
            "idle_slot_share": round(idle / held, 6),
            "never_used_gpus": never,
        }


# ---------------------------------------------------------------------- writers


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hostlist(nodes: list[str]) -> str:
    """Slurm's compressed host list: gpu[03-04,07]."""
    m = [re.fullmatch(r"(.*?)(\d+)", n) for n in nodes]
    if len(nodes) == 1 or not all(m):
        return ",".join(nodes)
    prefixes = {x.group(1) for x in m if x}
    if len(prefixes) != 1:
        return ",".join(nodes)
    width = len(m[0].group(2)) if m[0] else 0
    nums = sorted(int(x.group(2)) for x in m if x)
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(f"{nums[i]:0{width}d}" + (f"-{nums[j]:0{width}d}" if j > i else ""))
        i = j + 1
    return f"{prefixes.pop()}[{','.join(parts)}]"


def _labels(trace: Trace, gi: int, job: Job | None, metric: str, exporter: dict[str, str]) -> dict[str, str]:
    g = trace.gpus[gi]
    cfg = trace.cfg
    labels = {
        "__name__": metric,
        "DCGM_FI_DRIVER_VERSION": "535.129.03",
        "Hostname": g.node,
        "UUID": g.uuid,
        "device": f"nvidia{g.index}",
        "gpu": str(g.index),
        "modelName": cfg.gpu_model,
        "pci_bus_id": g.bus,
    }
    if cfg.jobs_format == "k8s-pods":
        labels.update(
            {
                "container": "nvidia-dcgm-exporter",
                "endpoint": "gpu-metrics",
                "instance": exporter[g.node],
                "job": "nvidia-dcgm-exporter",
                "namespace": "gpu-operator",
                "pod": f"nvidia-dcgm-exporter-{exporter[g.node + '#pod']}",
                "service": "nvidia-dcgm-exporter",
            }
        )
        if job is not None:
            labels.update(
                {
                    "exported_container": job.container,
                    "exported_namespace": job.namespace,
                    "exported_pod": job.pod_of_node[g.node],
                }
            )
    else:
        labels.update({"instance": f"{g.node}:9400", "job": "dcgm-exporter"})
        if job is not None:
            labels["hpc_job"] = job.id
    return dict(sorted(labels.items()))


def write_prometheus(trace: Trace, out: Path) -> list[str]:
    """Range-query answers as Prometheus's HTTP API returns them: one series per label set."""
    cfg = trace.cfg
    rng = random.Random(f"{cfg.seed}-exporter")
    exporter: dict[str, str] = {}
    for n in trace.nodes:
        exporter[n] = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}:9400"
        exporter[n + "#pod"] = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    metrics = {
        "DCGM_FI_DEV_GPU_UTIL": trace.util,
        "DCGM_FI_DEV_FB_USED": trace.mem,
        "DCGM_FI_DEV_FB_FREE": cfg.total_mib - RESERVED_MIB - trace.mem,
    }
    t0 = cfg.t0.timestamp()
    chunks = [(a, min(trace.K, a + PROMETHEUS_MAX_POINTS)) for a in range(0, trace.K, PROMETHEUS_MAX_POINTS)]
    written: list[str] = []
    results: dict[tuple[str, int], list[str]] = {}
    for metric, values in metrics.items():
        for ci, (a, b) in enumerate(chunks):
            series: list[tuple[str, str]] = []
            for gi in range(len(trace.gpus)):
                own = trace.owner[gi, a:b]
                for who in sorted({int(x) for x in own}):
                    sel = np.nonzero(own == who)[0]
                    job = trace.jobs[who] if who >= 0 else None
                    labels = _labels(trace, gi, job, metric, exporter)
                    pts = ",".join(f'[{_num(t0 + (a + k) * cfg.step)},"{int(values[gi, a + k])}"]' for k in sel)
                    series.append((json.dumps(labels, sort_keys=True), f'{{"metric":{json.dumps(labels)},"values":[{pts}]}}'))
            series.sort()
            results[(metric, ci)] = [body for _, body in series]
    for ci in range(len(chunks)):
        suffix = f"_part{ci + 1}" if len(chunks) > 1 else ""
        if cfg.series_layout == "combined":
            body = ",".join(x for metric in metrics for x in results[(metric, ci)])
            name = f"metrics/prometheus_dcgm{suffix}.json"
            _write(out / name, '{"status":"success","data":{"resultType":"matrix","result":[' + body + "]}}\n")
            written.append(name)
        else:
            for metric in metrics:
                name = f"metrics/prometheus_{metric}{suffix}.json"
                _write(
                    out / name,
                    '{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(results[(metric, ci)]) + "]}}\n",
                )
                written.append(name)
    return written


def _num(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else f"{t:.3f}"


def write_nvidia_smi(trace: Trace, out: Path) -> list[str]:
    """One `nvidia-smi --query-gpu=... --format=csv -l N` log per node, named after it."""
    cfg = trace.cfg
    written = []
    for node in trace.nodes:
        rows = ["timestamp, index, uuid, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
        members = [(gi, g) for gi, g in enumerate(trace.gpus) if g.node == node]
        for k in range(trace.K):
            stamp = dt.datetime.fromtimestamp(trace.ts(k), UTC)
            text = stamp.strftime("%Y/%m/%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"
            for gi, g in members:
                rows.append(
                    f"{text}, {g.index}, {g.uuid}, {int(trace.util[gi, k])} %, {int(trace.mem[gi, k])} MiB, {cfg.total_mib} MiB"
                )
        name = f"metrics/nvidia-smi_{node}.csv"
        _write(out / name, "\n".join(rows) + "\n")
        written.append(name)
    return written


def _state(job: Job) -> str:
    return "CANCELLED" if job.plan.kind == "interactive" else "COMPLETED"


def _tres(job: Job, cfg: Config) -> list[dict[str, Any]]:
    g = len(job.gpus)
    nodes = len({x.node for x in job.gpus})
    cpus = g * 8
    return [
        {"type": "cpu", "name": "", "id": 1, "count": cpus},
        {"type": "mem", "name": "", "id": 2, "count": g * 64000},
        {"type": "node", "name": "", "id": 4, "count": nodes},
        {"type": "billing", "name": "", "id": 5, "count": cpus},
        {"type": "gres", "name": "gpu", "id": 1001, "count": g},
    ]


def write_jobs(trace: Trace, out: Path) -> str:
    cfg = trace.cfg
    fmt = cfg.jobs_format
    if fmt == "sacct-json":
        return _write_sacct_json(trace, out)
    if fmt == "k8s-pods":
        return _write_pods(trace, out)
    header: list[str]
    rows: list[list[str]] = []
    for job in trace.jobs:
        nodes = sorted({g.node for g in job.gpus})
        start, end = dt.datetime.fromtimestamp(job.start, UTC), dt.datetime.fromtimestamp(job.end, UTC)
        secs = job.end - job.start
        elapsed = (
            f"{secs // 86400}-" if secs >= 86400 else ""
        ) + f"{secs % 86400 // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
        g = len(job.gpus)
        tres = f"billing={g * 8},cpu={g * 8},gres/gpu:{_gres_type(cfg)}={g},gres/gpu={g},mem={g * 64}G,node={len(nodes)}"
        partition = "interactive" if job.plan.kind == "interactive" else "gpu"
        account = f"proj-{job.user[:3]}"
        if fmt == "sacct-parsable" or cfg.csv_flavour == 0:
            header = [
                "JobID",
                "JobName",
                "User",
                "Account",
                "Partition",
                "State",
                "Start",
                "End",
                "Elapsed",
                "NNodes",
                "NodeList",
                "AllocTRES",
            ]
            rows.append(
                [
                    job.id,
                    job.name,
                    job.user,
                    account,
                    partition,
                    _state(job),
                    f"{start:%Y-%m-%dT%H:%M:%S}",
                    f"{end:%Y-%m-%dT%H:%M:%S}",
                    elapsed,
                    str(len(nodes)),
                    _hostlist(nodes),
                    tres,
                ]
            )
        elif cfg.csv_flavour == 1:
            header = ["job_id", "job_name", "user", "queue", "state", "start_time", "end_time", "hosts", "num_gpus"]
            rows.append(
                [
                    job.id,
                    job.name,
                    job.user,
                    partition,
                    _state(job).lower(),
                    f"{start:%Y-%m-%d %H:%M:%S}",
                    f"{end:%Y-%m-%d %H:%M:%S}",
                    ",".join(nodes),
                    str(g),
                ]
            )
        else:
            header = ["JobId", "UserName", "Partition", "StartTime", "EndTime", "NodeList", "Gres"]
            rows.append(
                [
                    job.id,
                    job.user,
                    partition,
                    f"{start:%Y-%m-%dT%H:%M:%S}",
                    f"{end:%Y-%m-%dT%H:%M:%S}",
                    _hostlist(nodes),
                    f"gpu:{_gres_type(cfg)}:{g // len(nodes)}",
                ]
            )
    if fmt == "sacct-parsable":
        name = "jobs/sacct.txt"
        _write(out / name, "\n".join("|".join(r) for r in [header, *rows]) + "\n")
    else:
        name = "jobs/jobs.csv"
        _write(out / name, "\n".join(",".join(_csv_cell(c) for c in r) for r in [header, *rows]) + "\n")
    return name


def _gres_type(cfg: Config) -> str:
    return {
        "NVIDIA A100-SXM4-80GB": "a100",
        "NVIDIA A800-SXM4-80GB": "a800",
        "Tesla V100-SXM2-32GB": "v100",
        "NVIDIA H200": "h200",
    }[cfg.gpu_model]


def _csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def _write_sacct_json(trace: Trace, out: Path) -> str:
    cfg = trace.cfg
    cluster = ("hpc", "cortex", "kestrel", "atlas")[cfg.seed % 4]
    jobs = []
    for job in trace.jobs:
        nodes = sorted({g.node for g in job.gpus})
        interactive = job.plan.kind == "interactive"
        exit_code: dict[str, object] = {
            "status": ["SIGNALED"] if interactive else ["SUCCESS"],
            "return_code": {"set": True, "infinite": False, "number": 0},
            "signal": {
                "id": {"set": interactive, "infinite": False, "number": 15 if interactive else 0},
                "name": "SIGTERM" if interactive else "",
            },
        }
        submit = job.start - 30
        tres = _tres(job, cfg)
        jobs.append(
            {
                "account": f"proj-{job.user[:3]}",
                "allocation_nodes": len(nodes),
                "array": {
                    "job_id": 0,
                    "limits": {"max": {"running": {"tasks": 0}}},
                    "task_id": {"set": False, "infinite": False, "number": 0},
                    "task": "",
                },
                "association": {
                    "account": f"proj-{job.user[:3]}",
                    "cluster": cluster,
                    "partition": "",
                    "user": job.user,
                    "id": 100 + USERS.index(job.user),
                },
                "cluster": cluster,
                "derived_exit_code": exit_code,
                "time": {
                    "elapsed": job.end - job.start,
                    "eligible": submit,
                    "end": job.end,
                    "start": job.start,
                    "submission": submit,
                    "suspended": 0,
                    "limit": {"set": True, "infinite": False, "number": 24 * 60},
                },
                "exit_code": exit_code,
                "flags": ["STARTED_ON_SCHEDULE", "START_RECEIVED"],
                "group": job.user,
                "job_id": int(job.id),
                "name": job.name,
                "nodes": _hostlist(nodes),
                "partition": "interactive" if interactive else "gpu",
                "qos": "normal",
                "state": {"current": [_state(job)], "reason": "None"},
                "steps": [
                    {
                        "step": {
                            "id": f"{job.id}." + ("interactive" if job.plan.variant == "shell" else "batch"),
                            "name": "interactive" if job.plan.variant == "shell" else "batch",
                        },
                        "state": [_state(job)],
                        "nodes": {"count": len(nodes), "range": _hostlist(nodes), "list": nodes},
                        "time": {
                            "elapsed": job.end - job.start,
                            "end": {"set": True, "infinite": False, "number": job.end},
                            "start": {"set": True, "infinite": False, "number": job.start},
                        },
                        "tres": {"allocated": [t for t in tres if t["type"] in ("cpu", "mem", "node")]},
                    }
                ],
                "submit_line": f"srun --gres=gpu:{len(job.gpus)} --pty bash"
                if job.plan.variant == "shell"
                else f"sbatch --gres=gpu:{_gres_type(cfg)}:{len(job.gpus) // len(nodes)} --nodes={len(nodes)} {job.name}.sbatch",
                "tres": {"allocated": tres, "requested": tres},
                "user": job.user,
                "working_directory": f"/home/{job.user}",
            }
        )
    doc = {
        "jobs": jobs,
        "meta": {
            "plugin": {
                "type": "openapi/slurmdbd",
                "name": "Slurm OpenAPI slurmdbd",
                "data_parser": "data_parser/v0.0.40",
                "accounting_storage": "accounting_storage/slurmdbd",
            },
            "client": {"source": "/dev/pts/0", "user": "root", "group": "root"},
            "command": ["sacct", "--json"],
            "slurm": {"version": {"major": "24", "micro": "4", "minor": "05"}, "release": "24.05.4", "cluster": cluster},
        },
        "errors": [],
        "warnings": [],
    }
    name = "jobs/sacct.json"
    _write(out / name, json.dumps(doc, indent=2) + "\n")
    return name


def _write_pods(trace: Trace, out: Path) -> str:
    rng = random.Random(f"{trace.cfg.seed}-pods")
    items = []
    for job in trace.jobs:
        by_node: dict[str, int] = {}
        for g in job.gpus:
            by_node[g.node] = by_node.get(g.node, 0) + 1
        for replica, (node, count) in enumerate(by_node.items()):  # in the order of the job's GPUs: master first
            pod = job.pod_of_node[node]
            interactive = job.plan.kind == "interactive"
            labels: dict[str, str]
            if interactive:
                labels = {
                    "app": "jupyterhub",
                    "chart": "jupyterhub-3.3.7",
                    "component": "singleuser-server",
                    "heritage": "jupyterhub",
                    "hub.jupyter.org/network-access-hub": "true",
                    "release": "jhub",
                }
            elif job.pod.endswith("-master-0"):
                base = job.pod[: -len("-master-0")]
                labels = {
                    "training.kubeflow.org/job-name": base,
                    "training.kubeflow.org/operator-name": "pytorchjob-controller",
                    "training.kubeflow.org/replica-index": str(0 if replica == 0 else replica - 1),
                    "training.kubeflow.org/replica-type": "master" if replica == 0 else "worker",
                }
            else:
                labels = {"batch.kubernetes.io/job-name": job.pod.rsplit("-", 1)[0], "job-name": job.pod.rsplit("-", 1)[0]}
            started, finished = _iso(job.start), _iso(job.end)
            image = "jupyter/pytorch-notebook:cuda12-python-3.11" if interactive else "nvcr.io/nvidia/pytorch:24.03-py3"
            items.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "annotations": {"hub.jupyter.org/username": job.user} if interactive else {},
                        "creationTimestamp": _iso(job.start - rng.randint(5, 120)),
                        "labels": labels,
                        "name": pod,
                        "namespace": job.namespace,
                        "uid": _uuid(rng)[4:].lower(),
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": image,
                                "name": job.container,
                                "resources": {
                                    "limits": {"nvidia.com/gpu": str(count)},
                                    "requests": {"nvidia.com/gpu": str(count)},
                                },
                            }
                        ],
                        "nodeName": node,
                        "restartPolicy": "Never",
                        "schedulerName": "default-scheduler",
                    },
                    "status": {
                        "containerStatuses": [
                            {
                                "image": image,
                                "name": job.container,
                                "ready": False,
                                "restartCount": 0,
                                "started": False,
                                "state": {
                                    "terminated": {
                                        "exitCode": 143 if interactive else 0,
                                        "reason": "Error" if interactive else "Completed",
                                        "startedAt": started,
                                        "finishedAt": finished,
                                    }
                                },
                            }
                        ],
                        "phase": "Failed" if interactive else "Succeeded",
                        "qosClass": "Burstable",
                        "startTime": started,
                    },
                }
            )
    name = "jobs/pods.json"
    _write(
        out / name,
        json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}, indent=2) + "\n",
    )
    return name


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------- truth


def truth(trace: Trace, files: dict[str, object]) -> dict[str, object]:
    cfg = trace.cfg
    s = cfg.step
    jobs_out = []
    for job in trace.jobs:

        def span(r: tuple[int, int], start: int = job.start) -> list[int]:
            return [start + r[0] * s, start + r[1] * s]

        causes = []
        for cid in job.plan.causes:
            info = job.built.causes[cid]
            ranges = [span(r) for r in info["ranges"]]
            gpus = [f"{job.gpus[i].node}:{job.gpus[i].index}" for i in info["gpus"]]
            name, dim = CATEGORY[cid]
            causes.append(
                {
                    "id": cid,
                    "category": name,
                    "dimension": dim,
                    "shape": info["shape"],
                    "extent": [ranges[0][0], ranges[-1][1]],
                    "spans": ranges,
                    "gpu_seconds_in_spans": sum(b - a for a, b in ranges) * len(gpus),
                    "gpus": gpus,
                    "evidence_lines": job.log_lines.get(cid, []),
                }
            )
        jobs_out.append(
            {
                "job": job.id,
                "name": job.name,
                "user": job.user,
                "kind": job.plan.kind,
                "start": job.start,
                "end": job.end,
                "start_iso": _iso(job.start),
                "end_iso": _iso(job.end),
                "gpus": [{"node": g.node, "index": g.index, "uuid": g.uuid} for g in job.gpus],
                "log": job.log,
                **({"namespace": job.namespace, "pod": job.pod, "pods": job.pod_of_node} if job.pod else {}),
                **job.figures,
                "causes": causes,
                "benign": [{"what": b["what"], "spans": [span(r) for r in b["ranges"]]} for b in job.built.benign],
            }
        )
    held = sum(int(j.figures["gpu_seconds"]) for j in trace.jobs)

    def share(sel: Callable[[Job], bool]) -> float:
        h = sum(int(j.figures["gpu_seconds"]) for j in trace.jobs if sel(j))
        idle = sum(int(j.figures["idle_slot_seconds"]) for j in trace.jobs if sel(j))
        return round(idle / h, 6) if h else 0.0

    multi = [j for j in trace.jobs if len(j.gpus) > 1]
    return {
        "generator": "benchmarks/independent_waste/generate.py",
        "seed": cfg.seed,
        "options": {
            "jobs": cfg.jobs,
            "jobs_format": cfg.jobs_format,
            "signals": cfg.signals,
            "series_layout": cfg.series_layout,
            "step_seconds": s,
            "gpu_model": cfg.gpu_model,
            "gpu_memory_total_mib": cfg.total_mib,
            "gpus_per_node": cfg.per_node,
            "csv_flavour": cfg.csv_flavour,
        },
        "files": files,
        "conventions": {
            "reading": "a reading at time t stands for the step before it (Gao et al.'s U_i): a job's readings are those with start < t <= end",
            "U": "U_i: mean of a GPU's readings in the job; U: mean of U_i over the job's GPUs; low when U <= 50 (Gao et al.)",
            "idle_slot": "a run of consecutive readings at utilisation 0 and memory 0 lasting >= 60 s (Yang et al., CloudBrain-I)",
            "never_used_gpu": "a GPU the job held whose every reading is utilisation 0 and memory 0",
            "spans": "epoch seconds [from, to), on the step grid; gpus as node:index",
            "evidence_lines": "1-based line numbers in the job's log of the lines printed by the planted cause",
        },
        "categories": [{"id": c, "category": n, "dimension": d} for c, n, d in CATEGORIES],
        "jobs": jobs_out,
        "summary": {
            "jobs": len(trace.jobs),
            "gpu_hours_held": round(held / 3600, 3),
            "low_utilisation_jobs": sum(1 for j in trace.jobs if j.figures["low_utilisation"]),
            "idle_slot_share": share(lambda j: True),
            "idle_slot_share_interactive": share(lambda j: j.plan.kind == "interactive"),
            "idle_slot_share_batch": share(lambda j: j.plan.kind == "batch"),
            "multi_gpu_jobs_with_never_used_gpu": round(sum(1 for j in multi if j.figures["never_used_gpus"]) / len(multi), 6)
            if multi
            else 0.0,
            "mean_U": round(sum(float(j.figures["U"]) for j in trace.jobs) / len(trace.jobs), 3),
            "causes": {c: sum(1 for j in trace.jobs if c in j.plan.causes) for c, _, _ in CATEGORIES},
        },
    }


def describe(trace: Trace) -> str:
    cfg = trace.cfg
    out = [
        f"seed {cfg.seed}: {cfg.jobs} jobs, jobs file {cfg.jobs_format}"
        + (f" (flavour {cfg.csv_flavour})" if cfg.jobs_format == "csv" else "")
        + f", signals {cfg.signals}"
        + (f" ({cfg.series_layout})" if cfg.signals == "prometheus" else "")
        + f", step {cfg.step} s, {len(trace.nodes)} nodes x {cfg.per_node} {cfg.gpu_model}",
        "",
        "| job | kind | GPUs | hours | U % | idle-slot % | never used | causes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for j in trace.jobs:
        f = j.figures
        out.append(
            f"| {j.id} | {j.plan.kind} | {len(j.gpus)} | {(j.end - j.start) / 3600:.1f} | {f['U']:.1f} | "
            f"{100 * float(f['idle_slot_share']):.1f} | {len(f['never_used_gpus'])} | "
            f"{', '.join(CATEGORY[c][0] for c in j.plan.causes) or '-'} |"
        )
    return "\n".join(out)


# ---------------------------------------------------------------------- main


def generate(cfg: Config, out: Path | None, lib: Library) -> tuple[Trace, dict[str, object] | None]:
    trace = build_trace(cfg, lib)
    logs = render_logs(trace, lib)
    figures(trace)
    if out is None:
        return trace, None
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty: a trace goes into an empty folder")
    out.mkdir(parents=True, exist_ok=True)
    metrics = write_prometheus(trace, out) if cfg.signals == "prometheus" else write_nvidia_smi(trace, out)
    jobs_file = write_jobs(trace, out)
    for name, text in logs.items():
        _write(out / name, text)
    doc = truth(trace, {"metrics": metrics, "jobs": jobs_file, "logs": sorted(logs)})
    _write(out / "truth.json", json.dumps(doc, indent=1) + "\n")
    return trace, doc


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="folder to write the trace into")
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs-format", choices=JOBS_FORMATS)
    ap.add_argument("--signals", choices=("prometheus", "nvidia-smi"))
    ap.add_argument("--series-layout", choices=("per-metric", "combined"))
    ap.add_argument("--step", type=int, choices=(15, 30))
    ap.add_argument("--gpu-model", choices=sorted(GPU_MODELS))
    ap.add_argument("--snippets", type=Path, default=HERE / "snippets.yaml")
    ap.add_argument("--describe", action="store_true", help="print what the trace contains")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.out is None and not args.describe:
        ap.error("give --out DIR, --describe, or both")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    cfg = make_config(args)
    trace, _ = generate(cfg, args.out, Library(load_snippets(args.snippets)))
    if args.describe:
        print(describe(trace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
