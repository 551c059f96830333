#!/bin/bash
# Reproduces: torch.save of a checkpoint onto a full disk. First to /dev/full (every
# write fails with ENOSPC), then onto a 1 MiB tmpfs (in a private mount namespace) that
# fills up half way through the checkpoint.
PY=${PY:-python3}
$PY - <<'PYEOF' 2>&1
import torch
print("Saving checkpoint to /dev/full", flush=True)
torch.save({"model": {"w": torch.zeros(512, 512)}}, "/dev/full")
PYEOF
unshare -m bash -c '
mkdir -p /tmp/fc_ckpt_full && mount -t tmpfs -o size=1m tmpfs /tmp/fc_ckpt_full
'"$PY"' - <<PYEOF 2>&1
import torch
print("Saving checkpoint to /tmp/fc_ckpt_full/checkpoint_epoch_3.pt", flush=True)
torch.save({"model": {"w": torch.zeros(1024, 1024)}}, "/tmp/fc_ckpt_full/checkpoint_epoch_3.pt")
PYEOF
umount /tmp/fc_ckpt_full'
