"""Reproduces: a PyTorch DataLoader worker (num_workers=2) segfaults in native code
(ctypes.string_at(0) stands in for a buggy decoder/extension); the main process reports
"DataLoader worker (pid N) is killed by signal: Segmentation fault." Run with
the project virtualenv's python."""
import ctypes

import torch
from torch.utils.data import DataLoader, Dataset


class Data(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        if i == 20:
            ctypes.string_at(0)
        return [float(i)] * 4


def collate(batch):
    # plain lists: no tensor storage is passed between processes, so the
    # report does not depend on when the worker died
    return batch


if __name__ == "__main__":
    loader = DataLoader(Data(), batch_size=4, num_workers=2, collate_fn=collate)
    for step, batch in enumerate(loader):
        print(f"step {step}", flush=True)
