#!/usr/bin/env python3
"""Independent evaluation corpus for failclass: realistic GPU training logs built from
real log lines (benchmarks/independent/snippets.yaml, every snippet with its public
source URL), labelled by docs/TAXONOMY.md.

Written WITHOUT reading failclass's code or rules (failclass/, corpora/, tests/):
only docs/TAXONOMY.md and the first sections of README.md were used.

    python3 benchmarks/independent/generate.py --out /tmp/indep --files 200 --seed 1
    python3 benchmarks/independent/generate.py --out /tmp/indep500 --size-mb 500 --seed 1

Writes OUT/logs/job_NNNNN.log and OUT/labels.jsonl (one JSON object per file).
Only the Python standard library and PyYAML are needed. Same seed -> same bytes.
"""

import argparse
import datetime as _dt
import json
import math
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

FAILURE_REASONS = [
    "cpu_oom",
    "incorrect_inputs",
    "semantic_error",
    "core_dump",
    "invalid_mem_access",
    "model_ckpt_error",
    "cuda_failure",
    "syntax_error",
    "traceback_from_crash",
    "mpi_error",
    "gpu_oom",
    "mpi_runtime_failure",
    "permission_error",
    "import_error",
    "job_preempted",
    "cuda_init_failed",
    "model_diverged",
    "cuda_version_mismatch",
    "gpu_ecc_error",
    "output_node_error",
    "cannot_load_libs",
]
# reasons whose failure happens before training starts (short logs, startup noise only)
STARTUP_REASONS = {"syntax_error", "import_error", "cannot_load_libs", "mpi_error", "cuda_init_failed", "cuda_version_mismatch"}
# reasons that happen either at start-up or mid-training
EITHER_REASONS = {"permission_error", "incorrect_inputs", "semantic_error", "gpu_oom"}

SHARE_FAILURE, SHARE_KILLED, SHARE_HEALTHY = 14, 3, 3  # per block of 20 files: 70/15/15 %
EARLY_PER_40 = 7  # 17.5 % of failures: root cause early

# ---- snippet classification (by id; the yaml is the single source of the text) ----------
# snippets printed by the scheduler / launcher / kernel / shell rather than by a rank:
SYSTEM_ID = re.compile(
    r"^(cpu_oom_slurm|cpu_oom_kernel|cpu_oom_raylet|ecc_xid|ecc_fallen|cif_container|cif_nvidia_smi|"
    r"me_(?!torch_env|keyerror)|mrf_orte|tfc_mpi|tfc_mpich|tfc_relion|jp_|one_kfp|one_argo|"
    r"cll_error_loading|cll_cntk|cd_segfault|cd_bus|cd_illegal_instruction_bare|cd_gdb|killed_|finish_|"
    r"cons_(?!nccl|horovod))"
)
PLATFORM_OF_ID = [
    (re.compile(r"^(cpu_oom_slurm|jp_slurm|jp_submitit|killed_slurm)"), "slurm"),
    (re.compile(r"^(jp_k8s|jp_kubeflow|one_kfp|one_argo|cif_container)"), "k8s"),
    (re.compile(r"^(me_(?!torch_env|keyerror)|mrf_orte|tfc_mpi|tfc_mpich|tfc_relion|cons_mpirun)"), "mpi"),
]
STARTUP_NOISE_ID = re.compile(
    r"nccl|tf_dso|cpu_feature|xla|config|dump|banner|warning|special_tokens|shards|generating_split|"
    r"comm_init|launcher|info_versions|gpu_available|model_summary|setup|starting|bootstrap|gpu_examples|"
    r"core_info|args|dataset_summary|gdb_new_thread|cached_reducer|sagemaker_status|crowdnav|opennmt_info"
)
TAIL_GROUPS = {
    "watchdog": re.compile(r"^cons_(nccl_watchdog|horovod)"),
    "abort": re.compile(r"^cons_(aborted_core_dumped|pycharm_exit_134|spawn_sigabrt|torchrun_sigabrt_summary)"),
    "launcher": re.compile(
        r"^cons_(torchrun_childfailed|torchrun_sigterm|accelerate_launch|deepspeed_sigkill|"
        r"mpirun_primary|launch_calledprocesserror)"
    ),
    "wrapper": re.compile(r"^cons_(ray_|kohya_)"),
}
# which misleading tail groups may follow an early root cause of each reason
NO_WATCHDOG = STARTUP_REASONS | {"core_dump", "job_preempted", "traceback_from_crash"}
PROGRESS_LINE = re.compile(r"%\||it/s\]|s/it\]|it/s, |s/it, ")
OWN_TS = re.compile(
    r"^\$\{host\}|^[A-Z]{3,8}:\w|^\s*\[?(INFO|WARNING|WARN|DEBUG)\b|\$\{(tfts|dashts|slurmts|ctimets|glogdate|hms|udate|udate8|date|mmdd2|mmdd)\}|^\[|^\(|^[IWEF]\$"
)
PYWARN = re.compile(r"\.py:\d+: \w*Warning")
PH = re.compile(r"\$\{([a-z0-9]+)(?::([^}]*))?\}")

