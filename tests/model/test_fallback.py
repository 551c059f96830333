"""The fallback model as an estimator, its artifact checks, and how classification uses it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from sklearn.base import clone

from failclass.classifier import NO_RULE_THRESHOLD, Classifier
from failclass.limits import LIMITS
from failclass.logs.region import FINAL_LINES, TailLines, normalise_line, region_indices, region_lines, shows_failure
from failclass.logs.text import Tail, blocks_of_text, tail_text
from failclass.matching.taxonomy import builtin_taxonomy
from failclass.model.artifact import ModelError, load, save
from failclass.model.corpus import read_manifest, resolve
from failclass.model.estimator import FailureTextModel, line_tokens

KNOWN = set(builtin_taxonomy().reasons)


def corpus_texts(reasons: tuple[str, ...], per_reason: int) -> tuple[list[str], list[str]]:
    """Real corpus logs of a few reasons (training side), as the model reads them."""
    texts, labels = [], []
    for reason in reasons:
        entries = [e for e in read_manifest() if e.reason == reason and e.split == "train"][:per_reason]
        texts += [tail_text(resolve(e)) for e in entries]
        labels += [reason] * len(entries)
    return texts, labels


@pytest.fixture(scope="module")
def small_model() -> FailureTextModel:
    texts, labels = corpus_texts(("gpu_oom", "syntax_error", "mpi_runtime_failure", "no_signature"), 12)
    return FailureTextModel().fit(texts, labels)


def test_estimator_contract(small_model: FailureTextModel) -> None:
    fresh = clone(small_model)
    assert fresh.get_params() == small_model.get_params()
    assert not hasattr(fresh, "classes_")  # __init__ stores parameters only
    texts, labels = corpus_texts(("gpu_oom", "syntax_error"), 4)
    assert fresh.fit(texts, labels) is fresh
    assert sorted(fresh.classes_) == ["gpu_oom", "syntax_error"]


def test_model_learns_real_logs(small_model: FailureTextModel) -> None:
    texts, labels = corpus_texts(("gpu_oom", "syntax_error", "mpi_runtime_failure"), 12)
    right = sum(p == t for p, t in zip(small_model.predict(texts), labels, strict=False))
    assert right / len(labels) > 0.9
    probabilities = small_model.predict_proba(texts[:3])
    assert probabilities.shape == (3, len(small_model.classes_))
    assert abs(probabilities.sum(axis=1) - 1).max() < 1e-6


def test_normalisation_masks_what_varies_between_runs() -> None:
    assert normalise_line("rank 3 pid 12345 at 0x7f3a2b00  failed") == "rank 0 pid 0 at HEX failed"
    assert normalise_line("x" * 5000) == "x" * 400


def test_compound_identifiers_share_their_parts_across_frameworks() -> None:
    nccl = line_tokens("torch.distributed.DistBackendError: [Rank 0] ProcessGroupNCCL watchdog caught collective timeout")
    other = line_tokens("RuntimeError: NCCL communicator was aborted: nccl_comm_timeout")
    assert {"SUB_nccl", "SUB_error"} <= set(nccl) & set(other)
    assert "SUB_dist" in nccl and "SUB_backend" in nccl and "EXC_DistBackendError" in nccl
    assert {"SUB_nccl", "SUB_error"} <= set(line_tokens("torch.distributed.NCCLError: remote process exited"))
    assert not any(token.startswith("SUB_") for token in line_tokens("Epoch 3 loss went down"))  # plain words stay whole


def test_region_is_trouble_near_the_end_and_the_last_lines() -> None:
    lines = ["  "] + [f"error {i}" for i in range(LIMITS.region_lines + 20)] + ["", "step 1\rstep 2\rstep 3"]
    chosen = region_indices(lines)
    assert len(chosen) == LIMITS.region_lines and chosen[-1] == len(lines) - 1
    progress = [f"step {i} loss 0.5" for i in range(100)]
    lines = [*progress, "RuntimeError: boom", *progress[:FINAL_LINES]]
    assert region_indices(lines) == [100, *list(range(101, 101 + FINAL_LINES))]
    assert region_lines("a\n\nb\rc\n") == ["a", "c"]


@pytest.mark.parametrize("ending", [b"\n", b""])
def test_tail_keeps_true_line_numbers(ending: bytes) -> None:
    lines = [f"line {i} ".encode() + b"x" * (i % 97) for i in range(1, 5001)]
    data = b"\n".join(lines) + ending
    tail = Tail(size=4096)
    blocks = list(tail.watch(blocks_of_text(data, block_size=1000)))
    assert b"".join(blocks) == data
    numbered = tail.numbered_lines(total_lines=5000)
    assert numbered[-1] == (5000, lines[-1].decode())
    for number, text in numbered:
        assert lines[number - 1].decode() == text


def test_saved_model_loads_only_with_matching_metadata(small_model: FailureTextModel, tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    save(small_model, path, 0.6, {"corpus_hash": "x"})
    loaded = load(path, KNOWN)
    assert loaded.threshold == 0.6 and list(loaded.model.classes_) == list(small_model.classes_)

    metadata = json.loads(path.with_suffix(".json").read_text())
    for change, message in (
        ({"classes": metadata["classes"] + ["gpu_on_fire"]}, "unknown to the taxonomy"),
        ({"format": 99}, "model format 99"),
    ):
        path.with_suffix(".json").write_text(json.dumps({**metadata, **change}))
        with pytest.raises(ModelError, match=message):
            load(path, KNOWN)
    path.with_suffix(".json").write_text(json.dumps(metadata))
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(ModelError, match="does not match the SHA-256"):
        load(path, KNOWN)
    damaged = b"PK\x03\x04 not an npz archive" * 8  # its metadata vouches for it: the reading must refuse
    path.write_bytes(damaged)
    path.with_suffix(".json").write_text(json.dumps({**metadata, "sha256": hashlib.sha256(damaged).hexdigest()}))
    with pytest.raises(ModelError, match="not a failclass model"):
        assert load(path, KNOWN).model is None  # reading the arrays raises first
    path.with_suffix(".json").unlink()
    with pytest.raises(ModelError, match="no metadata"):
        load(path, KNOWN)
    with pytest.raises(ModelError, match="no model file"):
        load(tmp_path / "absent.npz", KNOWN)


def test_the_model_loads_without_scikit_learn_or_pickle() -> None:
    """Reading the shipped model needs numpy only: no unpickling, no scikit-learn import."""
    probe = (
        "import sys; from failclass.model.artifact import BUILTIN_MODEL, load; "
        "from failclass.matching.taxonomy import builtin_taxonomy; "
        "m = load(BUILTIN_MODEL, set(builtin_taxonomy().reasons)).model; "
        "print(len(m.classes_), 'sklearn' in sys.modules, 'joblib' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    classes, sklearn, joblib = done.stdout.split()
    assert int(classes) >= 20 and sklearn == joblib == "False"


def test_cli_refuses_an_explicit_model_that_does_not_load(tmp_path: Path) -> None:
    done = run_cli("--model", str(tmp_path / "absent.npz"), "classify", "samples/README.md")
    assert done.returncode == 2
    assert "no model file" in done.stderr


def test_model_answers_only_without_an_explicit_signature(small_model: FailureTextModel, tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    save(small_model, path, 0.0, {})
    with_model = Classifier(model=load(path, KNOWN))
    explicit = resolve(next(e for e in read_manifest() if e.reason == "cpu_oom" and e.origin == "produced"))
    result = with_model.classify_path(explicit)
    assert (result.source, result.reason) == ("signature", "cpu_oom")


def test_model_evidence_is_a_real_line_of_the_log(tmp_path: Path) -> None:
    texts, labels = corpus_texts(("gpu_oom", "syntax_error", "mpi_runtime_failure"), 12)
    path = tmp_path / "m.npz"
    save(FailureTextModel().fit(texts, labels), path, 0.0, {})  # no "no_signature" class, no threshold
    with_model = Classifier(model=load(path, KNOWN))
    rules = Classifier()
    unexplained = [  # no rule matched at all (an end reported without its cause silences the model too)
        log
        for log in sorted(Path("corpora/public/no_signature").glob("*.log"))
        if (answer := rules.classify_path(log)).source == "none" and not answer.also_matched
    ]
    assert len(unexplained) >= 30

    def cut_off(log: Path) -> bool:  # no failure among the last lines, training progress there
        lines = TailLines.of(list(enumerate(log.read_text(errors="replace").split("\n"), 1)), rules.ruleset.endings)
        return not lines.shows_failure and lines.training_to_the_end

    silent = [log for log in unexplained if cut_off(log)]
    assert silent and len(silent) < len(unexplained)
    for log in unexplained:
        result = with_model.classify_path(log)
        if log in silent:
            assert result.source == "none", log
            continue
        assert result.source == "model" and result.rule_id is None
        assert 0 < result.confidence <= 1
        (evidence,) = result.evidence
        line = log.read_text(errors="replace").split("\n")[evidence.line - 1]
        assert evidence.text and evidence.text in line.replace("\r", " ")


def test_below_its_threshold_the_model_speaks_only_where_no_rule_fired_on_a_failure_line(
    small_model: FailureTextModel, tmp_path: Path, classifier: Classifier
) -> None:
    """No rule fired on these real logs: below the model's own threshold it still answers
    (from NO_RULE_THRESHOLD on) when the log shows a failure line, and never on a log that
    shows none (a passed run's end)."""
    path = tmp_path / "m.npz"
    save(small_model, path, 0.99, {})
    with_model = Classifier(model=load(path, KNOWN))
    answered = 0
    for name in ("horovod_horovod_414", "jax-ml_jax_23599", "radical-cybertools_radical.pilot_2177"):
        log = Path(f"corpora/public/mpi_runtime_failure/{name}.log")
        assert Classifier().classify_path(log).source == "none"
        result = with_model.classify_path(log)
        probabilities = small_model.predict_proba([tail_text(log)])[0]
        top, probability = small_model.classes_[probabilities.argmax()], float(probabilities.max())
        speaks = top != "no_signature" and NO_RULE_THRESHOLD <= probability < 0.99
        assert result.source == ("model" if speaks else "none")
        answered += result.source == "model"
    assert answered
    quiet = b"epoch 1 loss 0.52\nepoch 2 loss 0.31\nsaving model to out/model.pt\n"
    assert shows_failure([line.decode() for line in quiet.splitlines()], classifier.ruleset.endings) is False
    assert with_model.classify_bytes(quiet).source == "none"


def test_below_its_threshold_the_model_speaks_over_a_generic_rule_but_not_over_another_consequence(
    tmp_path: Path,
) -> None:
    """A bare traceback (a generic rule) says only that the program failed: the model then
    speaks as where no rule fired. A launcher's report or a fatal signal (implicit, not
    generic) still needs the model's own threshold."""
    texts, labels = corpus_texts(("gpu_oom", "syntax_error", "mpi_runtime_failure"), 12)  # always names a failure
    small_model = FailureTextModel().fit(texts, labels)
    path = tmp_path / "m.npz"
    save(small_model, path, 0.99, {})
    rules_only, with_model = Classifier(), Classifier(model=load(path, KNOWN))
    for name, generic in (
        ("incorrect_inputs/JaidedAI_EasyOCR_1021", True),
        ("incorrect_inputs/pytorch_pytorch_10938", True),
        ("core_dump/darknet_dilated_fpe", False),
        ("core_dump/gssdf_libtorch_c10_error_abort", False),
    ):
        log = Path(f"corpora/public/{name}.log")
        signature = rules_only.classify_path(log)
        assert rules_only.rules[signature.rule_id].generic is generic  # type: ignore[index]
        probabilities = small_model.predict_proba([tail_text(log)])[0]
        top, probability = small_model.classes_[probabilities.argmax()], float(probabilities.max())
        assert top not in ("no_signature", signature.reason) and NO_RULE_THRESHOLD <= probability < 0.99
        assert with_model.classify_path(log).source == ("model" if generic else "signature")


def test_a_time_limit_or_a_causeless_cancellation_is_no_failure_line_but_a_preemption_is_named(classifier: Classifier) -> None:
    """The guide files a job that Slurm ended on its time limit, or cancelled with no cause,
    as No signature: the model's low threshold must not take those lines for a failure.
    Real lines (github.com/Lightning-AI/pytorch-lightning/issues/20542,
    github.com/facebookincubator/submitit/issues/1677, github.com/SystemsGenetics/GEMmaker/pull/242)."""
    time_limit = [
        "slurmstepd: error: *** STEP 55595933.0 ON maestro-3017 CANCELLED AT 2025-01-10T15:27:25 DUE TO TIME LIMIT ***",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    ]
    cancelled = ["slurmstepd: error: *** JOB 71613 ON rack-iscb-36 CANCELLED AT 2022-03-31T21:25:40 ***"]
    preempted = ["slurmstepd: error: *** JOB 32391783 ON cn119 CANCELLED AT 2021-06-18T13:05:36 DUE TO PREEMPTION ***"]
    endings = classifier.ruleset.endings
    assert not shows_failure(time_limit, endings) and not shows_failure(cancelled, endings)
    assert classifier.classify_bytes("\n".join(preempted)).reason == "job_preempted"  # a rule names it
    assert shows_failure([*time_limit, "RuntimeError: CUDA error: an illegal memory access was encountered"], endings)


def test_the_model_does_not_guess_over_an_end_reported_without_a_cause(tmp_path: Path) -> None:
    """torchrun told to stop by SIGTERM, SageMaker's client saying the job failed: the guide's
    No signature, which a model that always has an answer (threshold 0) must not replace."""
    texts, labels = corpus_texts(("gpu_oom", "syntax_error", "mpi_runtime_failure"), 12)
    path = tmp_path / "m.npz"
    save(FailureTextModel().fit(texts, labels), path, 0.0, {})
    always = Classifier(model=load(path, KNOWN))
    for name in ("torchrun_sigterm_agent_node", "aws_amazon-sagemaker-examples_3444"):
        result = always.classify_path(Path(f"corpora/public/no_signature/{name}.log"))
        assert (result.reason, result.source) == ("no_signature", "none"), name
    # a bare Killed records no failure, but no progress line among the last ones either: a model
    # confident at its own threshold (here 0) may still speak there, not below it
    assert always.classify_path(Path("corpora/public/no_signature/IBM_FfDL_127.log")).source == "model"


def test_the_model_does_not_replace_an_early_exception_with_the_timeouts_it_caused(tmp_path: Path) -> None:
    """One rank's exception, then the other ranks' NCCL watchdog timeouts at the end (real
    lines of two public logs, joined as one job's output): the model reads the end and
    finds the timeouts, which a rule already ranked below the exception; the exception
    stays the answer (principle 1 of the guide). Timeouts alone are still the model's to name."""
    texts, labels = corpus_texts(("gpu_oom", "syntax_error", "mpi_runtime_failure"), 12)
    path = tmp_path / "m.npz"
    save(FailureTextModel().fit(texts, labels), path, 0.0, {})
    always = Classifier(model=load(path, KNOWN))
    exception = Path("corpora/public/semantic_error/BarisYazici_deep-rl-grasping_25.log").read_text()
    timeouts = Path("corpora/public/mpi_runtime_failure/InternRobotics_AnySplat_61.log").read_text()
    assert always.classify_bytes(timeouts).reason == "mpi_runtime_failure"
    result = always.classify_bytes(exception + timeouts)
    assert (result.reason, result.source) == ("semantic_error", "signature")
    assert any(rival.reason == "mpi_runtime_failure" for rival in result.also_matched)


def test_an_error_the_client_retries_is_no_failure_line(classifier: Classifier) -> None:
    """wandb's "entering retry loop" (github.com/uzh-rpg/RVT/issues/40) ends many healthy
    runs' logs when the job is killed from outside: the run went on, nothing failed."""
    retried = "wandb: Network error (TransientError), entering retry loop."
    endings = classifier.ruleset.endings
    assert not shows_failure(["Epoch 54: : 5410it [1:05:34,  4.56it/s, loss=2.18, v_num=3hqp]" + retried], endings)
    assert shows_failure([retried, "RuntimeError: CUDA error: an illegal memory access was encountered"], endings)
