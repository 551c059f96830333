"""Root cause over consequence, on logs assembled from real excerpts (the rules' own
positive examples, each real output with its source) in the order real jobs print them."""

from __future__ import annotations

import pytest
from conftest import ROOT

from failclass.classifier import Classifier
from failclass.contracts import classification_json
from failclass.matching.rootcause import SetAside


def real(classifier: Classifier, rule_id: str, containing: str = "") -> str:
    """The first positive example of a rule that classifies as the rule's own reason."""
    rule = classifier.ruleset.by_id()[rule_id]
    for example in rule.positives:
        if example.classify_as is None and containing in example.text:
            return example.text.rstrip("\n") + "\n"
    raise AssertionError(f"{rule_id} has no plain positive example containing {containing!r}")


PROGRESS = "".join(f"[rank{r}]: epoch 3 step {s} loss 1.{s % 97:02d}\n" for s in range(200, 260) for r in range(4))


def classify(classifier: Classifier, *parts: str) -> dict:
    return classification_json(classifier.classify_bytes(PROGRESS + "".join(parts)), explain=True)


def test_cuda_oom_on_one_rank_beats_nccl_watchdog_on_all(classifier: Classifier) -> None:
    oom = real(classifier, "gpu_oom.torch_cuda_oom")
    watchdog = real(classifier, "mpi_runtime_failure.nccl_watchdog_timeout")
    summary = real(classifier, "traceback_from_crash.torchrun_child_failed")
    result = classify(classifier, oom, watchdog * 3, summary)
    assert (result["reason"], result["rule_id"]) == ("gpu_oom", "gpu_oom.torch_cuda_oom")
    losers = {m["rule_id"]: m["lost_because"] for m in result["also_matched"]}
    assert losers["mpi_runtime_failure.nccl_watchdog_timeout"].startswith("priority 35 <")


def test_dataloader_worker_killed_beats_the_traceback_after_it(classifier: Classifier) -> None:
    killed = real(classifier, "cpu_oom.dataloader_worker_killed")
    traceback = real(classifier, "traceback_from_crash.python_traceback")
    assert classify(classifier, killed, traceback)["reason"] == "cpu_oom"


def test_ecc_error_inside_nccl_watchdog_is_gpu_ecc(classifier: Classifier) -> None:
    public = ROOT / "corpora/public/gpu_ecc_error/torchrun_multinode_ecc_watchdog.log"
    ecc = "".join(line for line in public.read_text().splitlines(keepends=True) if "watchdog thread terminated" in line)
    assert "uncorrectable ECC error" in ecc
    watchdog = real(classifier, "mpi_runtime_failure.nccl_watchdog_timeout")
    assert classify(classifier, watchdog, ecc, watchdog)["reason"] == "gpu_ecc_error"


@pytest.mark.parametrize(
    ("summary_rule", "cause_rule", "reason"),
    [
        ("traceback_from_crash.torchrun_child_failed", "import_error.module_not_found", "import_error"),
        ("traceback_from_crash.horovod_shut_down", "semantic_error.torch_matmul_shape_mismatch", "semantic_error"),
        ("traceback_from_crash.deepspeed_launcher_exit", "syntax_error.python_invalid_syntax", "syntax_error"),
    ],
)
def test_launcher_summary_hides_the_real_error_above_it(
    classifier: Classifier, summary_rule: str, cause_rule: str, reason: str
) -> None:
    summary = real(classifier, summary_rule)
    assert classify(classifier, summary)["reason"] == "traceback_from_crash"
    assert classify(classifier, real(classifier, cause_rule), summary)["reason"] == reason


def test_aborted_core_dump_takes_its_cause_from_the_line_before(classifier: Classifier) -> None:
    aborted = real(classifier, "core_dump.aborted_core_dumped")
    assert classify(classifier, aborted)["reason"] == "core_dump"
    bad_alloc = real(classifier, "cpu_oom.cxx_bad_alloc")
    assert classify(classifier, bad_alloc, aborted)["reason"] == "cpu_oom"
    invalid_free = real(classifier, "invalid_mem_access.glibc_invalid_free")
    assert classify(classifier, invalid_free, aborted)["reason"] == "invalid_mem_access"


@pytest.mark.parametrize("needle", ["undefined symbol", "libcudart.so"])
def test_import_error_carrying_a_library_problem_is_cannot_load_libs(classifier: Classifier, needle: str) -> None:
    rules = classifier.ruleset.by_id()
    texts = [
        e.text
        for rule_id in ("cannot_load_libs.undefined_symbol", "cannot_load_libs.python_cannot_open_shared_object")
        for e in rules[rule_id].positives
        if "ImportError" in e.text and needle in e.text and e.classify_as is None
    ]
    assert texts, f"no real ImportError example carrying {needle!r}"
    for text in texts:
        result = classify(classifier, text)
        assert result["reason"] == "cannot_load_libs", text