USERS = ["ubuntu", "jdoe", "mlops", "svc-train", "chenli", "amartin", "root", "kpatel", "researcher", "yzhang"]
SITEPKGS = [
    "/opt/conda/lib/python3.10/site-packages",
    "/usr/local/lib/python3.8/dist-packages",
    "/home/{u}/miniconda3/envs/train/lib/python3.9/site-packages",
    "/home/{u}/.local/lib/python3.11/site-packages",
    "/usr/lib/python3/dist-packages",
    "/opt/venv/lib/python3.12/site-packages",
    "/anaconda/envs/py38/lib/python3.8/site-packages",
]
HOSTPAT = [
    "gpu-node-{n:03d}",
    "dgx{n:02d}",
    "ip-10-0-{a}-{b}",
    "worker-{n}",
    "trainer-{h}-{n}",
    "node{n:04d}",
    "a100-{n:02d}",
    "hpc-gpu{n:02d}",
]
ANSI_LEVEL = {"INFO": "\x1b[32mINFO\x1b[0m", "WARNING": "\x1b[33mWARNING\x1b[0m", "DEBUG": "\x1b[36mDEBUG\x1b[0m"}
HF_LOGGERS = ["__main__", "transformers.trainer", "root", "train", "accelerate.utils.other", "datasets.builder"]
GLOG_FILES = ["train.py", "trainer.py", "main.py", "engine.py", "run_pretraining.py", "loop.py"]


def load_snippets(path):
    import yaml

    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    by_id = {s["id"]: s for s in data}
    return data, by_id


class Pools:
    def __init__(self, snippets):
        self.root = {r: [] for r in FAILURE_REASONS}
        self.tails = {g: [] for g in TAIL_GROUPS}
        self.startup_noise, self.train_noise, self.tricky = [], [], []
        self.killed_tails, self.finish_tails = [], []
        for s in snippets:
            sid, role, reason = s["id"], s["role"], s["reason"]
            if role == "root_cause":
                self.root[reason].append(s)
            elif role == "consequence":
                if reason in self.root:  # a consequence can be the only signature
                    self.root[reason].append(s)
                for g, rx in TAIL_GROUPS.items():
                    if rx.match(sid):
                        self.tails[g].append(s)
            elif role == "noise":
                kind = s.get("kind")
                if kind == "killed_tail":
                    self.killed_tails.append(s)
                elif kind == "finish_tail":
                    self.finish_tails.append(s)
                elif s.get("tricky"):
                    self.tricky.append(s)
                elif STARTUP_NOISE_ID.search(sid):
                    self.startup_noise.append(s)
                else:
                    self.train_noise.append(s)
        for r in FAILURE_REASONS:
            assert self.root[r], "no root-cause snippet for " + r


def platform_of(sid):
    for rx, p in PLATFORM_OF_ID:
        if rx.match(sid):
            return p
    return None


