"""Record real GPU signals of real PyTorch training jobs, each with a planted cause of low
GPU utilisation, for failclass's GPU-waste analyser.

    python3 corpora/gpu_recordings/record.py --out $OUT/rec          # on a machine with one NVIDIA GPU
    python3 corpora/gpu_recordings/record.py --cpu --out /tmp/rec    # dry run: no nvidia-smi, CPU, short

The recorder runs the jobs one after another on one GPU. Each job is this same file run
as a child process (``--scenario NAME``), sometimes with a shell-level step before or after
it (a real ``pip install`` of a local package, a real ``sleep``). While the jobs run, a
background ``nvidia-smi --query-gpu=... --format=csv -lms 200`` writes one CSV for the
whole session (and ``dcgmi dmon`` where DCGM is installed and answers).

Everything a job prints goes, stdout and stderr together, into its log. Jobs that log
through Python ``logging`` carry their own time stamps; for the jobs that only print, the
recorder's collector puts the arrival time (RFC 3339, UTC) in front of each line, as
``kubectl logs --timestamps`` does. Nothing is written into a log that the job did not
print.

Every phase of a job is timed by ``time.time()`` around it, in the process that runs it
(after ``torch.cuda.synchronize()`` where GPU work is queued), and written to
``planted.json`` with the cause ids of failclass/data/waste/causes.yaml that it plants.

At the end the recorder stops the samplers, writes ``jobs.csv`` (the shape ``failclass
waste report --jobs`` reads), ``planted.json`` and ``summary.txt``, packs everything into
``recording.tar.gz`` at the top of ``--out`` and removes the unpacked tree (``--keep-tree``
keeps it). It never changes a GPU setting.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

PROCESS_START = time.time()
HERE = Path(__file__).resolve()

QUERY = "timestamp,index,name,pci.bus_id,uuid,utilization.gpu,utilization.memory,memory.total,memory.used,memory.free,power.draw"
SAMPLE_MS = 200
GAP_S = 2.0  # no job between two jobs, so that each one can be cut out of the series
BASELINE_S = 3.0
RESERVE_S = 15.0  # kept for stopping the samplers, the summary and the tarball
JOB_OVERHEAD_S = 2.0  # a job's usual overrun past its planned end (interpreter and CUDA teardown)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --------------------------------------------------------------------------------------
# The jobs
# --------------------------------------------------------------------------------------


@dataclass
class JobSpec:
    name: str
    seconds: float  # the job's planned wall time on a GPU machine (the dry run scales it)
    description: str
    causes: list[str]
    kind: str = "batch"
    log_style: str = "logging"  # "logging": the program stamps its lines; "collector": record.py does
    needs_cuda: bool = False
    env: dict[str, str] = field(default_factory=dict)
    notes: str = ""
    default: bool = True  # run when --only names no jobs (the jobs of recordings _a and _b)
    tail_sleep_share: float = 0.0  # a `sleep` after the program, this share of the job (unreleased_job)
    data_server: bool = False  # needs the recorder's local HTTP data server


JOBS = [
    JobSpec(
        "healthy",
        26,
        "Control: a ResNet-18-style classifier trained with bf16 autocast and channels_last on synthetic "
        "images generated on the GPU itself (batch 256), so the GPU never waits for data.",
        [],
    ),
    JobSpec(
        "loader_starved",
        28,
        "The same classifier fed by a torch DataLoader with num_workers=0 and pin_memory=False: every "
        "image is 'decoded' and augmented in numpy on the main process (random resized crop with bilinear "
        "resampling, flip, colour jitter, 5-tap blur, normalise), then copied with a blocking .to(device) "
        "from pageable memory. Planted: the time the loop waits in next(loader) (data_preprocessing) and "
        "in the host-to-GPU copy (inefficient_host_gpu_transfer), each step measured.",
        ["data_preprocessing", "inefficient_host_gpu_transfer"],
        log_style="collector",
        notes="inefficient_host_gpu_transfer is detectable: false in causes.yaml; the copy intervals are tiny "
        "next to the CPU transform ones.",
    ),
    JobSpec(
        "checkpointing",
        30,
        "A GPT-style Transformer LM (about 285 M parameters on the GPU) trained on Markov-chain token "
        "sequences, saving model and AdamW state with torch.save to local disk every few seconds "
        "(about 3.4 GB each, the older one deleted). Planted: each save (model_checkpointing).",
        ["model_checkpointing"],
    ),
    JobSpec(
        "preprocessing",
        30,
        "The LM job that builds its model on the GPU first, then generates and tokenises a text corpus in "
        "pure Python on one CPU core (GPU memory held, GPU idle), then trains. Planted: the CPU "
        "preprocessing phase (data_preprocessing).",
        ["data_preprocessing"],
    ),
    JobSpec(
        "tiny_batch",
        24,
        "The classifier trained with batch size 2 on 64x64 images generated on the GPU, with loss.item() "
        "every step: low utilisation and little memory. Planted: the training phase (improper_batch_size).",
        ["improper_batch_size"],
        log_style="collector",
    ),
    JobSpec(
        "evaluation",
        30,
        "The classifier trained on GPU-generated data, interrupted by evaluation passes under torch.no_grad "
        "whose data are decoded and resized in numpy (num_workers=0) and whose metrics (confusion matrix, "
        "per-class F1, calibration error, per-class AUROC) are computed in Python on the CPU. Planted: each "
        "evaluation pass (model_evaluation).",
        ["model_evaluation"],
    ),
    JobSpec(
        "interactive",
        28,
        "An interactive-style session: code cells (build the model on the GPU, load a tensor of data onto "
        "it, a few training steps, look at memory) run one by one, with the pauses of a person reading "
        "the output in between; the GPU memory stays allocated during the pauses. It is a scripted "
        "session, not a notebook server. Planted: each pause (interactive_job); the jobs file says kind "
        "interactive.",
        ["interactive_job"],
        kind="interactive",
        log_style="collector",
    ),
    JobSpec(
        "unreleased",
        26,
        "The classifier trains for about half the job, saves its final weights and exits; the job then "
        "runs `sleep` (a real coreutils sleep, as a job script with a trailing wait would) and holds the "
        "GPU with no process on it. Planted: the sleep (unreleased_job).",
        ["unreleased_job"],
        tail_sleep_share=0.5,
    ),
    JobSpec(
        "cpu_fallback",
        20,
        "The job is given the GPU but started with CUDA_VISIBLE_DEVICES='' (an empty value, a common "
        "launcher mistake); the code picks device 'cpu' when CUDA is not available and trains on the CPU. "
        "The GPU is never touched. Planted: the whole job (api_misuse).",
        ["api_misuse"],
        log_style="collector",
        env={"CUDA_VISIBLE_DEVICES": ""},
        notes="api_misuse is detectable: false in causes.yaml; failclass sees a never-used GPU of a "
        "one-GPU job, which its rules explain as non_dl_job.",
    ),
    JobSpec(
        "prep_then_checkpoint",
        32,
        "Two causes: the LM job tokenises its corpus on the CPU before it touches CUDA (no GPU memory yet), "
        "then trains with a torch.save checkpoint every few seconds. Planted: the preprocessing phase "
        "(data_preprocessing) and each save (model_checkpointing).",
        ["data_preprocessing", "model_checkpointing"],
    ),
    JobSpec(
        "pip_then_train",
        22,
        "The job first runs a real `python3 -m pip install --no-index --no-build-isolation --target ...` "
        "of a local package that record.py writes (200 modules, built with setuptools), then imports it "
        "and trains the classifier. Planted: the pip step (long_library_installation).",
        ["long_library_installation"],
        log_style="collector",
        notes="The install takes seconds, not the 10 minutes causes.yaml asks for (min_span_s 600).",
    ),
    JobSpec(
        "cuda_oom",
        18,
        "A failure for the failure corpus: a batch-size search that doubles the batch (x8 each try) until "
        "the real CUDA out-of-memory error, not caught; the traceback ends the job with exit status 1.",
        [],
        log_style="collector",
        needs_cuda=True,
    ),
    # -- the jobs of recording _c: run only when --only names them
    JobSpec(
        "healthy_long",
        62,
        "A longer control: the GPT-style LM (about 285 M parameters) trained with bf16 autocast on "
        "Markov-chain token sequences that live on the GPU, with no checkpoints and no evaluation.",
        [],
        default=False,
    ),
    JobSpec(
        "remote_data_read",
        45,
        "The classifier reads its training data over HTTP from a local server that the recorder starts on "
        "127.0.0.1 (a throttled object store: 150-300 MB/s a request, 30 ms to the first byte, some requests "
        "held back 0.8-1.5 s). Each shard of 2048 images (112x112 uint8, 77 MB) is fetched with urllib "
        "when the previous one is used up, with no prefetching, then upsampled to 224x224 on the GPU and "
        "trained on for 8 steps of 256. Planted: each shard read (remote_data_read).",
        ["remote_data_read"],
        default=False,
        data_server=True,
        notes="remote_data_read is detectable: false in causes.yaml. The server's own request log is "
        "server/access.log (http.server's format), with each request's times in server/requests.jsonl.",
    ),
    JobSpec(
        "external_data_usage",
        50,
        "The job script first downloads its dataset (a 112x112 uint8 image array as .npy, about 40% of the "
        "job at about 100 MB/s) from the recorder's local HTTP server with curl (wget, or urllib with a "
        "progress bar, where curl is missing), then the program memory-maps the file and trains the "
        "classifier on it. Planted: the download step (external_data_usage), timed by the recorder.",
        ["external_data_usage"],
        log_style="collector",
        default=False,
        data_server=True,
        notes="The download tool's output is the tool's own (curl's progress meter, wget's dot progress).",
    ),
    JobSpec(
        "host_gpu_transfer",
        40,
        "The classifier is fed batches of 512 float32 224x224 images (308 MB) built on the CPU at start "
        "in ordinary pageable memory; every step copies one with a blocking .to(device) (non_blocking=False, "
        "no pin_memory) before computing, so each step has a transfer dip. Planted: each copy, timed from "
        "torch.cuda.synchronize() to torch.cuda.synchronize() (inefficient_host_gpu_transfer).",
        ["inefficient_host_gpu_transfer"],
        log_style="collector",
        default=False,
        notes="inefficient_host_gpu_transfer is detectable: false in causes.yaml. The dips are shorter than "
        "nvidia-smi's 200 ms sampling: they lower every reading rather than show as gaps.",
    ),
    JobSpec(
        "unreleased_long",
        55,
        "The classifier trains for about a third of the job, saves its final weights and exits; the job "
        "script then runs `sleep` for the remaining two thirds (a real coreutils sleep) and holds the GPU "
        "with no process on it. Planted: the sleep (unreleased_job).",
        ["unreleased_job"],
        default=False,
        tail_sleep_share=0.65,
    ),
    JobSpec(
        "cuda_visible_empty",
        35,
        "The job is given the GPU but started with CUDA_VISIBLE_DEVICES=''. The program logs what torch "
        "reports (is_available, device_count, and the error of a first CUDA allocation), falls back to the "
        "CPU and trains a small Transformer LM there. The GPU is never touched. Planted: the whole job "
        "(api_misuse).",
        ["api_misuse"],
        default=False,
        env={"CUDA_VISIBLE_DEVICES": ""},
        notes="api_misuse is detectable: false in causes.yaml.",
    ),
    JobSpec(
        "mixture",
        58,
        "Two causes with phases of different lengths: the LM is built on the GPU, then a text corpus is "
        "generated and tokenised in pure Python (about a third of the job, GPU memory held), then it trains "
        "with torch.save checkpoints after about 3, 6 and 9 s of training in turn. Planted: the "
        "preprocessing (data_preprocessing) and each save (model_checkpointing).",
        ["data_preprocessing", "model_checkpointing"],
        default=False,
    ),
]


# --------------------------------------------------------------------------------------
# Helpers shared by the job programs (child processes)
# --------------------------------------------------------------------------------------


class Phases:
    """Phases of a job, appended as JSON lines (flushed each time, so a crash keeps them)."""

    def __init__(self, path: Path | None):
        self.path = path

    def add(self, name: str, start: float, end: float, cause: str | None = None, **detail: object) -> None:
        if self.path is None:
            return
        row = {"name": name, "cause": cause, "start": start, "end": end, "detail": detail}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    @contextlib.contextmanager
    def phase(self, name: str, cause: str | None = None, sync: object = None, since: float | None = None, **detail: object):
        """Time the block (from ``since`` when given); ``sync`` is called at both ends (torch.cuda.synchronize)."""
        if sync:
            sync()
        start = time.time() if since is None else since
        try:
            yield detail
        finally:
            if sync:
                with contextlib.suppress(Exception):
                    sync()
            self.add(name, start, time.time(), cause, **detail)


class Progress:
    """tqdm where it is installed; otherwise a bar printed the way tqdm prints one."""

    def __init__(self, total: int, desc: str, unit: str = "it"):
        self.total, self.desc, self.unit = total, desc, unit
        self.n, self.start, self.last = 0, time.time(), 0.0
        try:
            from tqdm import tqdm  # type: ignore

            self.bar = tqdm(total=total, desc=desc, unit=unit, mininterval=0.5, file=sys.stderr)
        except ImportError:
            self.bar = None
            self._draw()

    def update(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)
            return
        self.n += n
        if time.time() - self.last >= 0.5 or self.n >= self.total:
            self._draw()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            return
        self._draw()
        sys.stderr.write("\n")
        sys.stderr.flush()

    def _draw(self) -> None:
        self.last = time.time()
        elapsed = self.last - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        frac = self.n / self.total if self.total else 1.0
        filled = int(frac * 10)
        bar = "█" * filled + (" " * (10 - filled))
        left = (self.total - self.n) / rate if rate > 0 else 0.0
        rate_text = f"{rate:.2f}{self.unit}/s" if self.n else f"?{self.unit}/s"
        sys.stderr.write(
            f"\r{self.desc}: {int(frac * 100):3d}%|{bar}| {self.n}/{self.total} "
            f"[{_clock(elapsed)}<{_clock(left) if self.n else '?'}, {rate_text}]"
        )
        sys.stderr.flush()


def _clock(seconds: float) -> str:
    minutes, sec = divmod(int(seconds), 60)
    return f"{minutes:02d}:{sec:02d}"


def progress_kind() -> str:
    try:
        import tqdm  # type: ignore

        return f"tqdm {tqdm.__version__}"
    except ImportError:
        return "record.py's own tqdm-style bar"


@dataclass
class Ctx:
    """What a job program gets: where to time its phases, until when to run, where to write."""

    name: str
    phases: Phases
    until: float
    scratch: Path
    cpu: bool
    log: object = None  # logging.Logger or None (then print)

    def say(self, message: str) -> None:
        if self.log is not None:
            self.log.info(message)
        else:
            print(message, flush=True)

    def left(self) -> float:
        return self.until - time.time()


def setup_logging(name: str, fmt: str, datefmt: str | None = None):
    import logging

    logging.basicConfig(format=fmt, datefmt=datefmt, level=logging.INFO, stream=sys.stdout, force=True)
    return logging.getLogger(name)


def torch_setup(ctx: Ctx, announce: bool = True):
    import torch

    use_cuda = torch.cuda.is_available() and not ctx.cpu
    device = torch.device("cuda" if use_cuda else "cpu")
    if use_cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if announce:
        if use_cuda:
            props = torch.cuda.get_device_properties(0)
            ctx.say(
                f"torch {torch.__version__}, device cuda:0 {props.name}, "
                f"{props.total_memory / 2**30:.1f} GiB, CUDA {torch.version.cuda}"
            )
        else:
            ctx.say(f"torch {torch.__version__}, device cpu ({torch.get_num_threads()} threads)")
    return torch, device


def synchronizer(device):
    import torch

    if device.type == "cuda":
        return torch.cuda.synchronize
    return None


def autocast(device):
    import torch

    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


# ---- models ----------------------------------------------------------------------------


def make_resnet(num_classes: int, small: bool):
    """A ResNet-18-style network (BasicBlocks [2, 2, 2, 2], widths 64-512); small: a quarter wide, one block a stage."""
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.b1(self.c1(x)))
            out = self.b2(self.c2(out))
            return self.relu(out + (x if self.down is None else self.down(x)))

    widths = (16, 32, 64, 128) if small else (64, 128, 256, 512)
    blocks = 1 if small else 2
    layers: list[nn.Module] = [
        nn.Conv2d(3, widths[0], 7, 2, 3, bias=False),
        nn.BatchNorm2d(widths[0]),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    cin = widths[0]
    for stage, width in enumerate(widths):
        for b in range(blocks):
            layers.append(Block(cin, width, 2 if (b == 0 and stage > 0) else 1))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    return nn.Sequential(*layers)


def make_lm(vocab: int, d: int, layers: int, heads: int, ff: int):
    import torch
    import torch.nn as nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(1024, d)
            layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            t = ids.shape[1]
            x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))[None]
            mask = nn.Transformer.generate_square_subsequent_mask(t, device=ids.device, dtype=x.dtype)
            x = self.body(x, mask=mask, is_causal=True)
            return self.head(self.norm(x))

    return LM()


def count_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


# ---- data ------------------------------------------------------------------------------


class GpuImages:
    """Synthetic labelled images made on the device: a coarse random pattern per class, noise, flips."""

    def __init__(self, torch, device, classes: int, size: int, seed: int = 0):
        import torch.nn.functional as F

        self.torch, self.device, self.classes, self.size = torch, device, classes, size
        gen = torch.Generator(device="cpu").manual_seed(seed)
        coarse = torch.rand(classes, 3, 8, 8, generator=gen)
        self.protos = F.interpolate(coarse, size=(size, size), mode="bilinear", align_corners=False).to(device)

    def batch(self, n: int):
        torch = self.torch
        labels = torch.randint(0, self.classes, (n,), device=self.device)
        x = self.protos[labels] + 0.25 * torch.randn(n, 3, self.size, self.size, device=self.device)
        flip = torch.rand(n, device=self.device) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(3), x)
        x = (x - 0.5) / 0.25
        return x.contiguous(memory_format=torch.channels_last), labels


def _protos_uint8(classes: int, size: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    coarse = rng.integers(30, 226, size=(classes, 8, 8, 3)).astype(np.uint8)
    reps = -(-size // 8)
    return np.repeat(np.repeat(coarse, reps, axis=1), reps, axis=2)[:, :size, :size]


def bilinear_resize(img, oh: int, ow: int):
    """Bilinear resampling of an HWC image to (oh, ow), float32, as an image library does it."""
    import numpy as np

    h, w = img.shape[:2]
    ys = np.clip((np.arange(oh, dtype=np.float32) + 0.5) * (h / oh) - 0.5, 0, h - 1)
    xs = np.clip((np.arange(ow, dtype=np.float32) + 0.5) * (w / ow) - 0.5, 0, w - 1)
    y0 = ys.astype(np.int64)
    x0 = xs.astype(np.int64)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    a = img.astype(np.float32)
    r0, r1 = a[y0], a[y1]
    top = r0[:, x0] * (1 - wx) + r0[:, x1] * wx
    bottom = r1[:, x0] * (1 - wx) + r1[:, x1] * wx
    return top * (1 - wy) + bottom * wy


class DecodedImages:
    """A map-style dataset whose items are 'decoded' (prototype plus seeded noise, uint8 HWC) and then
    transformed in numpy, the way an image folder with CPU transforms works."""

    MEAN = (0.485, 0.456, 0.406)
    STD = (0.229, 0.224, 0.225)

    def __init__(self, n: int, classes: int, src: int, out: int, train: bool, seed: int = 0):
        self.n, self.classes, self.src, self.out, self.train, self.seed = n, classes, src, out, train, seed
        self.protos = _protos_uint8(classes, src, 0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        import numpy as np
        import torch

        rng = np.random.default_rng(self.seed * 1_000_003 + i)
        label = i % self.classes
        noise = rng.integers(-40, 41, size=(self.src, self.src, 3), dtype=np.int16)
        img = np.clip(self.protos[label].astype(np.int16) + noise, 0, 255).astype(np.uint8)
        x = self._train(img, rng) if self.train else self._eval(img)
        x = (x * np.float32(1 / 255) - np.asarray(self.MEAN, np.float32)) / np.asarray(self.STD, np.float32)
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1), dtype=np.float32)), label

    def _train(self, img, rng):
        import numpy as np

        h, w = img.shape[:2]
        area = h * w * rng.uniform(0.35, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw = min(w, max(8, int(round(math.sqrt(area * ratio)))))
        ch = min(h, max(8, int(round(math.sqrt(area / ratio)))))
        top, left = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        x = bilinear_resize(img[top : top + ch, left : left + cw], self.out, self.out)
        if rng.random() < 0.5:
            x = x[:, ::-1]
        x = x * rng.uniform(0.6, 1.4, size=3).astype(np.float32) + np.float32(rng.uniform(-20, 20))
        x = x.astype(np.float32, copy=False)
        k = np.asarray([1, 4, 6, 4, 1], np.float32) / 16
        p = np.pad(x, ((2, 2), (2, 2), (0, 0)), mode="edge")
        x = sum(k[j] * p[j : j + self.out] for j in range(5))
        x = sum(k[j] * x[:, j : j + self.out - 4] for j in range(5))  # valid part, then padded back
        x = np.pad(x, ((0, 0), (2, 2), (0, 0)), mode="edge")
        return np.clip(x, 0, 255)

    def _eval(self, img):
        resize = int(self.out * 256 / 224)
        x = bilinear_resize(img, resize, resize)
        off = (resize - self.out) // 2
        return x[off : off + self.out, off : off + self.out]


def markov_chain(vocab: int, seed: int = 0, successors: int = 4):
    import numpy as np

    rng = np.random.default_rng(seed)
    nxt = rng.integers(0, vocab, size=(vocab, successors))
    probs = rng.dirichlet(np.ones(successors) * 0.7, size=vocab)
    return nxt, probs


def gpu_token_sequences(torch, device, vocab: int, n: int, t: int, seed: int = 0):
    nxt, probs = markov_chain(vocab, seed)
    nxt_t = torch.as_tensor(nxt, device=device)
    probs_t = torch.as_tensor(probs, device=device, dtype=torch.float32)
    gen = torch.Generator(device=device).manual_seed(seed)
    seqs = torch.empty(n, t, dtype=torch.long, device=device)
    seqs[:, 0] = torch.randint(0, vocab, (n,), device=device, generator=gen)
    for i in range(1, t):
        choice = torch.multinomial(probs_t[seqs[:, i - 1]], 1, generator=gen).squeeze(1)
        seqs[:, i] = nxt_t[seqs[:, i - 1], choice]
    return seqs


# ---- training pieces ---------------------------------------------------------------------


def lm_sizes(cpu: bool) -> dict[str, int]:
    if cpu:
        return dict(vocab=1024, d=128, layers=2, heads=4, ff=256, seq=64, batch=8)
    return dict(vocab=16384, d=1024, layers=20, heads=16, ff=4096, seq=512, batch=16)


def train_lm(
    ctx: Ctx,
    torch,
    device,
    model,
    data,
    until: float,
    save_every_s: float | tuple[float, ...] | None,
    cause_prefix: str = "",
):
    """Train the LM on ``data`` (sequences of seq+1 tokens on the device) until ``until``; with
    ``save_every_s``, save a checkpoint every K steps, K chosen from the measured step time (with a
    tuple of seconds, the intervals take those lengths in turn)."""
    import torch.nn.functional as F

    sync = synchronizer(device)
    with ctx.phases.phase("optimizer setup"):
        opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.01)
    batch = lm_sizes(ctx.cpu)["batch"]
    ckpt_dir = ctx.scratch / f"{ctx.name}-checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    step, save_steps, saved, saves_done, timed_from, next_save = 0, None, [], [], 0.0, 0
    amp = autocast(device)
    tokens_per_step = batch * (data.shape[1] - 1)
    ctx.say(
        f"***** Running training *****  sequences = {data.shape[0]}, batch size = {batch}, "
        f"tokens per step = {tokens_per_step}, parameters = {count_params(model):,}"
    )
    train_start = time.time()
    seg_start, last_log, log_every = time.time(), time.time(), 2.0
    while time.time() < until:
        idx = torch.randint(0, data.shape[0], (batch,), device=device)
        seq = data[idx]
        with amp:
            logits = model(seq[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), seq[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if save_every_s and save_steps is None and step in (3, 13):
            if sync:
                sync()
            if step == 3:  # the first steps are slow (kernel selection, allocator warm-up): time steps 4-13
                timed_from = time.time()
                continue
            per_step = (time.time() - timed_from) / 10
            intervals = save_every_s if isinstance(save_every_s, tuple) else (save_every_s,)
            save_steps = [max(2, round(s / per_step)) for s in intervals]
            if len(save_steps) == 1:
                ctx.say(f"Measured {per_step * 1000:.1f} ms a step; saving a checkpoint every {save_steps[0]} steps")
            else:
                ctx.say(
                    f"Measured {per_step * 1000:.1f} ms a step; saving checkpoints after "
                    f"{', '.join(map(str, save_steps))} steps in turn"
                )
            while next_save <= step:
                next_save += save_steps[0]
        if time.time() - last_log >= log_every:
            value = loss.item()
            now = time.time()
            ctx.say(
                f"step {step}: loss = {value:.4f}, lr = 6.0e-04, {tokens_per_step * step / (now - train_start):,.0f} tokens/s"
            )
            last_log = now
        if save_steps and step == next_save and time.time() < until:
            if sync:
                sync()
            ctx.phases.add(f"{cause_prefix}training", seg_start, time.time(), None, steps_to=step)
            path = ckpt_dir / f"checkpoint-{step}.pt"
            with ctx.phases.phase(f"save checkpoint-{step}", "model_checkpointing", sync) as detail:
                save_start = time.time()
                ctx.say(f"Saving model checkpoint to {path}")
                state = {"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}
                torch.save(state, path)
                del state
                size = path.stat().st_size
                detail["bytes"] = size
                ctx.say(f"Saved checkpoint {path.name} ({size / 2**30:.2f} GiB) in {time.time() - save_start:.2f} s")
                for old in saved:
                    old.unlink(missing_ok=True)
                    ctx.say(f"Removed older checkpoint {old.name} (keep_last = 1)")
                saved = [path]
                saves_done.append(step)
            next_save += save_steps[len(saves_done) % len(save_steps)]
            seg_start = time.time()
    if sync:
        sync()
    ctx.phases.add(f"{cause_prefix}training", seg_start, time.time(), None, steps_to=step)
    ctx.say(f"Training stopped at step {step} (max_time reached)" + (f", last loss = {loss.item():.4f}" if step else ""))
    return step


def resnet_train_gpu_data(
    ctx: Ctx,
    torch,
    device,
    model,
    opt,
    images: GpuImages,
    batch: int,
    until: float,
    log_every: float = 2.0,
    item_every_step: bool = False,
    phase_cause: str | None = None,
    phase_name: str = "training",
):
    import torch.nn.functional as F

    sync = synchronizer(device)
    amp = autocast(device)
    step, start, last_log, running = 0, time.time(), time.time(), 0.0
    with ctx.phases.phase(phase_name, phase_cause, sync, batch=batch) as detail:
        while time.time() < until:
            x, y = images.batch(batch)
            with amp:
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if item_every_step:
                running += loss.item()
            if time.time() - last_log >= log_every:
                now = time.time()
                value = running / step if item_every_step else loss.item()
                ctx.say(f"step {step} | loss: {value:.4f} | {batch * step / (now - start):.1f} img/s")
                last_log = now
        detail["steps"] = step
    return step


# --------------------------------------------------------------------------------------
# The job programs
# --------------------------------------------------------------------------------------


def job_healthy(ctx: Ctx) -> None:
    ctx.log = setup_logging("__main__", "%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        small = device.type == "cpu"
        model = make_resnet(100, small).to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        size, batch = (64, 16) if small else (224, 256)
        images = GpuImages(torch, device, 100, size)
    ctx.say(
        f"Model: ResNet-18-style, {count_params(model):,} parameters; data: synthetic {size}x{size} images "
        f"generated on {device.type}, batch size {batch}, bf16 autocast = {device.type == 'cuda'}"
    )
    ctx.say(f"Training for up to {ctx.left():.1f} s (max_time)")
    steps = resnet_train_gpu_data(ctx, torch, device, model, opt, images, batch, ctx.until)
    ctx.say(f"Training finished: {steps} steps")


def job_loader_starved(ctx: Ctx) -> None:
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, Dataset

        small = device.type == "cpu"
        model = make_resnet(100, small).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        src, out, batch = (72, 64, 16) if small else (256, 224, 64)

        class Images(DecodedImages, Dataset):
            pass

        dataset = Images(20000, 100, src, out, train=True)
        loader = DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=0, pin_memory=False, drop_last=True)
    print(
        f"DataLoader(batch_size={batch}, num_workers=0, pin_memory=False); transform: decode {src}x{src}, "
        f"RandomResizedCrop({out}) bilinear, flip, colour jitter, blur, normalise (numpy)",
        flush=True,
    )
    sync = synchronizer(device)
    amp = autocast(device)
    step, epoch = 0, 0
    fetch, copy = [], []
    train_start = time.time()
    data_time = gpu_time = 0.0
    bar = Progress(len(loader), f"Epoch {epoch}", unit="it")
    iterator = iter(loader)
    while time.time() < ctx.until:
        t0 = time.time()
        try:
            x, y = next(iterator)
        except StopIteration:
            bar.close()
            epoch += 1
            bar = Progress(len(loader), f"Epoch {epoch}", unit="it")
            iterator = iter(loader)
            continue
        t1 = time.time()
        x, y = x.to(device), y.to(device)  # pageable memory, blocking copy
        if sync:
            sync()
        t2 = time.time()
        fetch.append((t0, t1))
        copy.append((t1, t2))
        with amp:
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
        t3 = time.time()
        data_time += t1 - t0
        gpu_time += t3 - t2
        step += 1
        bar.update(1)
        if step % 5 == 0:
            print(
                f"\nstep {step}: loss {value:.4f}, data_time {data_time / step:.3f} s, "
                f"copy {sum(b - a for a, b in copy) / step * 1000:.1f} ms, compute {gpu_time / step:.3f} s",
                flush=True,
            )
    bar.close()
    for a, b in fetch:
        ctx.phases.add("waiting on next(loader)", a, b, "data_preprocessing")
    for a, b in copy:
        ctx.phases.add("host-to-GPU copy (pageable, blocking)", a, b, "inefficient_host_gpu_transfer")
    ctx.phases.add("training loop", train_start, time.time(), None, steps=step)
    print(
        f"Done: {step} steps in {time.time() - train_start:.1f} s; {data_time / max(step, 1):.3f} s a step "
        f"waiting for data, {gpu_time / max(step, 1):.3f} s a step computing",
        flush=True,
    )


def job_checkpointing(ctx: Ctx) -> None:
    ctx.log = setup_logging("train", "[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    with ctx.phases.phase("startup (import torch, CUDA init, model, data)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        s = lm_sizes(ctx.cpu)
        model = make_lm(s["vocab"], s["d"], s["layers"], s["heads"], s["ff"]).to(device)
        data = gpu_token_sequences(torch, device, s["vocab"], 512 if ctx.cpu else 4096, s["seq"] + 1)
    ctx.say(f"Model: {s['layers']}-layer Transformer LM, d_model {s['d']}, {count_params(model):,} parameters")
    ctx.say(f"Training for up to {ctx.left():.1f} s (max_time)")
    train_lm(ctx, torch, device, model, data, ctx.until, save_every_s=1.2 if ctx.cpu else 5.0)


def preprocess_corpus(ctx: Ctx, seconds: float, vocab: int, seq: int, cause: str = "data_preprocessing"):
    """Generate a word-level text corpus from a Markov chain and tokenise it, in pure Python on one core.
    The number of documents is chosen from the rate measured on a first slice, to last about ``seconds``."""
    import numpy as np

    nxt, probs = markov_chain(vocab, 0)
    succ = nxt.tolist()
    cum = np.cumsum(probs, axis=1).tolist()
    words = [f"w{i:05d}" for i in range(vocab)]
    rnd = random.Random(0)

    def document(length: int) -> str:
        cur = rnd.randrange(vocab)
        out = [words[cur].capitalize()]
        for i in range(length - 1):
            r = rnd.random()
            row = cum[cur]
            j = 0
            while j < 3 and r > row[j]:
                j += 1
            cur = succ[cur][j]
            out.append(words[cur] + ("." if i % 17 == 16 else ""))
        return " ".join(out)

    table = str.maketrans("", "", ".,;:!?")
    ids = {w: i for i, w in enumerate(words)}

    def tokenise(text: str) -> list[int]:
        return [ids.get(w, 0) for w in text.lower().translate(table).split()]

    with ctx.phases.phase("CPU preprocessing (corpus + tokeniser)", cause) as detail:
        phase_start = probe_t = time.time()
        probe = []
        while time.time() - probe_t < 0.3:
            probe.append(document(256))
        gen_rate = len(probe) / (time.time() - probe_t)
        probe_t = time.time()
        for text in probe:
            tokenise(text)
        tok_rate = len(probe) / (time.time() - probe_t)
        n_docs = max(200, int(seconds / (1 / gen_rate + 1 / tok_rate)))
        gen_limit = 1.25 * seconds * (1 / gen_rate) / (1 / gen_rate + 1 / tok_rate)
        ctx.say(
            f"Preprocessing: {n_docs} documents of 256 words (count chosen from the measured rate, "
            f"{gen_rate:.0f} docs/s generated, {tok_rate:.0f} docs/s tokenised, ~{seconds:.0f} s on one core; "
            f"corpus generation stops after {gen_limit:.0f} s)"
        )
        texts = []
        bar = Progress(n_docs, "Building synthetic corpus", unit=" docs")
        for k in range(n_docs):
            texts.append(document(256))
            if k % 64 == 63:
                bar.update(64)
                if time.time() - phase_start > gen_limit:
                    break
        bar.update(len(texts) % 64)
        bar.close()
        if len(texts) < n_docs:
            ctx.say(f"Corpus generation stopped at {len(texts)} documents: its time limit was reached")
            n_docs = len(texts)
        tokens: list[int] = []
        bar = Progress(n_docs, "Running tokenizer on dataset", unit=" examples")
        for k, text in enumerate(texts):
            tokens.extend(tokenise(text))
            if k % 64 == 63:
                bar.update(64)
        bar.update(n_docs % 64)
        bar.close()
        block = seq + 1
        n_blocks = len(tokens) // block
        arr = np.asarray(tokens[: n_blocks * block], dtype=np.int64).reshape(n_blocks, block)
        ctx.say(f"Tokenised {len(tokens):,} tokens into {n_blocks} blocks of {block}")
        detail.update(documents=n_docs, tokens=len(tokens))
    return arr


def job_preprocessing(ctx: Ctx) -> None:
    ctx.log = setup_logging("__main__", "%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    job_start = PROCESS_START
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        s = lm_sizes(ctx.cpu)
        model = make_lm(s["vocab"], s["d"], s["layers"], s["heads"], s["ff"]).to(device)
    ctx.say(f"Model on {device}: {count_params(model):,} parameters")
    total = ctx.until - job_start
    blocks = preprocess_corpus(ctx, 0.55 * total, s["vocab"], s["seq"])
    data = torch.as_tensor(blocks, device=device)
    ctx.say(f"Training for up to {ctx.left():.1f} s (max_time)")
    train_lm(ctx, torch, device, model, data, ctx.until, save_every_s=None)


def job_prep_then_checkpoint(ctx: Ctx) -> None:
    ctx.log = setup_logging("lm", "%(asctime)s %(levelname)-8s %(name)s | %(message)s")
    total = ctx.until - PROCESS_START
    s = lm_sizes(ctx.cpu)
    ctx.say("Preparing the dataset before building the model")
    blocks = preprocess_corpus(ctx, 0.3 * total, s["vocab"], s["seq"])
    with ctx.phases.phase("startup (import torch, CUDA init, model)"):
        torch, device = torch_setup(ctx)
        model = make_lm(s["vocab"], s["d"], s["layers"], s["heads"], s["ff"]).to(device)
        data = torch.as_tensor(blocks, device=device)
    ctx.say(f"Model on {device}: {count_params(model):,} parameters; training for up to {ctx.left():.1f} s (max_time)")
    train_lm(ctx, torch, device, model, data, ctx.until, save_every_s=1.2 if ctx.cpu else 5.0)


def job_tiny_batch(ctx: Ctx) -> None:
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        model = make_resnet(10, small=device.type == "cpu").to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        images = GpuImages(torch, device, 10, 64)
    print(f"batch_size = 2, image size 64x64, {count_params(model):,} parameters; loss.item() every step", flush=True)
    steps = resnet_train_gpu_data(
        ctx,
        torch,
        device,
        model,
        opt,
        images,
        2,
        ctx.until,
        log_every=2.0,
        item_every_step=True,
        phase_cause="improper_batch_size",
    )
    if device.type == "cuda":
        print(
            f"max memory allocated: {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB of "
            f"{torch.cuda.get_device_properties(0).total_memory / 2**20:.0f} MiB",
            flush=True,
        )
    print(f"finished {steps} steps", flush=True)


def _metrics(logits, labels, classes: int) -> dict[str, float]:
    """Evaluation metrics computed on the CPU, partly in plain Python loops."""
    import numpy as np

    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    pred = p.argmax(axis=1)
    top5 = np.argsort(-p, axis=1)[:, :5]
    confusion = [[0] * classes for _ in range(classes)]
    for t, q in zip(labels.tolist(), pred.tolist()):
        confusion[t][q] += 1
    f1s = []
    for c in range(classes):
        tp = confusion[c][c]
        fp = sum(confusion[r][c] for r in range(classes)) - tp
        fn = sum(confusion[c]) - tp
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0.0)
    bins = [[0, 0.0, 0.0] for _ in range(15)]
    for conf, ok in zip(p.max(axis=1).tolist(), (pred == labels).tolist()):
        b = bins[min(14, int(conf * 15))]
        b[0] += 1
        b[1] += conf
        b[2] += ok
    ece = sum(abs(b[1] - b[2]) for b in bins if b[0]) / len(labels)
    aucs = []
    for c in range(classes):
        pos = labels == c
        if pos.all() or not pos.any():
            continue
        order = np.argsort(p[:, c])
        ranks = np.empty(len(order))
        ranks[order] = np.arange(1, len(order) + 1)
        n1, n0 = pos.sum(), (~pos).sum()
        aucs.append((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))
    return {
        "accuracy": float((pred == labels).mean()),
        "top5": float((top5 == labels[:, None]).any(axis=1).mean()),
        "macro_f1": float(np.mean(f1s)),
        "ece": float(ece),
        "macro_auroc": float(np.mean(aucs)) if aucs else float("nan"),
    }


def job_evaluation(ctx: Ctx) -> None:
    ctx.log = setup_logging("__main__", "%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        import numpy as np
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, Dataset

        small = device.type == "cpu"
        model = make_resnet(100, small).to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        size, batch = (64, 16) if small else (224, 256)
        images = GpuImages(torch, device, 100, size)

        class Val(DecodedImages, Dataset):
            pass

        val = Val(256 if small else 512, 100, size, size, train=False, seed=7)
        val_loader = DataLoader(val, batch_size=128, shuffle=False, num_workers=0)
    sync = synchronizer(device)
    amp = autocast(device)
    train_s = 1.5 if small else 6.0
    ctx.say(
        f"Training {count_params(model):,} parameters; evaluating on {len(val)} images every ~{train_s:.0f} s "
        f"of training, until max_time ({ctx.left():.1f} s)"
    )
    rounds, eval_cost = 0, 0.0
    while ctx.left() > 0:
        rounds += 1
        resnet_train_gpu_data(
            ctx,
            torch,
            device,
            model,
            opt,
            images,
            batch,
            min(ctx.until, time.time() + train_s),
            phase_name=f"training round {rounds}",
        )
        if ctx.left() < max(0.5 if small else 2.0, 0.8 * eval_cost):
            break
        eval_start = time.time()
        with ctx.phases.phase(f"evaluation {rounds}", "model_evaluation", sync) as detail:
            ctx.say("***** Running Evaluation *****")
            ctx.say(f"  Num examples = {len(val)}")
            ctx.say(f"  Batch size = {val_loader.batch_size}")
            model.eval()
            outs, labels, loss_sum = [], [], 0.0
            with torch.no_grad():
                for x, y in val_loader:
                    x = x.to(device).contiguous(memory_format=torch.channels_last)
                    with amp:
                        logits = model(x).float()
                    loss_sum += F.cross_entropy(logits, y.to(device), reduction="sum").item()
                    outs.append(logits.cpu().numpy())
                    labels.append(y.numpy())
            model.train()
            metrics = _metrics(np.concatenate(outs), np.concatenate(labels), 100)
            metrics = {"eval_loss": loss_sum / len(val), **{f"eval_{k}": v for k, v in metrics.items()}}
            ctx.say("eval metrics: " + ", ".join(f"{k} = {v:.4f}" for k, v in metrics.items()))
            detail.update(metrics)
        eval_cost = time.time() - eval_start
    ctx.say(f"Finished: {rounds} training rounds")


INTERACTIVE_CELLS = [
    "import torch\nprint(torch.__version__, torch.cuda.is_available())",
    "model = make_resnet(100, small=DEVICE.type == 'cpu').to(DEVICE)\n"
    "images = GpuImages(torch, DEVICE, 100, SIZE)\n"
    "x, y = images.batch(64)\nprint(model(x).shape)",
    "data = torch.randn(N_DATA, 3, SIZE, SIZE, device=DEVICE)\n"
    "print(f'{data.numel() * 4 / 2**30:.2f} GiB of data on', data.device)",
    "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
    "for i in range(STEPS):\n"
    "    x, y = images.batch(BATCH)\n"
    "    loss = torch.nn.functional.cross_entropy(model(x), y)\n"
    "    opt.zero_grad(); loss.backward(); opt.step()\n"
    "print('loss', loss.item())",
    "if DEVICE.type == 'cuda':\n"
    "    print(torch.cuda.memory_allocated() / 2**20, 'MiB allocated,', torch.cuda.memory_reserved() / 2**20, 'MiB reserved')\n"
    "print(sum(p.numel() for p in model.parameters()), 'parameters')",
    "for i in range(STEPS // 2):\n"
    "    x, y = images.batch(BATCH)\n"
    "    loss = torch.nn.functional.cross_entropy(model(x), y)\n"
    "    opt.zero_grad(); loss.backward(); opt.step()\n"
    "print('loss', loss.item())",
]


def job_interactive(ctx: Ctx) -> None:
    with ctx.phases.phase("startup (import torch, CUDA init)", since=PROCESS_START):
        torch, device = torch_setup(ctx, announce=False)
    small = device.type == "cpu"
    ns = {
        "make_resnet": make_resnet,
        "GpuImages": GpuImages,
        "DEVICE": device,
        "SIZE": 64 if small else 224,
        "N_DATA": 256 if small else 20000,
        "STEPS": 4 if small else 40,
        "BATCH": 8 if small else 128,
    }
    sync = synchronizer(device)
    pauses = [0.10, 0.20, 0.15, 0.25, 0.10]  # of the time left after the cells, by pause
    cells_left = len(INTERACTIVE_CELLS)
    for n, source in enumerate(INTERACTIVE_CELLS, 1):
        lines = source.split("\n")
        print(f"In [{n}]: {lines[0]}", flush=True)
        for line in lines[1:]:
            print(f"   ...: {line}", flush=True)
        with ctx.phases.phase(f"cell {n}", None, sync):
            try:
                exec(compile(source, f"<cell {n}>", "exec"), ns)
            except Exception:
                traceback.print_exc()
                sys.stderr.flush()
        cells_left -= 1
        if n <= len(pauses):
            share = pauses[n - 1] / sum(pauses[n - 1 :])
            pause = max(0.5, share * (ctx.left() - 1.0 - 1.5 * cells_left))
            with ctx.phases.phase(
                f"pause after cell {n} (session idle, GPU memory held)", "interactive_job", seconds_planned=round(pause, 2)
            ):
                time.sleep(pause)
    print("(session closed)", flush=True)


def job_unreleased(ctx: Ctx) -> None:
    ctx.log = setup_logging("train", "%(asctime)s [%(levelname)s] %(message)s")
    train_save_exit(ctx)


def job_unreleased_long(ctx: Ctx) -> None:
    ctx.log = setup_logging("trainer", "[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    train_save_exit(ctx)


def train_save_exit(ctx: Ctx) -> None:
    """Train the classifier until ``ctx.until``, save the final weights and return (the job's
    ``sleep`` follows in the recorder)."""
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        small = device.type == "cpu"
        model = make_resnet(100, small).to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        size, batch = (64, 16) if small else (224, 256)
        images = GpuImages(torch, device, 100, size)
    ctx.say(f"Training for up to {ctx.left():.1f} s (max_time)")
    steps = resnet_train_gpu_data(ctx, torch, device, model, opt, images, batch, ctx.until)
    path = ctx.scratch / "unreleased-final.pt"
    ctx.say(f"Saving final weights to {path}")
    torch.save(model.state_dict(), path)
    ctx.say(f"Training finished after {steps} steps")


def job_cpu_fallback(ctx: Ctx) -> None:
    with ctx.phases.phase("startup (import torch)", since=PROCESS_START):
        import torch
        import torch.nn.functional as F

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}", flush=True)
        print(f"Using device: {device}", flush=True)
        model = make_resnet(10, small=True).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        images = GpuImages(torch, device, 10, 64)
    step, start, last = 0, time.time(), time.time()
    with ctx.phases.phase(f"training on {device}", None, None, threads=torch.get_num_threads()) as detail:
        while time.time() < ctx.until:
            x, y = images.batch(32)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if time.time() - last >= 2.0:
                last = time.time()
                print(f"step {step} | loss: {loss.item():.4f} | {32 * step / (last - start):.1f} img/s", flush=True)
        detail["steps"] = step
    print(f"finished {step} steps on {device}", flush=True)


def job_pip_then_train(ctx: Ctx) -> None:
    import importlib

    with ctx.phases.phase("python start, import the installed package", since=PROCESS_START):
        mod = importlib.import_module("rec_localtools")
        names = [importlib.import_module(f"rec_localtools.m{i:03d}").NAME for i in range(mod.MODULES)]
    print(f"rec_localtools {mod.__version__} from {Path(mod.__file__).parent}: {len(names)} modules imported", flush=True)
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        small = device.type == "cpu"
        model = make_resnet(100, small).to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        size, batch = (64, 16) if small else (224, 256)
        images = GpuImages(torch, device, 100, size)
    steps = resnet_train_gpu_data(ctx, torch, device, model, opt, images, batch, ctx.until)
    print(f"finished {steps} steps", flush=True)


def job_cuda_oom(ctx: Ctx) -> None:
    import torch.nn.functional as F

    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        if device.type != "cuda":
            raise SystemExit("cuda_oom needs a CUDA device")
        model = make_resnet(100, small=False).to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        images = GpuImages(torch, device, 100, 224)
    batch = 64
    print("Searching for the largest batch size (x8 each try)", flush=True)
    with ctx.phases.phase("batch-size search (until the CUDA out-of-memory error)"):
        _grow_until_oom(torch, F, model, opt, images, batch)


def _grow_until_oom(torch, F, model, opt, images, batch: int) -> None:
    while True:
        print(f"Trying batch size {batch}", flush=True)
        start = time.time()
        x, y = images.batch(batch)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        print(
            f"batch size {batch}: ok in {time.time() - start:.2f} s, loss {loss.item():.4f}, "
            f"max memory allocated {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB",
            flush=True,
        )
        del x, y, loss
        batch *= 8


# ---- the jobs of recording _c ---------------------------------------------------------------


def remote_sizes(cpu: bool) -> dict[str, int]:
    """Images served by the recorder's data server: side, images a shard, batch, classes, training side."""
    if cpu:
        return {"size": 32, "shard": 256, "batch": 32, "classes": 64, "out": 64}
    return {"size": 112, "shard": 2048, "batch": 256, "classes": 64, "out": 224}


