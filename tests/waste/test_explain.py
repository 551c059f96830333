"""Explanations: the job's log laid over an interval, the series conditions, and the
evidence lines that go with them (lines from corpora/waste_logs)."""

from __future__ import annotations

from failclass.waste.allocation import JobAllocation
from failclass.waste.causes import load_causes
from failclass.waste.explain import explain
from failclass.waste.measure import Thresholds, measure
from failclass.waste.report import interval_rows
from failclass.waste.samples import GpuSamples
from failclass.waste.timeline import timeline_of

TOTAL = 40960.0
CHECKPOINT = "2021-07-14 13:52:35,974 - mmcls - INFO - Saving checkpoint at 1 epochs"  # mmcv, mmpretrain#360
FINISHED = "`Trainer.fit` stopped: `max_steps=400000` reached."  # Lightning, RVT


def drop_job(start: float = 1_626_270_000.0):
    """A GPU at 90 % with a 3-minute drop to 0 % (memory held) 30 minutes in."""
    rows = []
    for i in range(240):
        util = 0.0 if 120 <= i < 132 else 90.0
        rows.append(("n1", 0, start + 15 * i, util, 30000.0, TOTAL, "job"))
    return GpuSamples.from_rows(rows, "t")


def causes_of(samples, log_lines, kind="batch"):
    measured = measure(samples, Thresholds())
    timelines = {"job": timeline_of(log_lines)} if log_lines is not None else {}
    jobs = {"job": JobAllocation("job", kind=kind)}
    return [(measured.intervals.kind[e.interval], e.cause, e.evidence) for e in explain(measured, load_causes(), jobs, timelines)]


def test_a_checkpoint_save_inside_a_low_phase_explains_it_with_the_line():
    # 13:52:35 UTC is 1626270755; the drop starts at 1626270000 + 1800
    samples = drop_job(start=1_626_270_755.0 - 1800)
    assert causes_of(samples, ["2021-07-14 13:40:00,000 - mmcls - INFO - Epoch [1][10/35]", CHECKPOINT]) == [
        ("low_phase", "model_checkpointing", (CHECKPOINT,))
    ]


def test_the_same_line_an_hour_away_explains_nothing():
    samples = drop_job(start=1_626_270_755.0 - 1800 + 3600)
    assert causes_of(samples, [CHECKPOINT]) == [("low_phase", "", ())]


def test_an_untimed_line_counts_only_where_its_cause_allows():
    """A checkpoint save with no time may explain any low phase of its job; an install with
    no time only one at the job's start (it was printed before training)."""
    samples = drop_job()  # its low phase is 30 minutes in
    assert causes_of(samples, ["Saving checkpoint at 1 epochs"]) == [
        ("low_phase", "model_checkpointing", ("Saving checkpoint at 1 epochs",))
    ]
    install = "Successfully installed numpy-2.4.6 pandas-3.1.1 python-dateutil-4.0.0 tzdata-2026.6"  # waste_logs, recorded
    assert causes_of(samples, [install]) == [("low_phase", "", ())]


def test_a_finished_run_that_keeps_its_gpus_is_an_unreleased_job():
    start = 1_700_000_000.0
    rows = [("n1", 0, start + 15 * i, 90.0 if i < 100 else 0.0, 30000.0 if i < 100 else 0.0, TOTAL, "job") for i in range(240)]
    stamp = "2023-11-14T22:38:05.000000000Z"  # 1700000000 + 1485 s: just before the GPU goes idle
    found = causes_of(GpuSamples.from_rows(rows, "t"), [f"{stamp} {FINISHED}"])
    assert found == [("idle_slot", "unreleased_job", (f"{stamp} {FINISHED}",))]


