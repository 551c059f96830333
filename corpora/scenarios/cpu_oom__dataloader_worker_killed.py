"""Reproduces: a PyTorch DataLoader worker (num_workers=2) dies of SIGKILL, as when the
Linux OOM killer picks it; the main process reports "DataLoader worker (pid(s) ...) exited
unexpectedly" and "is killed by signal: Killed". Run with the project virtualenv's python."""
import os
import signal

import torch
from torch.utils.data import DataLoader, Dataset


class Data(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        if i == 20:
            os.kill(os.getpid(), signal.SIGKILL)
        return [float(i)] * 4


def collate(batch):
    # plain lists: no tensor storage is passed between processes, so the
    # report does not depend on when the worker died
    return batch


if __name__ == "__main__":
    loader = DataLoader(Data(), batch_size=4, num_workers=2, collate_fn=collate)
    for step, batch in enumerate(loader):
        print(f"step {step}", flush=True)