def shard_images(k: int, sizes: dict[str, int]) -> bytes:
    """Shard ``k``: ``shard`` uint8 CHW images, image i of class i % classes (prototype plus noise)."""
    import numpy as np

    n, size, classes = sizes["shard"], sizes["size"], sizes["classes"]
    protos = _protos_uint8(classes, size, 0)
    noise = np.random.default_rng(k).integers(-40, 41, size=(n, size, size, 3), dtype=np.int16)
    x = np.clip(protos[np.arange(n) % classes].astype(np.int16) + noise, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)).tobytes()


def gpu_normalise(torch, device, images, out: int):
    """uint8 NCHW images on the device -> bilinear resize to out x out, ImageNet normalisation, channels_last."""
    import torch.nn.functional as F

    mean = torch.tensor(DecodedImages.MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(DecodedImages.STD, device=device).view(1, 3, 1, 1)
    x = F.interpolate(images.float() / 255, size=(out, out), mode="bilinear", align_corners=False)
    return ((x - mean) / std).contiguous(memory_format=torch.channels_last)


def job_healthy_long(ctx: Ctx) -> None:
    ctx.log = setup_logging("lm", "%(asctime)s %(levelname)-8s %(name)s | %(message)s")
    with ctx.phases.phase("startup (import torch, CUDA init, model, data)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        s = lm_sizes(ctx.cpu)
        model = make_lm(s["vocab"], s["d"], s["layers"], s["heads"], s["ff"]).to(device)
        data = gpu_token_sequences(torch, device, s["vocab"], 512 if ctx.cpu else 4096, s["seq"] + 1)
    ctx.say(f"Model: {s['layers']}-layer Transformer LM, d_model {s['d']}, {count_params(model):,} parameters")
    ctx.say(f"Training for up to {ctx.left():.1f} s (max_time), no checkpoints")
    train_lm(ctx, torch, device, model, data, ctx.until, save_every_s=None)


def job_remote_data_read(ctx: Ctx) -> None:
    ctx.log = setup_logging("remote_dataset", "%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        import torch.nn.functional as F

        r = remote_sizes(ctx.cpu)
        model = make_resnet(r["classes"], device.type == "cpu").to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        n, batch = r["shard"], r["batch"]
        labels = torch.arange(n, device=device) % r["classes"]
    base = os.environ["REC_DATA_URL"]
    ctx.say(
        f"Streaming training shards from {base}/train/ ({n} images of {r['size']}x{r['size']} uint8 a shard, "
        f"read when the previous one is used up, no prefetch); batch size {batch}, resized to "
        f"{r['out']}x{r['out']} on {device.type}"
    )
    sync = synchronizer(device)
    amp = autocast(device)
    k = steps = 0
    read_s = train_s = 0.0
    while ctx.left() > 0:
        url = f"{base}/train/shard-{k:05d}.bin"
        with ctx.phases.phase(f"read shard-{k:05d} over HTTP", "remote_data_read", sync, url=url) as detail:
            t = time.time()
            with urllib.request.urlopen(url, timeout=60) as resp:
                body = bytearray(resp.read())
            took = time.time() - t
            detail["bytes"] = len(body)
        read_s += took
        ctx.say(f"GET {url}: {len(body) / 1e6:.1f} MB in {took:.2f} s ({len(body) / 1e6 / took:.1f} MB/s)")
        if ctx.left() <= 0:
            break
        t = time.time()
        with ctx.phases.phase(f"train on shard-{k:05d}", None, sync) as detail:
            shard = torch.frombuffer(body, dtype=torch.uint8).view(n, 3, r["size"], r["size"]).to(device)
            order = torch.randperm(n, device=device)
            for b in range(n // batch):
                idx = order[b * batch : (b + 1) * batch]
                x = gpu_normalise(torch, device, shard[idx], r["out"])
                with amp:
                    loss = F.cross_entropy(model(x), labels[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                steps += 1
            detail["steps"] = n // batch
        train_s += time.time() - t
        ctx.say(f"shard {k} done: step {steps}, loss {loss.item():.4f}")
        k += 1
    ctx.say(f"Finished: {k} shards read ({read_s:.1f} s reading), {steps} steps ({train_s:.1f} s training)")


def job_external_data_usage(ctx: Ctx) -> None:
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        import numpy as np
        import torch.nn.functional as F

        r = remote_sizes(ctx.cpu)
        model = make_resnet(r["classes"], device.type == "cpu").to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        path = Path(os.environ["REC_DATASET"])
        images = np.load(path, mmap_mode="r")
    print(
        f"Loaded {path.name}: shape {images.shape}, {images.dtype}, {path.stat().st_size / 1e9:.2f} GB "
        f"(memory-mapped); batch size {r['batch']}, resized to {r['out']}x{r['out']} on {device.type}",
        flush=True,
    )
    sync = synchronizer(device)
    amp = autocast(device)
    rng = np.random.default_rng(0)
    batch, step, start, last = r["batch"], 0, time.time(), time.time()
    with ctx.phases.phase("training", None, sync) as detail:
        while time.time() < ctx.until:
            idx = np.sort(rng.choice(len(images), batch, replace=False))
            x = gpu_normalise(torch, device, torch.from_numpy(images[idx]).to(device), r["out"])
            y = torch.from_numpy(idx % r["classes"]).to(device)
            with amp:
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if time.time() - last >= 2.0:
                last = time.time()
                print(f"step {step} | loss: {loss.item():.4f} | {batch * step / (last - start):.1f} img/s", flush=True)
        detail["steps"] = step
    print(f"finished {step} steps", flush=True)


def job_host_gpu_transfer(ctx: Ctx) -> None:
    with ctx.phases.phase("startup (import torch, CUDA init, model, host batches)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        import torch.nn.functional as F

        small = device.type == "cpu"
        model = make_resnet(100, small).to(device).to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        batch, size = (16, 64) if small else (512, 224)
        gen = torch.Generator().manual_seed(0)
        protos = F.interpolate(torch.rand(100, 3, 8, 8, generator=gen), size=(size, size), mode="bilinear")
        host = []
        for _ in range(3):
            y = torch.randint(0, 100, (batch,), generator=gen)
            x = (protos[y] + 0.25 * torch.randn(batch, 3, size, size, generator=gen) - 0.5) / 0.25
            host.append((x, y))
    x0 = host[0][0]
    print(
        f"{len(host)} host batches of {tuple(x0.shape)} {str(x0.dtype).replace('torch.', '')}, "
        f"{x0.numel() * x0.element_size() / 1e6:.0f} MB each, pinned = {x0.is_pinned()}; every step copies one "
        f"with .to({device.type}, non_blocking=False)",
        flush=True,
    )
    sync = synchronizer(device)
    amp = autocast(device)
    copies = []
    step, start, last, copy_s = 0, time.time(), time.time(), 0.0
    while time.time() < ctx.until:
        xh, yh = host[step % len(host)]
        if sync:
            sync()
        t1 = time.time()
        x, y = xh.to(device, non_blocking=False), yh.to(device, non_blocking=False)
        if sync:
            sync()
        t2 = time.time()
        copies.append((t1, t2))
        copy_s += t2 - t1
        with amp:
            loss = F.cross_entropy(model(x.contiguous(memory_format=torch.channels_last)), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if time.time() - last >= 2.0:
            last = time.time()
            gb = x0.numel() * x0.element_size() * step / 1e9
            print(
                f"step {step}: loss {loss.item():.4f}, copy {copy_s / step * 1000:.1f} ms a step "
                f"({gb / copy_s:.2f} GB/s), {step / (last - start):.2f} steps/s",
                flush=True,
            )
    if sync:
        sync()
    for a, b in copies:
        ctx.phases.add("host-to-GPU copy (pageable, blocking)", a, b, "inefficient_host_gpu_transfer")
    ctx.phases.add("training loop", start, time.time(), None, steps=step)
    print(f"Done: {step} steps in {time.time() - start:.1f} s, {copy_s:.1f} s of it copying", flush=True)


def job_cuda_visible_empty(ctx: Ctx) -> None:
    ctx.log = setup_logging("__main__", "%(asctime)s [%(levelname)s] %(message)s")
    with ctx.phases.phase("startup (import torch)", since=PROCESS_START):
        import torch

    ctx.say(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}")
    ctx.say(
        f"torch {torch.__version__} (CUDA {torch.version.cuda}): torch.cuda.is_available() = "
        f"{torch.cuda.is_available()}, torch.cuda.device_count() = {torch.cuda.device_count()}"
    )
    device = torch.device("cuda")
    try:
        torch.zeros(1, device=device)
    except (RuntimeError, AssertionError) as exc:
        ctx.log.warning("CUDA unusable (%s: %s); falling back to the CPU", type(exc).__name__, exc)
        device = torch.device("cpu")
    with ctx.phases.phase(f"model and data on {device.type}"):
        model = make_lm(4096, 256, 4, 4, 1024).to(device)
        data = gpu_token_sequences(torch, device, 4096, 1024, 129)
    ctx.say(f"Training a 4-layer LM ({count_params(model):,} parameters) on {device} with {torch.get_num_threads()} threads")
    train_lm(ctx, torch, device, model, data, ctx.until, save_every_s=None)


def job_mixture(ctx: Ctx) -> None:
    ctx.log = setup_logging("train_lm", "%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    total = ctx.until - PROCESS_START
    with ctx.phases.phase("startup (import torch, CUDA init, model)", since=PROCESS_START):
        torch, device = torch_setup(ctx)
        s = lm_sizes(ctx.cpu)
        model = make_lm(s["vocab"], s["d"], s["layers"], s["heads"], s["ff"]).to(device)
    ctx.say(f"Model on {device}: {count_params(model):,} parameters; preparing the dataset")
    blocks = preprocess_corpus(ctx, 0.33 * total, s["vocab"], s["seq"])
    data = torch.as_tensor(blocks, device=device)
    ctx.say(f"Training for up to {ctx.left():.1f} s (max_time)")
    train_lm(ctx, torch, device, model, data, ctx.until, save_every_s=(0.8, 1.6, 2.4) if ctx.cpu else (3.0, 6.0, 9.0))


def fetch(url: str, dest: str) -> int:
    """Download ``url`` to ``dest`` with urllib and a progress bar (where curl and wget are missing)."""
    print(f"Downloading {url} to {dest}", flush=True)
    with urllib.request.urlopen(url, timeout=60) as resp, open(dest, "wb") as out:
        total = int(resp.headers.get("Content-Length", 0))
        bar = Progress(-(-total // 2**20), Path(dest).name, unit="MiB")
        while chunk := resp.read(2**20):
            out.write(chunk)
            bar.update(1)
        bar.close()
    return 0


PROGRAMS = {
    "healthy": job_healthy,
    "loader_starved": job_loader_starved,
    "checkpointing": job_checkpointing,
    "preprocessing": job_preprocessing,
    "tiny_batch": job_tiny_batch,
    "evaluation": job_evaluation,
    "interactive": job_interactive,
    "unreleased": job_unreleased,
    "cpu_fallback": job_cpu_fallback,
    "prep_then_checkpoint": job_prep_then_checkpoint,
    "pip_then_train": job_pip_then_train,
    "cuda_oom": job_cuda_oom,
    "healthy_long": job_healthy_long,
    "remote_data_read": job_remote_data_read,
    "external_data_usage": job_external_data_usage,
    "host_gpu_transfer": job_host_gpu_transfer,
    "unreleased_long": job_unreleased_long,
    "cuda_visible_empty": job_cuda_visible_empty,
    "mixture": job_mixture,
}


def run_program(args: argparse.Namespace) -> int:
    ctx = Ctx(args.scenario, Phases(Path(args.phases) if args.phases else None), args.until, Path(args.scratch), args.cpu)
    PROGRAMS[args.scenario](ctx)
    return 0


def probe() -> dict[str, object]:
    """What the job programs will run on (printed as JSON by ``--probe``)."""
    info: dict[str, object] = {"python": sys.version.split()[0], "executable": sys.executable}
    from importlib import metadata

    for module in ("numpy", "tqdm", "setuptools", "pip", "wheel"):
        try:
            info[module] = metadata.version(module)
        except metadata.PackageNotFoundError:
            info[module] = None
    import torch

    info.update(torch=torch.__version__, torch_cuda=torch.version.cuda, cuda_available=torch.cuda.is_available())
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(
            device_name=props.name,
            device_total_memory=props.total_memory,
            capability=f"{props.major}.{props.minor}",
            device_count=torch.cuda.device_count(),
            device_uuid=str(getattr(props, "uuid", "")),
            cudnn=torch.backends.cudnn.version(),
        )
    return info


# --------------------------------------------------------------------------------------
# The recorder (parent process)
# --------------------------------------------------------------------------------------


class Collector(threading.Thread):
    """Copies a child's output into the job's log; with ``stamp``, each line gets its arrival
    time in front (RFC 3339, UTC, microseconds), as a log collector does."""

    def __init__(self, stream, log, stamp: bool):
        super().__init__(daemon=True)
        self.stream, self.log, self.stamp, self.at_start = stream, log, stamp, True

    def run(self) -> None:
        fd = self.stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            if self.stamp:
                now = iso(time.time()).encode() + b" "
                out = bytearray()
                for k, part in enumerate(chunk.split(b"\n")):
                    if k:
                        out += b"\n"
                        self.at_start = True
                    if part:
                        if self.at_start:
                            out += now
                            self.at_start = False
                        out += part
                chunk = bytes(out)
            self.log.write(chunk)
            self.log.flush()


def run_step(argv: list[str], env: dict[str, str], log, stamp: bool, deadline: float, cwd: Path) -> dict[str, object]:
    """Run one step of a job, its output into ``log``; killed (its process group, by id) past ``deadline``."""
    start = time.time()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
    except OSError as exc:
        return {"argv": argv, "start": start, "end": time.time(), "returncode": None, "error": str(exc)}
    collector = Collector(proc.stdout, log, stamp)
    collector.start()
    killed = False
    try:
        proc.wait(timeout=max(1.0, deadline - time.time()))
    except subprocess.TimeoutExpired:
        killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    end = time.time()
    collector.join(timeout=5)
    return {"argv": argv, "start": start, "end": end, "returncode": proc.returncode, "killed_by_recorder": killed}


class Sampler:
    """A background process writing to a file, stopped by its own id at the end."""

    def __init__(self, name: str, argv: list[str], path: Path, env: dict[str, str], stamp: bool = False):
        self.name, self.argv, self.path = name, argv, path
        self.handle = path.open("wb")
        self.err = path.with_suffix(path.suffix + ".stderr").open("wb")
        self.started = time.time()
        if stamp:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, env=env)
            self.collector = Collector(self.proc.stdout, self.handle, True)
            self.collector.start()
        else:
            self.proc = subprocess.Popen(argv, stdout=self.handle, stderr=self.err, env=env)
            self.collector = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> dict[str, object]:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.collector:
            self.collector.join(timeout=5)
        self.handle.close()
        self.err.close()
        err = self.path.with_suffix(self.path.suffix + ".stderr")
        if err.exists() and err.stat().st_size == 0:
            err.unlink()
        return {
            "name": self.name,
            "argv": self.argv,
            "file": self.path.name,
            "started": self.started,
            "stopped": time.time(),
            "returncode": self.proc.returncode,
        }


class ExporterScraper(threading.Thread):
    """Scrapes an already running dcgm-exporter (localhost:9400) once a second, a file a scrape."""

    def __init__(self, folder: Path, url: str):
        super().__init__(daemon=True)
        self.folder, self.url, self.stopping, self.count = folder, url, threading.Event(), 0

    def run(self) -> None:
        while not self.stopping.is_set():
            t = time.time()
            with contextlib.suppress(Exception):
                body = urllib.request.urlopen(self.url, timeout=2).read()
                path = self.folder / f"dcgm_exporter--{int(t * 1000)}.prom"
                path.write_bytes(body)
                os.utime(path, (t, t))
                self.count += 1
            self.stopping.wait(max(0.0, 1.0 - (time.time() - t)))


class DataServer:
    """The recorder's local HTTP data server on 127.0.0.1, standing in for remote storage: training
    shards (``/train/shard-NNNNN.bin``) and a dataset file (``/datasets/images-<side>px-<n>.npy``),
    each sent at a limited rate after a wait for the first byte. Its request log, in http.server's
    format, goes to ``access.log``, and each request's times to ``requests.jsonl``."""

    def __init__(self, folder: Path, cpu: bool):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.sizes = remote_sizes(cpu)
        self.shards = [shard_images(k, self.sizes) for k in range(4)]
        mb = 1e6
        self.shard_rate = (5 * mb, 10 * mb) if cpu else (150 * mb, 300 * mb)
        self.download_rate = 20 * mb if cpu else 100 * mb
        self.lock = threading.Lock()
        folder.mkdir(parents=True, exist_ok=True)
        self.access = (folder / "access.log").open("a", encoding="utf-8")
        self.requests = (folder / "requests.jsonl").open("a", encoding="utf-8")
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.serve(self)

            def log_message(self, format: str, *args: object) -> None:
                with owner.lock:
                    owner.access.write(f"{self.address_string()} - - [{self.log_date_time_string()}] {format % args}\n")
                    owner.access.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def image_bytes(self) -> int:
        return 3 * self.sizes["size"] ** 2

    def describe(self) -> dict[str, object]:
        return {
            "url": self.url,
            "shard_images": self.sizes["shard"],
            "image": f"{self.sizes['size']}x{self.sizes['size']} uint8, 3 channels, class = index % {self.sizes['classes']}",
            "shard_rate_bytes_per_s": list(self.shard_rate),
            "shard_first_byte_s": "0.03, plus 0.8-1.5 for about one shard in ten",
            "download_rate_bytes_per_s": self.download_rate,
            "access_log": "server/access.log",
            "requests": "server/requests.jsonl",
        }

    def serve(self, handler) -> None:
        start = time.time()
        shard = re.fullmatch(r"/train/shard-(\d{5})\.bin", handler.path)
        dataset = re.fullmatch(r"/datasets/images-(\d+)px-(\d+)\.npy", handler.path)
        if shard:
            k = int(shard[1])
            rng = random.Random(k)
            rate = rng.uniform(*self.shard_rate)
            wait = 0.03 + (rng.uniform(0.8, 1.5) if rng.random() < 0.1 else 0.0)
            head, block, total = b"", self.shards[k % len(self.shards)], len(self.shards[0])
        elif dataset and int(dataset[1]) == self.sizes["size"]:
            import io

            import numpy as np

            n = int(dataset[2])
            buf = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                buf, {"descr": "|u1", "fortran_order": False, "shape": (n, 3, self.sizes["size"], self.sizes["size"])}
            )
            rate, wait = self.download_rate, 0.05
            head, block, total = buf.getvalue(), self.shards[0], n * self.image_bytes()
        else:
            handler.send_error(404)
            return
        time.sleep(wait)
        sent, error = 0, None
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/octet-stream")
            handler.send_header("Content-Length", str(len(head) + total))
            handler.end_headers()
            first = time.time()
            handler.wfile.write(head)
            view, size = memoryview(block), max(4096, min(2**18, int(rate / 100)))
            while sent < total:
                piece = view[sent % len(block) :][: min(size, total - sent)]
                ahead = first + (sent + len(piece)) / rate - time.time()  # a piece leaves when the rate allows it
                if ahead > 0:
                    time.sleep(ahead)
                handler.wfile.write(piece)
                sent += len(piece)
        except OSError as exc:
            error = repr(exc)
        row = {"path": handler.path, "start": start, "end": time.time(), "bytes": len(head) + sent, "rate": rate, "wait": wait}
        if error:
            row["error"] = error
        with self.lock:
            self.requests.write(json.dumps(row) + "\n")
            self.requests.flush()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.access.close()
        self.requests.close()


def capture(
    argv: list[str], timeout: float = 20, env: dict[str, str] | None = None, stdout_only: bool = False
) -> tuple[int | None, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        return done.returncode, done.stdout if stdout_only else done.stdout + done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)


def write_local_package(root: Path, modules: int = 200) -> Path:
    pkg = root / "rec_localtools_src"
    if pkg.exists():
        shutil.rmtree(pkg)
    (pkg / "rec_localtools").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "rec-localtools"
        version = "0.1.0"
        description = "A local package written by corpora/gpu_recordings/record.py to be pip-installed"

        [tool.setuptools]
        packages = ["rec_localtools"]
        """)
    )
    (pkg / "rec_localtools" / "__init__.py").write_text(f'__version__ = "0.1.0"\nMODULES = {modules}\n')
    for i in range(modules):
        funcs = "\n\n".join(
            f"def f{j}(x, y=1):\n    total = 0\n    for k in range(x):\n        total += (k * {j} + y) % {i + 7}\n    return total"
            for j in range(40)
        )
        (pkg / "rec_localtools" / f"m{i:03d}.py").write_text(f'NAME = "m{i:03d}"\n\n{funcs}\n')
    return pkg


def parse_smi(path: Path) -> list[tuple[float, int, float, float, float]]:
    """(ts, index, util %, memory used MiB, memory total MiB) of an nvidia-smi CSV written with TZ=UTC."""
    rows = []
    if not path.exists():
        return rows
    with path.open(encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle, skipinitialspace=True)
        header = next(reader, None)
        if not header:
            return rows
        names = [cell.split(" [")[0].strip() for cell in header]
        col = {n: i for i, n in enumerate(names)}
        for cells in reader:
            if len(cells) != len(names) or cells == header:
                continue
            try:
                ts = datetime.strptime(cells[col["timestamp"]].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
                idx = int(cells[col["index"]]) if "index" in col else 0
                util, used, total = (_num(cells, col.get(n)) for n in ("utilization.gpu", "memory.used", "memory.total"))
                rows.append((ts, idx, util, used, total))
            except (ValueError, KeyError):
                continue
    return rows


def _num(cells: list[str], index: int | None) -> float:
    try:
        return float(cells[index].strip().split(" ")[0]) if index is not None else math.nan
    except ValueError:
        return math.nan


def stats(rows, index: int, intervals: list[tuple[float, float]]) -> dict[str, object]:
    sel = [r for r in rows if r[1] == index and any(a <= r[0] <= b for a, b in intervals)]
    if not sel:
        return {"readings": 0}
    util = [r[2] for r in sel if not math.isnan(r[2])]
    mem = [r[3] for r in sel if not math.isnan(r[3])]
    return {
        "readings": len(sel),
        "util_mean_pct": round(sum(util) / len(util), 1) if util else None,
        "util_max_pct": max(util) if util else None,
        "mem_used_mean_mib": round(sum(mem) / len(mem), 1) if mem else None,
        "mem_used_peak_mib": max(mem) if mem else None,
    }


def _can_build_wheels(probe: dict) -> bool:
    """pip and setuptools present, and setuptools builds wheels itself (70.1 on) or wheel is installed."""
    if not probe.get("pip") or not probe.get("setuptools"):
        return False
    try:
        major, minor = (int(part) for part in str(probe["setuptools"]).split(".")[:2])
    except ValueError:
        return bool(probe.get("wheel"))
    return (major, minor) >= (70, 1) or bool(probe.get("wheel"))


def sanitize(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name.split(".")[0]).strip("-").replace("--", "-")
    return name or "gpunode"


def record(args: argparse.Namespace) -> int:
    t0 = time.time()
    os.environ["TZ"] = "UTC"  # nvidia-smi and logging print local time; make it UTC for every child
    time.tzset()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tree = out / "recording"
    if tree.exists():
        shutil.rmtree(tree)
    for sub in ("logs", "signals", "phases", "failures", "machine"):
        (tree / sub).mkdir(parents=True)
    scratch = Path(tempfile.mkdtemp(prefix="gpu-recording-", dir=args.scratch))
    budget_end = t0 + args.budget
    scale = args.duration_scale if args.duration_scale else (0.3 if args.cpu else 1.0)
    only = [name for name in args.only.split(",") if name]
    selected = [j for j in JOBS if j.name in only] if only else [j for j in JOBS if j.default]
    env = dict(os.environ, TZ="UTC", PYTHONUNBUFFERED="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    say = lambda msg: print(f"[record {time.time() - t0:6.1f}s] {msg}", flush=True)

    # -- the machine, before any sampling
    machine: dict[str, object] = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "recorder_python": sys.version.split()[0],
        "tz_for_children": "UTC",
        "record_py_sha256": hashlib.sha256(HERE.read_bytes()).hexdigest(),
        "started": iso(t0),
        "mode": "cpu dry run" if args.cpu else "gpu",
    }
    rc, text = capture([sys.executable, str(HERE), "--probe"], timeout=120, env=env, stdout_only=True)
    try:
        machine["probe"] = json.loads(text.strip().splitlines()[-1])
    except Exception:
        machine["probe"] = {"error": text[-2000:]}
    smi = shutil.which("nvidia-smi")
    node = sanitize(args.node or socket.gethostname())
    gpu_index = 0
    if smi and not args.cpu:
        for argv, name in (([smi, "-q"], "nvidia-smi-q.txt"), ([smi], "nvidia-smi.txt"), ([smi, "-L"], "nvidia-smi-L.txt")):
            _, text = capture(argv, env=env)
            (tree / "machine" / name).write_text(text)
        _, text = capture([smi, "--query-gpu=index,uuid,pci.bus_id,name,memory.total", "--format=csv,noheader"], env=env)
        gpus = [[c.strip() for c in line.split(",")] for line in text.strip().splitlines() if "," in line]
        machine["gpus"] = gpus
        want = str(machine["probe"].get("device_uuid", "")) if isinstance(machine["probe"], dict) else ""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        for g in gpus:
            if (want and want.lower() in g[1].lower()) or (visible and visible in (g[0], g[1])):
                gpu_index = int(g[0])
                break
        else:
            gpu_index = int(gpus[0][0]) if gpus and gpus[0][0].isdigit() else 0
    machine.update(node=node, gpu_index=gpu_index)
    machine["download_tools"] = {
        tool: capture([tool, "--version"], timeout=10)[1].strip().splitlines()[0] if shutil.which(tool) else None
        for tool in ("curl", "wget")
    }
    server = None
    if any(j.data_server for j in selected):
        server = DataServer(tree / "server", args.cpu)
        say(f"data server on {server.url}")

    # -- samplers
    samplers: list[Sampler] = []
    scraper = None
    csv_paths: list[Path] = []
    signals: dict[str, object] = {"node": node, "gpu_index": gpu_index}

    def start_smi(query: str) -> Sampler:
        """The main sampler; a restart (it died) writes a new part beside the first."""
        part = f"-part{len(csv_paths) + 1}" if csv_paths else ""
        path = tree / "signals" / f"{node}--nvidia-smi-lms{SAMPLE_MS}{part}.csv"
        csv_paths.append(path)
        return Sampler("nvidia-smi", [smi, f"--query-gpu={query}", "--format=csv", "-lms", str(SAMPLE_MS)], path, env)

    smi_sampler = None
    if smi and not args.cpu:
        smi_sampler = start_smi(QUERY)
        time.sleep(1.0)
        if not smi_sampler.alive():  # a field this driver does not know: the fields failclass needs
            samplers.append(smi_sampler)
            smi_sampler = start_smi("timestamp,index,pci.bus_id,uuid,utilization.gpu,memory.total,memory.used,memory.free")
        samplers.append(smi_sampler)
        samplers.append(
            Sampler(
                "nvidia-smi compute apps",
                [smi, "--query-compute-apps=timestamp,gpu_uuid,pid,process_name,used_memory", "--format=csv", "-lms", "1000"],
                tree / "signals" / "compute-apps--nvidia-smi-lms1000.csv",
                env,
            )
        )
        signals.update(query=QUERY, interval_ms=SAMPLE_MS)
    dcgmi = shutil.which("dcgmi")
    signals["dcgmi"] = dcgmi
    if dcgmi and not args.cpu:
        rc, text = capture([dcgmi, "discovery", "-l"], timeout=15, env=env)
        (tree / "machine" / "dcgmi-discovery.txt").write_text(text)
        if rc == 0:
            for fields in ("203,204,252,1001,1002,1004,1005", "203,204,252"):
                s = Sampler(
                    "dcgmi dmon",
                    [dcgmi, "dmon", "-e", fields, "-d", "500"],
                    tree / "signals" / f"{node}--dcgmi-dmon-{fields.replace(',', '-')}.txt",
                    env,
                    stamp=True,
                )
                time.sleep(3)
                if s.alive():
                    samplers.append(s)
                    break
                s.stop()
    exporter = shutil.which("dcgm-exporter")
    signals["dcgm_exporter"] = exporter
    if not args.cpu:
        with contextlib.suppress(Exception):
            urllib.request.urlopen("http://127.0.0.1:9400/metrics", timeout=2).read()
            (tree / "signals" / "dcgm_exporter").mkdir()
            scraper = ExporterScraper(tree / "signals" / "dcgm_exporter", "http://127.0.0.1:9400/metrics")
            scraper.start()
            signals["dcgm_exporter_scrapes"] = "signals/dcgm_exporter/"
    say(
        f"node {node}, GPU index {gpu_index}, samplers: {', '.join(s.name for s in samplers) or 'none (dry run)'}"
        f"{', dcgm-exporter scrapes' if scraper else ''}"
    )
    time.sleep(BASELINE_S if not args.cpu else 0.5)
    session_start = time.time() - (BASELINE_S if not args.cpu else 0.5)

    # -- the jobs
    cuda = bool(isinstance(machine["probe"], dict) and machine["probe"].get("cuda_available")) and not args.cpu
    pip_ok = _can_build_wheels(machine["probe"] if isinstance(machine["probe"], dict) else {})
    records = []
    for number, spec in enumerate(selected, 1):
        job = f"rec{number:02d}-{spec.name}"
        later = selected[number - 1 :]
        left = budget_end - RESERVE_S - time.time()
        need = sum(j.seconds * scale + GAP_S + JOB_OVERHEAD_S for j in later)
        if smi_sampler is not None and not smi_sampler.alive():
            say("nvidia-smi sampler stopped; starting it again")
            smi_sampler = start_smi(QUERY)
            samplers.append(smi_sampler)
        fit = min(1.0, left / need) if need > 0 else 1.0
        seconds = spec.seconds * scale * fit
        entry: dict[str, object] = {
            "job": job,
            "scenario": spec.name,
            "kind": spec.kind,
            "description": spec.description,
            "causes": spec.causes,
            "notes": spec.notes,
        }
        skip = None
        if spec.needs_cuda and not cuda:
            skip = "needs CUDA"
        elif spec.name == "pip_then_train" and not pip_ok:
            skip = "pip or setuptools missing for this python"
        elif seconds < (4 if args.cpu else 10):
            skip = f"out of time budget ({left:.0f} s left)"
        if skip:
            say(f"{job}: skipped ({skip})")
            entry["skipped"] = skip
            records.append(entry)
            continue
        log_path = tree / "logs" / f"{job}.log"
        phases_path = tree / "phases" / f"{job}.jsonl"
        job_env = dict(env, **spec.env)
        if server is not None:
            job_env["REC_DATA_URL"] = server.url
        stamp = spec.log_style == "collector"
        steps = []
        runner_phases = []
        say(f"{job}: start ({seconds:.0f} s planned)")
        start = time.time()
        until = start + seconds
        hard = min(until + 25.0, budget_end - RESERVE_S + 5)
        program = [
            sys.executable,
            "-u",
            str(HERE),
            "--scenario",
            spec.name,
            "--phases",
            str(phases_path),
            "--scratch",
            str(scratch),
        ] + (["--cpu"] if args.cpu else [])
        with log_path.open("ab") as log:
            if spec.name == "pip_then_train":
                pkg = write_local_package(scratch)
                target = scratch / "site"
                step = run_step(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "install",
                        "--no-index",
                        "--no-build-isolation",
                        "--no-deps",
                        "--target",
                        str(target),
                        str(pkg),
                    ],
                    job_env,
                    log,
                    stamp,
                    hard,
                    scratch,
                )
                steps.append(step)
                runner_phases.append(
                    {
                        "name": "pip install (local package)",
                        "cause": "long_library_installation",
                        "start": step["start"],
                        "end": step["end"],
                        "detail": {"returncode": step["returncode"]},
                    }
                )
                job_env = dict(job_env, PYTHONPATH=str(target))
            elif spec.name == "external_data_usage" and server is not None:
                n = max(server.sizes["shard"], int(0.4 * seconds * server.download_rate / server.image_bytes()))
                name = f"images-{server.sizes['size']}px-{n}.npy"
                url = f"{server.url}/datasets/{name}"
                dest = scratch / "datasets" / name
                dest.parent.mkdir(exist_ok=True)
                if shutil.which("curl"):
                    tool, argv = "curl", ["curl", "--fail", "-o", str(dest), url]
                elif shutil.which("wget"):
                    tool, argv = "wget", ["wget", "--progress=dot:giga", "-O", str(dest), url]
                else:
                    tool, argv = "urllib", [sys.executable, "-u", str(HERE), "--fetch", url, str(dest)]
                step = run_step(argv, job_env, log, stamp, hard, scratch)
                steps.append(step)
                runner_phases.append(
                    {
                        "name": f"download {name} ({tool})",
                        "cause": "external_data_usage",
                        "start": step["start"],
                        "end": step["end"],
                        "detail": {
                            "returncode": step["returncode"],
                            "tool": tool,
                            "url": url,
                            "bytes": dest.stat().st_size if dest.exists() else 0,
                        },
                    }
                )
                job_env = dict(job_env, REC_DATASET=str(dest))
            if steps and steps[-1]["returncode"] != 0:
                pass  # as a job script under `set -e`: a failed install ends the job
            elif spec.tail_sleep_share:
                train_until = start + (1 - spec.tail_sleep_share) * seconds
                steps.append(run_step(program + ["--until", repr(train_until)], job_env, log, stamp, hard, HERE.parent))
                pause = max(1.0, until - time.time())
                step = run_step(["sleep", f"{pause:.1f}"], job_env, log, stamp, hard, HERE.parent)
                steps.append(step)
                runner_phases.append(
                    {
                        "name": "sleep after training (GPU held, no process on it)",
                        "cause": "unreleased_job",
                        "start": step["start"],
                        "end": step["end"],
                        "detail": {},
                    }
                )
            elif spec.name == "cuda_oom":
                steps.append(run_step(program + ["--until", repr(until)], job_env, log, stamp, min(hard, until), HERE.parent))
            else:
                steps.append(run_step(program + ["--until", repr(until)], job_env, log, stamp, hard, HERE.parent))
        end = time.time()
        if spec.env.get("CUDA_VISIBLE_DEVICES") == "":
            runner_phases.append(
                {
                    "name": "whole job (GPU allocated, computing on the CPU)",
                    "cause": "api_misuse",
                    "start": start,
                    "end": end,
                    "detail": {},
                }
            )
        phases = runner_phases[:]
        if phases_path.exists():
            for line in phases_path.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    phases.append(json.loads(line))
        phases.sort(key=lambda p: p["start"])
        for p in phases:
            p["start_iso"], p["end_iso"] = iso(p["start"]), iso(p["end"])
            p["seconds"] = round(p["end"] - p["start"], 4)
        rcs = [s.get("returncode") for s in steps]
        failed = any(rc not in (0,) for rc in rcs)
        entry.update(
            start=start,
            end=end,
            start_iso=iso(start),
            end_iso=iso(end),
            seconds=round(end - start, 3),
            seconds_planned=round(seconds, 1),
            log=f"logs/{job}.log",
            log_timestamps="record.py's collector: arrival time, RFC 3339 UTC, in front of each line"
            if stamp
            else "the program's own logging time stamps (asctime, UTC); lines without one (progress bars, tracebacks) have none",
            gpus=f"{node}:{gpu_index}",
            steps=steps,
            exit_status=rcs[-1] if rcs else None,
            failed=failed,
            planted=[p for p in phases if p.get("cause")],
            phases=phases,
        )
        if spec.name == "cuda_oom":
            entry["failure"] = "CUDA out of memory (torch.OutOfMemoryError), uncaught"
            shutil.copy(log_path, tree / "failures" / "cuda_oom.log")
        say(
            f"{job}: end after {end - start:.1f} s, exit status {entry['exit_status']}"
            f"{', killed by the recorder at its time limit' if any(s.get('killed_by_recorder') for s in steps) else ''}"
        )
        records.append(entry)
        # release the scratch space of checkpoints between jobs
        for ck in scratch.glob("*-checkpoints"):
            shutil.rmtree(ck, ignore_errors=True)
        time.sleep(GAP_S if not args.cpu else 0.3)

    # -- stop sampling
    time.sleep(GAP_S if not args.cpu else 0.0)
    session_end = time.time()
    signals["samplers"] = [s.stop() for s in samplers]
    if scraper:
        scraper.stopping.set()
        scraper.join(timeout=3)
        signals["dcgm_exporter_scrape_count"] = scraper.count
    shutil.rmtree(scratch, ignore_errors=True)
    if server is not None:
        server.stop()

    # -- jobs file, planted.json, summary
    rows = sorted(r for path in csv_paths for r in parse_smi(path))
    signals["nvidia_smi_csv"] = [f"signals/{path.name}" for path in csv_paths if path.exists()]
    ran = [r for r in records if "start" in r]
    with (tree / "jobs.csv").open("w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["job", "user", "cluster", "kind", "gpus", "start", "end", "log"])
        for r in ran:
            w.writerow(
                [r["job"], "recorder", "h200" if cuda else "dryrun", r["kind"], r["gpus"], r["start_iso"], r["end_iso"], r["log"]]
            )
    lines = []
    for r in ran:
        r["observed"] = stats(rows, gpu_index, [(r["start"], r["end"])])
        planted = [(p["start"], p["end"]) for p in r["planted"]]
        r["observed_in_planted_phases"] = stats(rows, gpu_index, planted) if planted else None
        for p in r["phases"]:
            p["observed"] = stats(rows, gpu_index, [(p["start"], p["end"])]) if rows else None
    baseline = stats(rows, gpu_index, [(session_start, session_start + BASELINE_S)])
    planted_doc = {
        "about": "Real PyTorch jobs run one after another on one GPU, each with planted causes of low GPU "
        "utilisation (ids of failclass/data/waste/causes.yaml). Every phase's start and end are time.time() "
        "readings taken around the phase by the process that ran it (after torch.cuda.synchronize() where "
        "GPU work was queued); 'planted' lists the phases with a cause, 'phases' all of them. 'observed' "
        "figures are computed from the nvidia-smi CSV of this recording. See corpora/gpu_recordings/README.md.",
        "machine": machine,
        "signals": dict(
            signals,
            session_start=iso(session_start),
            session_end=iso(session_end),
            baseline_before_first_job=baseline,
            readings=len(rows),
        ),
        **({"data_server": server.describe()} if server is not None else {}),
        "jobs_file": "jobs.csv",
        "progress_bars": progress_kind(),
        "jobs": records,
    }
    (tree / "planted.json").write_text(json.dumps(planted_doc, indent=1, default=str) + "\n")
    fmt = lambda v, spec="": "-" if v is None else format(v, spec)
    lines.append(
        f"recording on {machine.get('probe', {}).get('device_name', 'no GPU') if isinstance(machine.get('probe'), dict) else '?'}"
        f", node {node}, GPU {gpu_index}, {len(rows)} nvidia-smi readings; baseline util "
        f"{fmt(baseline.get('util_mean_pct'))}%, memory {fmt(baseline.get('mem_used_mean_mib'))} MiB"
    )
    lines.append(
        f"{'job':28s} {'causes':48s} {'secs':>6s} {'exit':>4s} {'util%':>6s} {'memMiB':>8s} {'peakMiB':>8s} "
        f"{'util% planted':>13s}"
    )
    for r in records:
        if "start" not in r:
            lines.append(f"{r['job']:28s} skipped: {r['skipped']}")
            continue
        o, p = r["observed"], r["observed_in_planted_phases"] or {}
        lines.append(
            f"{r['job']:28s} {','.join(r['causes']) or '-':48s} {r['seconds']:6.1f} {fmt(r['exit_status']):>4s} "
            f"{fmt(o.get('util_mean_pct')):>6s} {fmt(o.get('mem_used_mean_mib')):>8s} "
            f"{fmt(o.get('mem_used_peak_mib')):>8s} {fmt(p.get('util_mean_pct')):>13s}"
        )
    lines.append(f"wall time {time.time() - t0:.1f} s")
    summary = "\n".join(lines) + "\n"
    (tree / "summary.txt").write_text(summary)

    # -- pack
    tar_path = out / "recording.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(tree, arcname="recording")
    size = tar_path.stat().st_size
    (out / "summary.txt").write_text(summary + f"recording.tar.gz: {size:,} bytes\n")
    if not args.keep_tree:
        shutil.rmtree(tree)
    print(
        summary + f"recording.tar.gz: {size:,} bytes ({size / 2**20:.2f} MiB){'  OVER 16 MiB' if size > 16 * 2**20 else ''}",
        flush=True,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    default_out = str(Path(os.environ["OUT"]) / "rec") if os.environ.get("OUT") else None
    parser.add_argument("--out", default=default_out, help="output folder (default $OUT/rec)")
    parser.add_argument(
        "--cpu", "--dry-run", action="store_true", dest="cpu", help="no nvidia-smi, CPU only, small models, durations x0.3"
    )
    parser.add_argument("--budget", type=float, default=390.0, help="seconds for the whole recording (default 390)")
    parser.add_argument("--duration-scale", type=float, default=None, help="multiply every job's planned seconds")
    parser.add_argument("--only", default="", help="comma-separated job names")
    parser.add_argument("--node", default="", help="node name for the jobs file and the CSV (default: host name)")
    parser.add_argument("--scratch", default=None, help="folder for checkpoints and the pip package (default: temp)")
    parser.add_argument("--keep-tree", action="store_true", help="keep the unpacked recording/ beside the tarball")
    parser.add_argument("--list", action="store_true", help="list the jobs and exit")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", choices=sorted(PROGRAMS), help=argparse.SUPPRESS)
    parser.add_argument("--phases", help=argparse.SUPPRESS)
    parser.add_argument("--until", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--fetch", nargs=2, metavar=("URL", "DEST"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fetch:
        return fetch(*args.fetch)
    if args.probe:
        info = probe()
        print(json.dumps(info))
        return 0
    if args.scenario:
        return run_program(args)
    if args.list:
        for j in JOBS:
            tag = "" if j.default else "  (only with --only)"
            print(f"{j.name:22s} {j.seconds:4.0f} s  {','.join(j.causes) or '-'}{tag}\n    {j.description}")
        return 0
    if not args.out:
        parser.error("--out is required when $OUT is not set")
    unknown = [name for name in args.only.split(",") if name and name not in PROGRAMS]
    if unknown:
        parser.error(f"unknown job(s) {', '.join(unknown)}; --list shows them")
    return record(args)


if __name__ == "__main__":
    sys.exit(main())
