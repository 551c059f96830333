"""Hand-made failures for the tests of the retry policy and its use cases: what a
classification hands the policy (``failure``: failclass.history.Failure) or a use case
(``examination``: failclass.classifier.Examination), written here rather than found by
the classifier, so that editing a rule moves no policy test.

Each evidence line is copied, with its line number, from the corpus log named beside it
(text that the real program printed); the end-to-end tests in tests/policy/test_from_logs.py
check that the classifier still finds these answers in those logs."""

from __future__ import annotations

from dataclasses import dataclass

from failclass.classifier import Examination
from failclass.contracts import Classification, Evidence
from failclass.history import Failure
from failclass.logs.facts import Progress
from failclass.matching.taxonomy import builtin_taxonomy


@dataclass(frozen=True)
class Made:
    """One hand-made classification: its answer and the log its evidence is copied from."""

    reason: str
    rule_id: str | None
    evidence: tuple[tuple[int, str], ...]  # (line, text)
    log: str
    progress: Progress | None = None


NCCL_WATCHDOG = (
    "[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for "
    "600060 milliseconds before timing out."
)
TORCH_OOM = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 978.00 MiB (GPU 0; 4.00 GiB total capacity; "
    "1.68 GiB already allocated; 0 bytes free; 2.72 GiB reserved in total by PyTorch) If reserved memory is >> allocated "
    "memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
    "PYTORCH_CUDA_ALLOC_CONF"
)
MADE = {
    "syntax": Made(
        "syntax_error",
        "syntax_error.python_indentation_error",
        ((83, "IndentationError: unexpected indent"),),
        "corpora/produced/syntax_error/syntax_error__indentation__0.log",
    ),
    "nccl_timeout": Made(
        "mpi_runtime_failure",
        "mpi_runtime_failure.nccl_watchdog_timeout",
        ((1, NCCL_WATCHDOG),),
        "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log",
    ),
    "preempted": Made(
        "job_preempted",
        "job_preempted.slurm_preemption",
        ((5, "slurmstepd: error: *** JOB 37361369 ON learnfair5146 CANCELLED AT 2021-03-15T18:00:46 DUE TO PREEMPTION ***"),),
        "corpora/public/job_preempted/submitit_slurm_preemption_store_barrier.log",
    ),
    "missing_input": Made(
        "incorrect_inputs",
        "incorrect_inputs.missing_input_file_exception",
        ((10, "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/data/train.txt'"),),
        "corpora/produced/incorrect_inputs/incorrect_inputs__missing_data_file__0.log",
        Progress(2, 32),
    ),
    "cpu_oom": Made(
        "cpu_oom",
        "cpu_oom.python_memoryerror",
        ((28, "MemoryError"),),
        "corpora/produced/cpu_oom/cpu_oom__python_memoryerror__0.log",
        Progress(2, -1),
    ),
    "ecc": Made(
        "gpu_ecc_error",
        "gpu_ecc_error.cuda_uncorrectable_ecc",
        ((1, "RuntimeError: CUDA error: uncorrectable ECC error encountered"),),
        "corpora/public/gpu_ecc_error/alpaca_lora_uncorrectable_ecc.log",
    ),
    "gpu_oom": Made(
        "gpu_oom", "gpu_oom.torch_cuda_oom", ((1, TORCH_OOM),), "corpora/public/gpu_oom/deepspeed_zero_inference_torch_oom.log"
    ),
    "passed": Made("no_signature", None, (), "corpora/passed/runs/train_progress_plain_0.log", Progress(1, 32)),
}
DATASET = "/nonexistent/data"  # the directory in which missing_input's FileNotFoundError names a file


def failure(name: str, progress: Progress | None = None) -> Failure:
    """The facts the policy reads of MADE[name] (at ``progress``, if given)."""
    made = MADE[name]
    return Failure(
        made.reason, made.rule_id, tuple(text for _, text in made.evidence), progress if progress is not None else made.progress
    )


def examination(name: str) -> Examination:
    """What a use case is given for an attempt whose log says MADE[name]. No log is read:
    bytes and lines are 0, and a rule's explanation (why) is left empty."""
    made = MADE[name]
    reason = builtin_taxonomy()[made.reason]
    classification = Classification(
        reason=made.reason,
        reason_name=reason.name,
        categories=reason.categories,
        source="signature" if made.rule_id else "none",
        rule_id=made.rule_id,
        why="",
        confidence=1.0 if made.rule_id else 0.0,
        evidence=tuple(Evidence(line, text) for line, text in made.evidence),
        bytes=0,
        lines=0,
    )
    return Examination(classification, made.progress)
