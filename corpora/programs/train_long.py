"""A real, longer PyTorch CPU training job for corpora/run_killed.py: the kind of job a
scheduler kills from outside at any moment (time limit, cancellation, a lost node, an
out-of-memory kill that leaves no message), or that runs to the end printing the noisy but
harmless lines of real jobs.

    python train_long.py --style plain|logging|tqdm|dict [--epochs N] [--seed S] ...

The model is a small recommendation-style classifier: a hashed categorical feature
through a sparse EmbeddingBag (SparseAdam) next to dense features, then an MLP (AdamW);
the embedding table makes a checkpoint tens of MB, so saving one takes real time. Single
process, or under torchrun (gloo, DistributedDataParallel) when WORLD_SIZE is set.
Every phase a job goes through is real and takes real time: start-up (building the data
set, optionally downloading "pretrained" weights from a local HTTP server that first
refuses, or answers 503, and then serves them), training, evaluation, checkpoint saving
(model and optimizer state, fsynced). Options that make real noise:

- ``--config-dump``: prints the argparse Namespace (option names with "error", "fail",
  "oom", "timeout" in them), the distributed timeout and ``torch.__config__.show()``;
- ``--warnings``: provokes real UserWarnings and FutureWarnings from PyTorch (deprecated
  AMP and clip_grad_norm calls on a CPU machine, too many DataLoader workers, the
  lr_scheduler order, an implicit softmax dimension, a broadcasting MSE loss, checkpoint
  without use_reentrant);
- ``--log-warnings``: logging WARNING records that are not failures (no checkpoint to
  resume from, gradient norms clipped, an evaluation that did not improve);
- ``--download {none,refused,503}``: a download that fails, is retried, and succeeds;
- ``--leak {none,snapshots,cache}``: real host-memory growth (a copy of the MLP's weights
  kept every 4 steps, or every batch "decoded" and cached in RAM), for the memory-limited runs;
- ``--handle-sigterm``: a SIGTERM handler that saves a checkpoint and exits, as
  preemption-aware training scripts do.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import http.server
import io
import logging
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

STYLES = ("plain", "logging", "tqdm", "dict")
LOG_FORMATS = {
    "dash": "%(asctime)s - %(name)s - %(levelname)s - %(message)s",
    "bracket": "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s",
    "short": "%(levelname)s:%(name)s:%(message)s",
}


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="train an MLP classifier on synthetic data")
    p.add_argument("--style", choices=STYLES, default="plain")
    p.add_argument("--log-format", choices=tuple(LOG_FORMATS), default="dash")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--samples", type=int, default=8192)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--vocab", type=int, default=20000)
    p.add_argument("--embed-dim", type=int, default=128)
    p.add_argument("--width", type=int, default=384)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--every", type=int, default=10, help="print every N steps")
    p.add_argument("--eval-samples", type=int, default=2048)
    p.add_argument("--ckpt-every", type=int, default=0, help="also save every N steps (0: per epoch only)")
    p.add_argument("--output-dir", default="/tmp/train_long")
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--timeout", type=int, default=1800, help="process group timeout, seconds")
    p.add_argument("--max-failures", type=int, default=5, help="download attempts before giving up")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first bad sample")
    p.add_argument("--ignore-errors", action="store_true", help="skip samples that cannot be decoded")
    p.add_argument("--skip-oom-batches", action="store_true", help="skip a batch that runs out of memory")
    p.add_argument("--error-log", default="errors.jsonl", help="where skipped samples are recorded")
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--config-dump", action="store_true")
    p.add_argument("--warnings", action="store_true")
    p.add_argument("--log-warnings", action="store_true")
    p.add_argument("--download", choices=("none", "refused", "503"), default="none")
    p.add_argument("--leak", choices=("none", "snapshots", "cache"), default="none")
    p.add_argument("--handle-sigterm", action="store_true")
    p.add_argument("--rank-prefix", action="store_true", help="prefix every printed line with [rankN]")
    return p.parse_args()


class Out:
    """Where progress goes: print (optionally rank-prefixed) or a logger."""

    def __init__(self, args: argparse.Namespace, rank: int) -> None:
        self.rank = rank
        self.prefix = f"[rank{rank}] " if args.rank_prefix else ""
        self.use_log = args.style == "logging"
        self.log = logging.getLogger("train_long")

    def info(self, message: str, *values: object) -> None:
        text = message % values if values else message
        if self.use_log:
            self.log.info(text)
        else:
            print(self.prefix + text)

    def warning(self, message: str, *values: object) -> None:
        self.log.warning(message, *values)


def provoke_warnings(model: nn.Module, loader: DataLoader) -> None:
    """Real warnings that real CPU jobs print and survive."""
    torch.cuda.amp.GradScaler()  # deprecated, and CUDA is not available here
    torch.tensor(next(iter(model.parameters())))  # copy-constructing from a tensor
    DataLoader(loader.dataset, batch_size=32, num_workers=64)  # more workers than CPUs
    x = torch.randn(4, 8)
    nn.functional.softmax(x)  # implicit dim
    nn.MSELoss()(torch.randn(4, 1), torch.randn(4))  # broadcasting target
    torch.utils.checkpoint.checkpoint(lambda a: a * 2, x.requires_grad_())  # use_reentrant not given
    nn.utils.clip_grad_norm(model.parameters(), 1e9)  # deprecated spelling


class Weights(http.server.BaseHTTPRequestHandler):
    body = b""
    refuse_first = 0
    seen = 0

    def do_GET(self) -> None:
        type(self).seen += 1
        if type(self).seen <= type(self).refuse_first:
            self.send_error(503)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:  # the server stands for a remote store
        pass


def download_pretrained(args: argparse.Namespace, width: int, out: Out) -> dict[str, torch.Tensor]:
    """Fetch a first layer over HTTP, retrying as real jobs do; the first tries really fail."""
    torch.manual_seed(1000 + args.seed)
    buffer = io.BytesIO()
    torch.save(nn.Linear(64 + args.embed_dim, width).state_dict(), buffer)
    Weights.body = buffer.getvalue()
    Weights.refuse_first = 2 if args.download == "503" else 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Weights)
    port = server.server_address[1]
    if args.download == "refused":  # nothing listens yet: the store comes up late
        server.server_close()
        threading.Timer(0.8, lambda: serve_late(port)).start()  # up before the third attempt
    else:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{port}/checkpoints/encoder-w{width}.pt"
    out.info("Downloading pretrained encoder from %s", url)
    delay = 0.5
    for attempt in range(1, args.max_failures + 1):
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                data = response.read()
            break
        except (urllib.error.URLError, ConnectionError) as e:
            if attempt == args.max_failures:
                raise RuntimeError(f"could not download {url}: {e}") from e
            out.warning("download attempt %d/%d failed (%s), retrying in %.1fs", attempt, args.max_failures, e, delay)
            time.sleep(delay)
            delay *= 2
    out.info("Downloaded %d bytes (sha256 %s)", len(data), hashlib.sha256(data).hexdigest()[:12])
    return torch.load(io.BytesIO(data))


def serve_late(port: int) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Weights)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def make_data(args: argparse.Namespace, out: Out) -> tuple[TensorDataset, TensorDataset]:
    out.info(
        "Building dataset: %d train / %d eval samples, 64 dense features, 8 ids of %d, 10 classes",
        args.samples,
        args.eval_samples,
        args.vocab,
    )
    g = torch.Generator().manual_seed(args.seed)
    centers = torch.randn(10, 64, generator=g) * 0.6
    span = args.vocab // 10

    def draw(n: int) -> TensorDataset:
        labels = torch.randint(0, 10, (n,), generator=g)
        features = centers[labels] + torch.randn(n, 64, generator=g) * 3
        # real preprocessing work: standardise with a running estimate, chunk by chunk
        mean = torch.zeros(64)
        for i in range(0, n, 256):
            mean += features[i : i + 256].sum(0)
        features = (features - mean / n) / features.std(0)
        ids = torch.randint(0, args.vocab, (n, 8), generator=g)
        related = torch.rand(n, 8, generator=g) < 0.3  # ids from the label's own range
        ids = torch.where(related, labels[:, None] * span + ids % span, ids)
        return TensorDataset(features, ids, labels)

    return draw(args.samples), draw(args.eval_samples)


class Net(nn.Module):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.embed = nn.EmbeddingBag(args.vocab, args.embed_dim, mode="mean", sparse=True)
        layers: list[nn.Module] = [nn.Linear(64 + args.embed_dim, args.width), nn.GELU()]
        for _ in range(args.depth - 1):
            layers += [nn.Linear(args.width, args.width), nn.GELU(), nn.Dropout(0.1)]
        layers.append(nn.Linear(args.width, 10))
        self.mlp = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([x, self.embed(ids)], dim=1))


def save(path: str, model: nn.Module, optimizers: list[torch.optim.Optimizer], epoch: int, step: int) -> int:
    state = {"model": model.state_dict(), "optimizers": [o.state_dict() for o in optimizers], "epoch": epoch, "step": step}
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return os.path.getsize(path)


def main() -> None:
    args = parse()
    distributed = "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    logging.basicConfig(
        stream=sys.stdout if args.style != "tqdm" else sys.stderr,
        level=logging.INFO,
        format=(f"[rank{rank}] " if args.rank_prefix else "") + LOG_FORMATS[args.log_format],
    )
    out = Out(args, rank)
    if args.config_dump and rank == 0:
        print(args)
        print(f"distributed: {distributed} world_size={world} backend=gloo timeout={args.timeout}")
        print(f"process group timeout: {datetime.timedelta(seconds=args.timeout)}")
        print(torch.__config__.show())
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
        out.info("Initialized process group: rank %d of %d (gloo)", rank, world)
    torch.manual_seed(args.seed)
    start = time.time()
    train_set, eval_set = make_data(args, out)
    net = Net(args)
    model: nn.Module = net
    if args.download != "none":
        first = download_pretrained(args, args.width, out)
        net.mlp[0].load_state_dict(first)
        out.info("Loaded pretrained weights into mlp.0")
    if distributed:
        model = nn.parallel.DistributedDataParallel(net)
    sampler = DistributedSampler(train_set, seed=args.seed) if distributed else None
    loader = DataLoader(
        train_set,
        batch_size=args.batch_size,
        shuffle=sampler is None,
        sampler=sampler,
        num_workers=args.num_workers,
        drop_last=True,
    )
    sparse = torch.optim.SparseAdam(list(net.embed.parameters()), lr=args.lr * 10)
    optimizer = torch.optim.AdamW(net.mlp.parameters(), lr=args.lr, weight_decay=0.01)
    optimizers = [sparse, optimizer]
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(loader))
    if args.warnings:
        provoke_warnings(net.mlp, loader)
        scheduler.step()  # before optimizer.step(): torch warns about the order
    parameters = sum(p.numel() for p in model.parameters())
    out.info(
        "Model: EmbeddingBag(%d, %d) + %d-layer MLP of width %d, %d parameters",
        args.vocab,
        args.embed_dim,
        args.depth + 1,
        args.width,
        parameters,
    )
    out.info(
        "Training for %d epochs, %d steps per epoch, batch size %d x %d ranks", args.epochs, len(loader), args.batch_size, world
    )
    os.makedirs(args.output_dir, exist_ok=True)
    if args.log_warnings and rank == 0:
        found = [f for f in os.listdir(args.output_dir) if f.endswith(".pt")]
        if not found:
            out.warning("No checkpoint found in %s, starting from scratch", args.output_dir)
        dropped = len(train_set) % (args.batch_size * world)
        if dropped:
            out.warning("drop_last=True: the last %d samples of every epoch are not used", dropped)
    progress = {"epoch": 0, "step": 0}

    if args.handle_sigterm:

        def on_term(signum: int, frame: object) -> None:
            out.warning("Received signal %d, saving a checkpoint before exiting", signum)
            path = os.path.join(args.output_dir, f"preempt-rank{rank}.pt")
            size = save(path, net, optimizers, progress["epoch"], progress["step"])
            out.info("Saved %s (%.1f MB), exiting", path, size / 2**20)
            sys.exit(128 + signum)

        signal.signal(signal.SIGTERM, on_term)

    loss_fn = nn.CrossEntropyLoss()
    history: list[dict[str, torch.Tensor]] = []
    cache: list[torch.Tensor] = []
    basis = torch.randn(16)
    best, since_best, clipped = 0.0, 0, 0
    global_step = 0
    for epoch in range(args.epochs):
        progress["epoch"] = epoch + 1
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        started = time.time()
        batches = loader
        bar = None
        if args.style == "tqdm" and rank == 0:
            from tqdm import tqdm

            bar = tqdm(loader, desc=f"Epoch {epoch + 1}/{args.epochs}", mininterval=0.5, ascii=epoch % 2 == 1)
            batches = bar
        elif args.style != "tqdm":
            out.info("Epoch %d/%d", epoch + 1, args.epochs)
        running = 0.0
        for step, (x, ids, y) in enumerate(batches, 1):
            global_step += 1
            progress["step"] = global_step
            sparse.zero_grad()
            optimizer.zero_grad()
            loss = loss_fn(model(x, ids), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(net.mlp.parameters(), args.max_grad_norm).item()
            sparse.step()
            optimizer.step()
            scheduler.step()
            running += loss.item()
            if args.leak == "snapshots" and global_step % 4 == 0:
                history.append({k: v.clone() for k, v in net.mlp.state_dict().items()})  # for a weight-trajectory plot
            elif args.leak == "cache":
                cache.append(x.unsqueeze(2) * basis)  # the batch "decoded" (64 x 64 x 16), kept for the next epoch
            if args.log_warnings and norm > args.max_grad_norm and clipped < 3 and rank == 0:
                clipped += 1
                out.warning("Gradient norm %.2f exceeds max_grad_norm=%.1f, clipping", norm, args.max_grad_norm)
            if bar is not None:
                bar.set_postfix(loss=f"{loss.item():.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}", refresh=False)
            elif step % args.every == 0 and rank == 0:
                lr = scheduler.get_last_lr()[0]
                if args.style == "dict":
                    print(
                        {
                            "loss": round(loss.item(), 4),
                            "grad_norm": round(norm, 4),
                            "learning_rate": lr,
                            "epoch": round(epoch + step / len(loader), 2),
                        }
                    )
                elif args.style == "logging":
                    out.info(
                        "Epoch [%d/%d] Step [%d/%d] Loss: %.4f LR: %.6f",
                        epoch + 1,
                        args.epochs,
                        step,
                        len(loader),
                        running / step,
                        lr,
                    )
                else:
                    out.info(
                        "step %d/%d  loss %.4f  grad_norm %.3f  lr %.2e  %.1f samples/s",
                        step,
                        len(loader),
                        running / step,
                        norm,
                        lr,
                        step * args.batch_size / (time.time() - started),
                    )
            if args.ckpt_every and global_step % args.ckpt_every == 0 and rank == 0:
                path = os.path.join(args.output_dir, f"step-{global_step}.pt")
                out.info("Saving checkpoint to %s", path)
                size = save(path, net, optimizers, epoch, global_step)
                out.info("Checkpoint saved (%.1f MB)", size / 2**20)
        if bar is not None:
            bar.close()
        out.info("Running evaluation on %d samples", len(eval_set))
        model.eval()
        correct = torch.zeros(1)
        total_loss = torch.zeros(1)
        eval_loader = DataLoader(eval_set, batch_size=256)
        if args.style == "tqdm" and rank == 0:
            from tqdm import tqdm

            eval_loader = tqdm(eval_loader, desc="Evaluating", mininterval=0.5, leave=False)
        with torch.no_grad():
            for x, ids, y in eval_loader:
                logits = model(x, ids)
                total_loss += loss_fn(logits, y) * len(y)
                correct += (logits.argmax(1) == y).sum()
        if distributed:
            dist.all_reduce(correct)
            dist.all_reduce(total_loss)
        accuracy = correct.item() / (len(eval_set) * world)
        eval_loss = total_loss.item() / (len(eval_set) * world)
        if args.style == "dict" and rank == 0:
            print({"eval_loss": round(eval_loss, 4), "eval_accuracy": round(accuracy, 4), "epoch": epoch + 1})
        else:
            out.info("Epoch %d: eval loss %.4f, accuracy %.4f (%.1fs)", epoch + 1, eval_loss, accuracy, time.time() - started)
        if accuracy > best:
            best, since_best = accuracy, 0
        else:
            since_best += 1
            if args.log_warnings and rank == 0:
                out.warning("Eval accuracy did not improve (best %.4f), patience %d/5", best, since_best)
        if rank == 0:
            path = os.path.join(args.output_dir, f"checkpoint-epoch{epoch + 1}.pt")
            out.info("Saving checkpoint to %s", path)
            t = time.time()
            size = save(path, net, optimizers, epoch + 1, global_step)
            out.info("Checkpoint saved (%.1f MB in %.2fs)", size / 2**20, time.time() - t)
        if distributed:
            dist.barrier()
    out.info("Training finished in %.1fs, best accuracy %.4f", time.time() - start, best)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