class Ctx:
    """Per-file state: hosts, ranks, pids, clock, training progress, formatting style."""

    def __init__(self, rng, platform, min_world=1):
        self.rng = rng
        self.platform = platform
        self.world = max(min_world, rng.choice([1, 1, 2, 4, 8, 8, 8, 16, 16, 32, 64]))
        self.gpn = min(8, self.world)
        nhosts = max(1, self.world // self.gpn)
        pat = rng.choice(HOSTPAT)
        base = rng.randint(1, 400)
        self.hosts = [
            pat.format(n=base + i, a=rng.randint(0, 255), b=rng.randint(1, 254), h=f"{rng.getrandbits(20):05x}")
            for i in range(nhosts)
        ]
        self.ips = [f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}" for _ in range(nhosts)]
        self.pids = [rng.randint(1000, 4000000) for _ in range(self.world)]
        self.tids = [rng.randint(1000, 4000000) for _ in range(self.world)]
        self.jobid = str(rng.randint(10000, 99999999))
        self.user = rng.choice(USERS)
        self.sitepkgs = rng.choice(SITEPKGS).format(u=self.user)
        self.datadir = rng.choice(["/data", "/mnt/datasets", "/scratch/" + self.user + "/data", "./data"])
        self.outdir = rng.choice(
            [
                "./output",
                "/checkpoints/run" + str(rng.randint(1, 999)),
                "outputs/exp" + str(rng.randint(1, 99)),
                "/mnt/ckpt/" + self.user,
            ]
        )
        self.bucket = rng.choice(["s3://ml-artifacts", "s3://team-models", "my-training-bucket", "s3://runs-prod"])
        start = _dt.datetime(2019, 1, 1) + _dt.timedelta(seconds=rng.randint(0, 6 * 365 * 86400))
        self.clock = start
        self.epoch, self.step = 0, 0
        self.log_every = rng.choice([1, 10, 10, 20, 50, 100])
        self.steps_per_epoch = rng.choice([100, 500, 1000, 2500, 10000])
        self.rank = 0
        self.exitcode = "1"
        self.last_int = "0"
        # formatting style
        if self.world == 1:
            self.rank_style = "none"
        elif platform == "mpi":
            self.rank_style = rng.choice(["none", "mpi", "mpi"])
        elif platform == "slurm":
            self.rank_style = rng.choice(["none", "srun", "srun", "torchrun", "default"])
        else:
            self.rank_style = rng.choice(["none", "none", "torchrun", "default"])
        self.iso = platform == "k8s" and rng.random() < 0.5
        self.ts_style = rng.choice(["none", "none", "hf", "logging", "glog"])
        self.ansi = rng.random() < 0.25
        self.red_errors = self.ansi and rng.random() < 0.4
        self.tqdm_cr = rng.random() < 0.7

    # -- clock / progress
    def tick(self, lo=0.05, hi=4.0):
        self.clock += _dt.timedelta(seconds=self.rng.uniform(lo, hi))

    def advance(self):
        self.step += self.log_every
        self.epoch = max(self.epoch, self.step // self.steps_per_epoch)

    # -- placeholders
    def fill(self, template):
        if "${" not in template:
            return template
        return PH.sub(self._ph, template)

    def _ph(self, m):
        name, arg = m.group(1), m.group(2)
        rng, c = self.rng, self.clock
        if name == "int":
            a, b = arg.split(":")
            v = str(rng.randint(int(a), int(b)))
            self.last_int = v
            return v
        if name == "float":
            a, b, d = arg.split(":")
            return f"{rng.uniform(float(a), float(b)):.{int(d)}f}"
        if name == "hex":
            n = int(arg)
            return f"{rng.getrandbits(4 * n):0{n}x}"
        if name.startswith("pad"):
            a, b = arg.split(":")
            v = str(rng.randint(int(a), int(b))).zfill(int(name[3:]))
            self.last_int = v
            return v
        if name == "same":
            return self.last_int
        if name == "rank":
            return str(self.rank)
        if name == "rank2":
            return str((self.rank + rng.randint(1, max(1, self.world - 1))) % max(2, self.world))
        if name == "gpu":
            return str(self.rank % self.gpn)
        if name == "host":
            return self.hosts[min(len(self.hosts) - 1, self.rank // self.gpn)]
        if name == "host2":
            return rng.choice(self.hosts) if len(self.hosts) > 1 else self.hosts[0] + "-peer"
        if name == "pid":
            return str(self.pids[self.rank % len(self.pids)])
        if name == "tid":
            return str(self.tids[self.rank % len(self.tids)])
        if name == "ip":
            return self.ips[min(len(self.ips) - 1, self.rank // self.gpn)]
        if name == "jobid":
            return self.jobid
        if name == "user":
            return self.user
        if name == "sitepkgs":
            return self.sitepkgs
        if name == "datadir":
            return self.datadir
        if name == "outdir":
            return self.outdir
        if name == "bucket":
            return self.bucket
        if name == "epoch":
            return str(self.epoch)
        if name == "step":
            return str(self.step)
        if name == "exitcode":
            return self.exitcode
        if name == "tfts":
            return c.strftime("%Y-%m-%d %H:%M:%S.%f")
        if name == "dashts":
            return c.strftime("%Y-%m-%d %H:%M:%S")
        if name == "slurmts":
            return c.strftime("%Y-%m-%dT%H:%M:%S")
        if name == "ctimets":
            return c.strftime("%a %b ") + f"{c.day:2d}" + c.strftime(" %H:%M:%S %Y")
        if name == "glogdate":
            return c.strftime("%m%d")
        if name == "hms":
            return c.strftime("%H:%M:%S")
        if name in ("udate", "date"):
            return c.strftime("%Y-%m-%d")
        if name == "udate8":
            return c.strftime("%Y%m%d")
        if name == "hms6":
            return c.strftime("%H%M%S")
        if name == "yy":
            return c.strftime("%y")
        if name == "mmdd":
            return c.strftime("%m-%d")
        if name == "mmdd2":
            return c.strftime("%m/%d")
        raise KeyError(f"unknown placeholder ${{{name}}}")

    # -- decoration
    def rank_prefix(self, rank, stream="stdout"):
        s = self.rank_style
        if s == "torchrun":
            return f"[rank{rank}]:"
        if s == "default":
            return f"[default{rank}]:"
        if s == "srun":
            return f"{rank}: "
        if s == "mpi":
            return f"[1,{rank}]<{stream}>:"
        return ""

    def iso_prefix(self):
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.rng.randint(0, 999999999):09d}Z "

    def ts_prefix(self, line):
        lvl = "WARNING" if "Warning" in line or "WARN" in line else "INFO"
        st, c = self.ts_style, self.clock
        ms = self.rng.randint(0, 999)
        if st == "hf":
            lv = ANSI_LEVEL.get(lvl, lvl) if self.ansi else lvl
            return "{} - {} - {} - ".format(c.strftime("%m/%d/%Y %H:%M:%S"), lv, self.rng.choice(HF_LOGGERS))
        if st == "logging":
            lv = ANSI_LEVEL.get(lvl, lvl) if self.ansi else lvl
            t = c.strftime("%Y-%m-%d %H:%M:%S") + f",{ms:03d}"
            if self.ansi:
                t = "\x1b[32m" + t + "\x1b[0m"
            return f"{t} - {lv} - "
        if st == "glog":
            micros, pid = self.rng.randint(0, 999999), self.pids[self.rank % len(self.pids)]
            source, line = self.rng.choice(GLOG_FILES), self.rng.randint(20, 900)
            return f"{lvl[0]}{c.strftime('%m%d %H:%M:%S')}.{micros:06d} {pid} {source}:{line}] "
        return ""


class Writer:
    def __init__(self, ctx):
        self.ctx = ctx
        self.parts = []
        self.size = 0
        self.nlines = 0

    def emit_line(self, text, rank=None, system=False, stream="stdout", end="\n"):
        ctx = self.ctx
        pre = ""
        if ctx.iso:
            pre = ctx.iso_prefix()
        if not system and rank is not None and not (ctx.rank_style == "torchrun" and text.startswith("[rank")):
            pre += ctx.rank_prefix(rank, stream)
        s = pre + text + end
        self.parts.append(s)
        self.size += len(s.encode("utf-8"))
        if end == "\n":
            self.nlines += 1

    def emit_snippet(self, snip, rank=0, system=None, noise=False, stream=None, red=False, progress=True):
        """Emit one snippet, fill placeholders; returns (first_line_no, last_line_no), 1-based."""
        ctx = self.ctx
        ctx.rank = rank
        if system is None:
            system = bool(SYSTEM_ID.match(snip["id"])) or snip["lines"][0].startswith("(")
        if stream is None:
            stream = "stdout" if noise else "stderr"
        first = self.nlines + 1
        for raw in snip["lines"]:
            if noise and progress and ctx.tqdm_cr and PROGRESS_LINE.search(raw):
                self._emit_progress(raw, rank, system)
                continue
            line = ctx.fill(raw)
            if (
                noise
                and ctx.ts_style != "none"
                and not OWN_TS.search(raw)
                and raw[:1] not in (" ", "\t")
                and raw.strip()
                and not system
                and not PYWARN.search(raw)
            ):
                line = ctx.ts_prefix(line) + line
            elif noise and ctx.ansi:
                for k, v in ANSI_LEVEL.items():
                    if k in line:
                        line = line.replace(k, v, 1)
                        break
            if red and line.strip():
                line = "\x1b[31m" + line + "\x1b[0m"
            self.emit_line(line, rank=rank, system=system, stream=stream)
        ctx.tick()
        return first, self.nlines

    def _emit_progress(self, raw, rank, system):
        """A tqdm-style line rewritten in place: several updates joined by \\r, one newline."""
        ctx = self.ctx
        n = ctx.rng.randint(2, 25)
        ups = []
        for _ in range(n):
            ctx.advance()
            ctx.tick(0.1, 2.0)
            ups.append(ctx.fill(raw))
        pre = ctx.iso_prefix() if ctx.iso else ""
        if not system:
            pre += ctx.rank_prefix(rank, "stderr")
        s = pre + "\r".join(ups) + "\n"
        self.parts.append(s)
        self.size += len(s.encode("utf-8"))
        self.nlines += 1

    def text(self):
        return "".join(self.parts)


def log_uniform(rng, lo, hi):
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def pick_size(rng, startup):
    if startup:
        return log_uniform(rng, 10_000, 200_000)
    if rng.random() < 0.03:
        return log_uniform(rng, 2_000_000, 20_000_000)
    return log_uniform(rng, 20_000, 2_000_000)


class FileBuilder:
    def __init__(self, pools, rng, platform, min_world=1, no_nccl_startup=False):
        self.pools = pools
        self.rng = rng
        self.ctx = Ctx(rng, platform, min_world)
        self.w = Writer(self.ctx)
        k1 = min(len(pools.startup_noise), rng.randint(4, 12))
        k2 = min(len(pools.train_noise), rng.randint(3, 8))
        startup = pools.startup_noise
        if no_nccl_startup:  # the program never got as far as initialising NCCL
            startup = [x for x in startup if "nccl" not in x["id"] and "comm_init" not in x["id"]]
            k1 = min(k1, len(startup))
        self.startup_palette = rng.sample(startup, k1)
        self.train_palette = rng.sample(pools.train_noise, k2)
        self.train_weights = [rng.choice([1, 2, 5, 10, 20]) for _ in self.train_palette]
        self.tricky_used = []
        self.tricky = rng.choice(pools.tricky) if rng.random() < 0.12 else None
        self.tricky_left = rng.randint(1, 3) if self.tricky else 0

    def startup(self, budget):
        c, rng = self.ctx, self.rng
        target = self.w.size + budget
        for s in self.startup_palette:
            ranks = [0] if c.world == 1 else sorted(rng.sample(range(c.world), min(c.world, rng.randint(1, 4))))
            for r in ranks:
                self.w.emit_snippet(s, rank=r, noise=True)
                if self.w.size >= target:
                    return
        while self.w.size < target:  # more start-up chatter from other ranks (NCCL init etc.)
            s = rng.choice(self.startup_palette)
            self.w.emit_snippet(s, rank=rng.randrange(c.world), noise=True)

    def training(self, until, other_ranks_only=None):
        c, rng = self.ctx, self.rng
        while self.w.size < until:
            if self.tricky_left and rng.random() < 0.01:
                self.w.emit_snippet(self.tricky, rank=0, noise=True, progress=False)
                self.tricky_used.append(self.tricky["id"])
                self.tricky_left -= 1
                continue
            s = rng.choices(self.train_palette, weights=self.train_weights)[0]
            if other_ranks_only is not None:
                r = rng.choice(other_ranks_only)
            else:
                r = 0 if (c.world == 1 or rng.random() < 0.8) else rng.randrange(c.world)
            c.advance()
            self.w.emit_snippet(s, rank=r, noise=True)
        if self.tricky_left and self.tricky:  # make sure the chosen tricky line appears
            self.w.emit_snippet(self.tricky, rank=0, noise=True, progress=False)
            self.tricky_used.append(self.tricky["id"])
            self.tricky_left = 0


SHELL_LAST = ("cons_aborted_core_dumped", "cons_pycharm_exit_134")  # printed by the shell / IDE, always last


def choose_tails(rng, pools, reason, root_id, world):
    groups = ["launcher", "wrapper", "abort"]
    if reason not in NO_WATCHDOG and world > 1:
        groups.append("watchdog")
    if reason == "job_preempted":
        groups = ["launcher", "wrapper"]
    if reason == "mpi_error":
        groups = ["wrapper", "abort"]
    if root_id == "perm_gloo_filestore_open_denied_exit134":
        return [next(t for t in pools.tails["abort"] if t["id"] == "cons_pycharm_exit_134")]
    chosen = []
    if "watchdog" in groups and rng.random() < 0.6:  # the classic: other ranks time out
        chosen.append("watchdog")
    rest = [g for g in groups if g != "watchdog"]
    n = rng.choice([0, 1, 1, 2]) if chosen else rng.choice([1, 1, 2, 2, 3])
    chosen += rng.sample(rest, min(n, len(rest)))
    tails = [rng.choice(pools.tails[g]) for g in ["watchdog", "abort", "launcher", "wrapper"] if g in chosen]
    if any(t["id"] == "cons_pycharm_exit_134" for t in tails):  # a single process run from an IDE
        tails = [t for t in tails if TAIL_GROUPS["watchdog"].match(t["id"]) or t["id"] == "cons_pycharm_exit_134"]
    tails.sort(key=lambda t: t["id"] in SHELL_LAST)
    return tails


def build_failure(pools, rng, reason, early):
    root = rng.choice(pools.root[reason])
    platform = platform_of(root["id"]) or rng.choice(["bare", "bare", "slurm", "k8s", "mpi"])
    multi = reason in ("mpi_runtime_failure", "mpi_error") or re.search(r"nccl|watchdog|gloo|horovod|orte|mpi", root["id"])
    fb = FileBuilder(
        pools,
        rng,
        platform,
        min_world=2 if multi else 1,
        no_nccl_startup=reason in ("syntax_error", "import_error", "cannot_load_libs"),
    )
    c, w = fb.ctx, fb.w
    phase = "startup" if reason in STARTUP_REASONS else "train"
    if reason in EITHER_REASONS and rng.random() < 0.3:
        phase = "startup"
    size = pick_size(rng, phase == "startup")
    tails = choose_tails(rng, pools, reason, root["id"], c.world) if early else []
    post_frac = rng.uniform(0.02, 0.15) if early else 0.0
    pre_size = max(2000, int(size * (1 - post_frac)))
    if phase == "startup":
        fb.startup(pre_size)
    else:
        fb.startup(min(pre_size // 5, rng.randint(3000, 60000)))
        fb.training(pre_size)
        if reason == "output_node_error" and pools.finish_tails and rng.random() < 0.5:
            fin = rng.choice([f for f in pools.finish_tails if platform_ok(f["id"], platform)] or pools.finish_tails)
            w.emit_snippet(fin, rank=0, noise=True)
    frank = rng.randrange(c.world)
    c.exitcode = "-9" if reason == "cpu_oom" else "-11" if reason == "core_dump" else "1"
    red = c.red_errors and not SYSTEM_ID.match(root["id"])
    a, b = w.emit_snippet(root, rank=frank, red=red)
    if early:
        others = [r for r in range(c.world) if r != frank] or [frank]
        post = min(400_000, max(1500, int(size * post_frac)))
        if c.world == 1:
            pass  # a single process: the consequences follow at once
        elif phase == "train":
            fb.training(w.size + post, other_ranks_only=others)
        else:
            for _ in range(rng.randint(3, 30)):
                w.emit_snippet(rng.choice(fb.startup_palette), rank=rng.choice(others), noise=True)
        c.tick(60, 1800)
        for t in tails:
            if TAIL_GROUPS["abort"].match(t["id"]):
                c.exitcode = "-6"
            elif reason not in ("cpu_oom", "core_dump"):
                c.exitcode = "1"
            if TAIL_GROUPS["watchdog"].match(t["id"]):
                for r in rng.sample(others, min(len(others), rng.randint(1, 3))):
                    w.emit_snippet(t, rank=r)
            else:
                w.emit_snippet(t, rank=frank)
    return fb, root, tails, (a, b), phase


def platform_ok(sid, platform):
    p = platform_of(sid)
    return p is None or p == platform


def build_noisy(pools, rng, kind):
    platform = rng.choice(["bare", "bare", "slurm", "k8s", "mpi"])
    fb = FileBuilder(pools, rng, platform)
    size = pick_size(rng, False)
    fb.startup(min(size // 5, rng.randint(3000, 60000)))
    fb.training(size)
    tail_ids = []
    if kind == "killed":
        if rng.random() < 0.3:  # last progress update cut mid-line
            prog = [s for s in fb.train_palette if any(PROGRESS_LINE.search(line) for line in s["lines"])]
            if prog:
                chosen = next(line for line in rng.choice(prog)["lines"] if PROGRESS_LINE.search(line))
                txt = fb.ctx.fill(chosen)
                fb.w.emit_line(txt[: rng.randint(1, max(1, len(txt)))], rank=0, end="")
        elif rng.random() < 0.7:
            cands = [s for s in pools.killed_tails if platform_ok(s["id"], platform)]
            t = rng.choice(cands)
            fb.ctx.tick(1, 30)
            fb.w.emit_snippet(t, rank=0, system=True)
            tail_ids.append(t["id"])
    else:
        if rng.random() < 0.6:
            cands = [s for s in pools.finish_tails if platform_ok(s["id"], platform)]
            t = rng.choice(cands)
            fb.w.emit_snippet(t, rank=0, noise=True)
            tail_ids.append(t["id"])
    return fb, tail_ids


def plan_kinds(rng):
    while True:
        block = ["failure"] * SHARE_FAILURE + ["killed"] * SHARE_KILLED + ["healthy"] * SHARE_HEALTHY
        rng.shuffle(block)
        yield from block


def plan_reasons(rng):
    while True:
        block = list(FAILURE_REASONS)
        rng.shuffle(block)
        yield from block


def plan_early(rng):
    while True:
        block = [True] * EARLY_PER_40 + [False] * (40 - EARLY_PER_40)
        rng.shuffle(block)
        yield from block


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (logs/ and labels.jsonl are written there)")
    ap.add_argument("--files", type=int, default=200, help="number of files (ignored with --size-mb)")
    ap.add_argument(
        "--size-mb", type=float, default=None, help="generate files until their total size reaches this many MB (10^6 bytes)"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--snippets", default=os.path.join(HERE, "snippets.yaml"))
    args = ap.parse_args(argv)

    snippets, _ = load_snippets(args.snippets)
    pools = Pools(snippets)
    plan = random.Random(f"plan-{args.seed}")
    kinds, reasons, earlies = plan_kinds(plan), plan_reasons(plan), plan_early(plan)
    pending_early = False

    logdir = os.path.join(args.out, "logs")
    os.makedirs(logdir, exist_ok=True)
    total, i = 0, 0
    limit = None if args.size_mb is None else int(args.size_mb * 1_000_000)
    with open(os.path.join(args.out, "labels.jsonl"), "w", encoding="utf-8") as lab:
        while (total < limit) if limit is not None else (i < args.files):
            i += 1
            rng = random.Random(f"file-{args.seed}-{i}")
            kind = next(kinds)
            rec = {"path": f"logs/job_{i:05d}.log", "kind": kind}
            if kind == "failure":
                reason = next(reasons)
                early = next(earlies) or pending_early
                pending_early = False
                if early and reason == "traceback_from_crash":  # only a consequence: nothing is "early"
                    early, pending_early = False, True
                fb, root, tails, (a, b), phase = build_failure(pools, rng, reason, early)
                rec.update(
                    reason=reason,
                    early=early,
                    phase=phase,
                    root_cause_id=root["id"],
                    root_cause_source=root["source"],
                    root_cause_lines=[a, b],
                    tail_ids=[t["id"] for t in tails],
                )
            else:
                fb, tail_ids = build_noisy(pools, rng, kind)
                rec.update(
                    reason="no_signature",
                    early=False,
                    phase="train",
                    root_cause_id=None,
                    root_cause_source=None,
                    root_cause_lines=None,
                    tail_ids=tail_ids,
                )
            c = fb.ctx
            data = fb.w.text().encode("utf-8")
            with open(os.path.join(args.out, rec["path"]), "wb") as fh:
                fh.write(data)
            total += len(data)
            rec.update(
                size=len(data),
                tricky_noise=sorted(set(fb.tricky_used)),
                platform=c.platform,
                world_size=c.world,
                rank_style=c.rank_style,
                ts_style=c.ts_style,
                iso_timestamps=c.iso,
                ansi=c.ansi,
            )
            lab.write(json.dumps(rec, sort_keys=True) + "\n")
    print(f"wrote {i} files, {total / 1e6:.1f} MB, to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
