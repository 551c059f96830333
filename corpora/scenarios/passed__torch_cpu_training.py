"""Passed job: a small PyTorch CPU training run that finishes, with the warnings real runs
print (DataLoader worker count, lr_scheduler call order), a progress bar rewritten with
carriage returns, validation and checkpoint saving. Its log must match no signature."""

import os
import sys
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(2048, 32)
labels = (features[:, :4].sum(dim=1) > 0).long()
loader = DataLoader(TensorDataset(features, labels), batch_size=64, shuffle=True, num_workers=4)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
scheduler.step()  # a common mistake that only warns
loss_fn = nn.CrossEntropyLoss()
out = tempfile.mkdtemp()
print(f"torch {torch.__version__}, {sum(p.numel() for p in model.parameters())} parameters, output {out}", flush=True)
for epoch in range(3):
    started = time.time()
    for step, (x, y) in enumerate(loader, 1):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        bar = "#" * (step * 20 // len(loader))
        sys.stdout.write(f"\rEpoch {epoch}: {step * 100 // len(loader):3d}%|{bar:<20}| {step}/{len(loader)} [{time.time() - started:.1f}s, loss={loss.item():.4f}]")
    sys.stdout.write("\n")
    scheduler.step()
    with torch.no_grad():
        accuracy = (model(features).argmax(dim=1) == labels).float().mean().item()
    path = os.path.join(out, f"checkpoint-epoch{epoch}.pt")
    torch.save({"model": model.state_dict(), "epoch": epoch}, path)
    print(f"epoch {epoch}: train loss {loss.item():.4f} accuracy {accuracy:.3f} lr {scheduler.get_last_lr()[0]:.2e}; saved {path}", flush=True)
state = torch.load(path)
model.load_state_dict(state["model"])
print("training finished: 3 epochs, final checkpoint reloaded", flush=True)