def test_an_interactive_job_declared_in_the_jobs_file_explains_its_idle_time_without_a_log():
    start = 1_700_000_000.0
    rows = [("n1", 0, start + 15 * i, 40.0 if i < 100 else 0.0, 9000.0 if i < 100 else 0.0, TOTAL, "job") for i in range(240)]
    found = causes_of(GpuSamples.from_rows(rows, "t"), None, kind="interactive")
    assert ("idle_slot", "interactive_job", ("the jobs file declares the job interactive",)) in found


def test_memory_and_compute_both_low_is_an_improper_batch_size():
    rows = [("n1", 0, 1_700_000_000.0 + 15 * i, 30.0, 8000.0, TOTAL, "job") for i in range(240)]
    assert causes_of(GpuSamples.from_rows(rows, "t"), []) == [("low_phase", "improper_batch_size", ())]


def test_a_never_used_gpu_beside_a_busy_one_is_oversubscription_and_alone_a_non_dl_job():
    busy = [("n1", 0, 1_700_000_000.0 + 15 * i, 90.0, 30000.0, TOTAL, "job") for i in range(100)]
    unused = [("n1", 1, 1_700_000_000.0 + 15 * i, 0.0, 0.0, TOTAL, "job") for i in range(100)]
    assert causes_of(GpuSamples.from_rows(busy + unused, "t"), []) == [("never_used", "gpu_oversubscription", ())]
    assert causes_of(GpuSamples.from_rows(unused, "t"), []) == [("never_used", "non_dl_job", ())]


def test_one_never_used_gpu_of_eight_busy_ones_is_no_oversubscription_the_job_is_not_low():
    """Its U is 79 %: a cause explains low utilisation, and this job's is not low."""
    busy = [("n1", g, 1_700_000_000.0 + 15 * i, 90.0, 30000.0, TOTAL, "job") for g in range(7) for i in range(100)]
    unused = [("n1", 7, 1_700_000_000.0 + 15 * i, 0.0, 0.0, TOTAL, "job") for i in range(100)]
    assert causes_of(GpuSamples.from_rows(busy + unused, "t"), []) == [("never_used", "", ())]


def test_a_short_low_start_before_busy_training_is_no_improper_batch_size():
    """Five minutes at 5 % (imports, CUDA set-up) then an hour at 90 %: the low phase is
    no steady state, so neither memory cause explains it."""
    start = 1_700_000_000.0
    rows = [("n1", 0, start + 15 * i, 5.0 if i < 20 else 90.0, 2000.0 if i < 20 else 30000.0, TOTAL, "job") for i in range(260)]
    assert causes_of(GpuSamples.from_rows(rows, "t"), []) == [("low_phase", "", ())]


def test_a_log_silent_from_an_idle_tail_to_the_end_is_an_unreleased_job_without_a_finish_line():
    """The run printed its last line, then held its GPU idle to the job's end: whatever the
    last line's wording, the job no longer used what it held (fairseq's line,
    github.com/facebookresearch/fairseq/issues/2681)."""
    last = "2020-10-01 11:52:42 | INFO | train_inner | epoch 001:      2 / 78 loss=0.981, ppl=1.97, wps=2233.4, ups=2.18, wpb=1024, bsz=8, num_updates=2, lr=3.4995e-07, gnorm=0.067, train_wall=0, wall=8"
    start = 1_601_553_162.0 - 1500  # 11:52:42 UTC: the GPU goes idle just after it
    rows = [("n1", 0, start + 15 * i, 90.0 if i < 101 else 0.0, 30000.0 if i < 101 else 0.0, TOTAL, "job") for i in range(240)]
    found = causes_of(GpuSamples.from_rows(rows, "t"), [last])
    assert found == [
        ("idle_slot", "unreleased_job", (f"the log prints nothing after its line at 2020-10-01T11:52:42+00:00: {last}",))
    ]
    later = [(node, gpu, ts + 1800, *rest) for node, gpu, ts, *rest in rows]  # idle only 30 minutes after its last line
    assert causes_of(GpuSamples.from_rows(later, "t"), [last])[0][1] == ""


