"""A real, small PyTorch CPU training run that prints progress the way training scripts do.

    python train_progress.py --style plain|logging|bar|dict --epochs N --seed S [--warnings] [--recovered-error]

Used twice by corpora/build.py: run to the end it is a passed job; its first lines are
the progress that precedes a failure in a produced failure log. With ``--warnings`` it
also provokes warnings that real CPU runs print and that look alarming but are not the
failure (a CUDA-only AMP scaler on a CPU machine, too many DataLoader workers, the
lr_scheduler call order). With ``--recovered-error`` it logs, with its traceback, a real
exception that it survives (a metrics endpoint that refuses connections): the hard case
of a traceback that is not the cause of a later failure.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

STYLES = ("plain", "logging", "bar", "dict")


def build(seed: int, width: int) -> tuple[nn.Module, DataLoader, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    features = torch.randn(1024, 32)
    labels = (features[:, : 1 + seed % 5].sum(dim=1) > 0).long()
    model = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Dropout(0.1), nn.Linear(width, 2))
    loader = DataLoader(TensorDataset(features, labels), batch_size=32, shuffle=True)
    return model, loader, features, labels


def report_metrics_elsewhere(log: logging.Logger) -> None:
    """A side channel that fails and is survived: the error is real, and not the job's failure."""
    port = 9  # discard port; nothing listens here
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        log.exception("could not push metrics to 127.0.0.1:%d, will retry next epoch", port)


def provoke_warnings(loader: DataLoader) -> None:
    torch.amp.GradScaler("cuda")  # real warning on a machine without CUDA
    DataLoader(loader.dataset, batch_size=32, num_workers=64)  # warns about the worker count


def line(style: str, epoch: int, epochs: int, step: int, steps: int, loss: float, lr: float, started: float) -> str:
    if style == "plain":
        return f"epoch {epoch + 1}/{epochs} step {step}/{steps} loss {loss:.4f} lr {lr:.2e}\n"
    if style == "logging":
        return f"Epoch [{epoch + 1}/{epochs}] Step [{step}/{steps}] Loss: {loss:.4f} LR: {lr:.6f}\n"
    if style == "dict":
        return str({"loss": round(loss, 4), "learning_rate": lr, "epoch": round(epoch + step / steps, 2)}) + "\n"
    done = step * 24 // steps
    return (
        f"\rEpoch {epoch + 1}: {step * 100 // steps:3d}%|{'#' * done:<24}| {step}/{steps}"
        f" [{time.time() - started:.1f}s, loss={loss:.4f}]" + ("\n" if step == steps else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--style", choices=STYLES, default="plain")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=4, help="print every N steps")
    parser.add_argument("--warnings", action="store_true")
    parser.add_argument("--recovered-error", action="store_true")
    args = parser.parse_args()

    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
    log = logging.getLogger("train")
    model, loader, features, labels = build(args.seed, 32 + 16 * (args.seed % 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3 * (1 + args.seed % 3))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    if args.warnings:
        provoke_warnings(loader)
        scheduler.step()  # before optimizer.step(): torch warns about the order
    out = tempfile.mkdtemp(prefix="run-")
    parameters = sum(p.numel() for p in model.parameters())
    log.info("torch %s, %d parameters, %d steps per epoch, output %s", torch.__version__, parameters, len(loader), out)
    loss_fn = nn.CrossEntropyLoss()
    steps = len(loader)
    for epoch in range(args.epochs):
        started = time.time()
        model.train()
        for step, (x, y) in enumerate(loader, 1):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if step % args.every and step != steps:
                continue
            text = line(args.style, epoch, args.epochs, step, steps, loss.item(), scheduler.get_last_lr()[0], started)
            if args.style == "logging":
                log.info(text.strip())
            else:
                sys.stdout.write(text)
                sys.stdout.flush()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(features).argmax(dim=1) == labels).float().mean().item()
        path = os.path.join(out, f"checkpoint-epoch{epoch + 1}.pt")
        torch.save({"model": model.state_dict(), "epoch": epoch + 1}, path)
        log.info("epoch %d: accuracy %.3f, checkpoint saved to %s", epoch + 1, accuracy, path)
        if args.recovered_error and epoch == 0:
            report_metrics_elsewhere(log)
    model.load_state_dict(torch.load(path)["model"])
    log.info("training finished after %d epochs; final checkpoint reloaded from %s", args.epochs, path)


if __name__ == "__main__":
    main()
