# Reproduces the CPU counterparts of the two most common CUDA device-side asserts,
# as a near-miss check for the cuda_failure assert rules: on CPU, PyTorch raises an
# ordinary IndexError for an out-of-range class label (nll_loss / cross_entropy; on GPU
# "Assertion `t >= 0 && t < n_classes` failed") and for an embedding index >= vocab size
# (on GPU "Assertion `srcIndex < srcSelectDimSize` failed"). No GPU needed.
# Run: .venv/bin/python corpora/scenarios/cuda_failure__cpu_index_out_of_range.py
import traceback

import torch
import torch.nn.functional as F

torch.manual_seed(0)
for name, fn in [
    ("cross_entropy", lambda: F.cross_entropy(torch.randn(4, 3), torch.tensor([0, 1, 2, 5]))),
    ("embedding", lambda: torch.nn.Embedding(10, 4)(torch.tensor([3, 12]))),
]:
    try:
        fn()
    except Exception:
        print(f"--- {name}")
        traceback.print_exc(limit=1)