def test_a_save_in_the_middle_of_a_long_low_phase_does_not_explain_it():
    """A checkpoint pause begins with its save line (or ends with "saved ... writing took");
    one save an hour into a two-hour low phase is no cause of the phase."""
    start = 1_626_270_755.0 - 3600 - 1800  # the phase: 30 min to 150 min; the line at 90 min
    rows = [("n1", 0, start + 15 * i, 5.0 if 120 <= i < 600 else 90.0, 30000.0, TOTAL, "job") for i in range(700)]
    assert causes_of(GpuSamples.from_rows(rows, "t"), [CHECKPOINT])[0][:2] == ("low_phase", "")


def test_a_gpu_that_works_at_full_speed_between_pauses_has_no_improper_batch_size():
    """Low on average, but its readings reach 90 %: the pauses make it low, not the batch."""
    rows = [("n1", 0, 1_700_000_000.0 + 15 * i, 90.0 if i % 5 == 0 else 5.0, 8000.0, TOTAL, "job") for i in range(240)]
    assert all(cause != "improper_batch_size" for _, cause, _ in causes_of(GpuSamples.from_rows(rows, "t"), []))


def test_a_save_line_at_a_pause_where_the_gpu_still_computes_is_no_checkpoint():
    """A checkpoint save stalls the GPU: a phase at 30 % with a save line at its edge is a
    slower stretch of training, not the save."""
    start = 1_626_270_755.0 - 1800
    rows = [("n1", 0, start + 15 * i, 30.0 if 120 <= i < 132 else 90.0, 8000.0, TOTAL, "job") for i in range(240)]
    found = causes_of(GpuSamples.from_rows(rows, "t"), [CHECKPOINT])
    assert [cause for _, cause, _ in found] != ["model_checkpointing"]


def test_an_explanation_states_its_confidence_and_the_line_numbers_of_its_evidence():
    samples = drop_job(start=1_626_270_755.0 - 1800)
    measured = measure(samples, Thresholds())
    lines = ["2021-07-14 13:40:00,000 - mmcls - INFO - Epoch [1][10/35]", CHECKPOINT]
    (found,) = explain(measured, load_causes(), {"job": JobAllocation("job")}, {"job": timeline_of(lines)})
    assert (found.cause, found.lines, found.confidence) == ("model_checkpointing", (2,), "high")
    untimed = explain(
        measured, load_causes(), {"job": JobAllocation("job")}, {"job": timeline_of(["Saving checkpoint at 1 epochs"])}
    )
    assert (untimed[0].cause, untimed[0].confidence) == ("model_checkpointing", "medium")


def test_a_series_only_cause_states_what_the_series_show():
    rows = [("n1", 0, 1_700_000_000.0 + 15 * i, 30.0, 8000.0, TOTAL, "job") for i in range(240)]
    measured = measure(GpuSamples.from_rows(rows, "t"), Thresholds())
    (found,) = explain(measured, load_causes(), {"job": JobAllocation("job")}, {})
    assert found.cause == "improper_batch_size" and found.confidence == "medium"
    assert "peak memory 20% of total" in found.basis and "90th percentile 30%" in found.basis


def test_a_phase_reads_as_one_line_with_job_gpu_times_cause_util_memory_confidence_and_evidence():
    samples = drop_job(start=1_626_270_755.0 - 1800)
    measured = measure(samples, Thresholds())
    lines = ["2021-07-14 13:40:00,000 - mmcls - INFO - Epoch [1][10/35]", CHECKPOINT]
    (row,) = interval_rows(measured, explain(measured, load_causes(), {"job": JobAllocation("job")}, {"job": timeline_of(lines)}))
    assert row.summary == (
        "job job, GPU n1:0, 13:52-13:55: model checkpointing, 0% util, 29.3 GB,"
        f" confidence high (a line whose time places it), evidence: line 2: {CHECKPOINT}"
    )