def test_equal_priority_earliest_wins_and_says_why(classifier: Classifier) -> None:
    first = real(classifier, "traceback_from_crash.horovod_shut_down")
    second = real(classifier, "traceback_from_crash.deepspeed_launcher_exit")
    result = classify(classifier, first, second)
    assert result["rule_id"] == "traceback_from_crash.horovod_shut_down"
    loser = next(m for m in result["also_matched"] if m["rule_id"] == "traceback_from_crash.deepspeed_launcher_exit")
    assert loser["lost_because"].startswith("same priority 15; first matched at line")


def test_no_rule_gives_no_signature(classifier: Classifier) -> None:
    result = classify(classifier, "training finished: 3 epochs, best loss 0.12\n")
    assert (result["reason"], result["source"], result["confidence"]) == ("no_signature", "none", 0.0)


SAGEMAKER_WRAPPERS = [
    ROOT / "corpora/public/no_signature" / f"{name}.log"
    for name in (
        "aws-samples_amazon-sagemaker-bert-classify-pytorch_2",
        "aws_amazon-sagemaker-examples_1234",
        "aws_amazon-sagemaker-examples_3444",
    )
]


@pytest.mark.parametrize("log", SAGEMAKER_WRAPPERS, ids=lambda p: p.stem)
def test_a_cloud_wrapper_that_names_no_cause_is_no_signature(classifier: Classifier, log) -> None:  # type: ignore[no-untyped-def]
    """SageMaker's client says the training job failed, and why not: the guide's No signature,
    though its own traceback and exception line would fire the generic rules."""
    result = classification_json(classifier.classify_path(log), explain=True)
    assert (result["reason"], result["source"]) == ("no_signature", "none")
    voided = [m for m in result["also_matched"] if m["lost_because"] == SetAside.END_WITHOUT_CAUSE.value]
    assert voided and all(m["reason"] == "traceback_from_crash" for m in voided)


def test_a_cloud_wrapper_after_the_real_cause_leaves_the_cause(classifier: Classifier) -> None:
    wrapper = SAGEMAKER_WRAPPERS[1].read_text()
    oom = real(classifier, "gpu_oom.torch_cuda_oom")
    assert classify(classifier, oom, wrapper)["reason"] == "gpu_oom"


def test_torchrun_told_to_stop_from_outside_is_no_signature(classifier: Classifier) -> None:
    """torchrun got SIGTERM (a scheduler's cancel, a preemption or a time limit: the log does
    not say which), stopped its workers and raised SignalException: nothing names a cause."""
    log = ROOT / "corpora/public/no_signature/torchrun_sigterm_agent_node.log"
    result = classification_json(classifier.classify_path(log), explain=True)
    assert (result["reason"], result["source"]) == ("no_signature", "none")
    assert "traceback_from_crash.hf_torchelastic_sigterm_siblings" in {m["rule_id"] for m in result["also_matched"]}
    sibling_clean_up = real(classifier, "traceback_from_crash.hf_torchelastic_sigterm_siblings", "Sending process 5938")
    oom = real(classifier, "gpu_oom.torch_cuda_oom")
    assert classify(classifier, oom, sibling_clean_up)["reason"] == "gpu_oom"  # a cause before the clean-up stays


def test_an_end_without_a_cause_sets_aside_only_what_came_from_it_on(classifier: Classifier) -> None:
    """A rank that died on its own exception, then Slurm's time limit on the job (the other
    ranks hung): the exception came first and still speaks; the time limit alone would not."""
    crash = real(classifier, "traceback_from_crash.uncaught_exception_line", "TrainerStateError")
    time_limit = "".join(
        line + "\n"
        for line in (ROOT / "corpora/public/no_signature/Lightning-AI_pytorch-lightning_20542.log").read_text().splitlines()
        if "TIME LIMIT" in line or "Job step aborted" in line
    )
    assert time_limit.count("\n") == 2
    first = classify(classifier, crash, time_limit)
    assert (first["reason"], first["rule_id"]) == ("traceback_from_crash", "traceback_from_crash.uncaught_exception_line")
    sigterm_after = classify(classifier, time_limit, "[rank: 0] Received SIGTERM: 15\n", crash)
    assert sigterm_after["reason"] == "no_signature"  # what the program printed as it was stopped names no cause
