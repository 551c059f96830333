"""Time stamps of real framework lines (corpora/waste_logs) and of log collectors."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from failclass.waste.timeline import timeline_of


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "2021-01-05 23:30:23 | INFO | fairseq.checkpoint_utils | Preparing to save checkpoint for epoch 70 @ 2162 updates",
            "2021-01-05 23:30:23",
        ),
        (
            "[INFO|trainer.py:2868] 2023-06-07 15:39:20,063 >> Saving model checkpoint to output_dir/checkpoint-200",
            "2023-06-07 15:39:20.063",
        ),
        (
            "[2023-06-07 15:39:21,107] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint global_step200 is about to be saved!",
            "2023-06-07 15:39:21.107",
        ),
        ("[D 2021-02-03 13:25:27.731 ServerApp] Accepting token-authenticated connection from ::1", "2021-02-03 13:25:27.731"),
        ("2024-05-01T12:00:00.123456789Z Downloading shards: 100%", "2024-05-01 12:00:00.123457"),
    ],
)
def test_a_line_takes_the_first_time_in_its_head(line, expected):
    timeline = timeline_of([line])
    assert timeline.timed and timeline.lines[0].ts == pytest.approx(utc(expected), abs=1e-3)


def test_an_offset_is_honoured_and_untimed_lines_inherit():
    timeline = timeline_of(["2024-05-01T14:00:00+02:00 start", "  a continuation", "no time at all"])
    assert [line.ts for line in timeline.lines] == [utc("2024-05-01 12:00:00")] * 3


def test_a_log_without_times_is_untimed_and_a_collector_prefix_is_not_part_of_the_body():
    assert not timeline_of(["Saving checkpoint at 1 epochs"]).timed
    assert math.isnan(timeline_of(["Saving checkpoint at 1 epochs"]).lines[0].ts)
    line = timeline_of(["2024-05-01T12:00:00.000000000Z Downloading shards: 100%"]).lines[0]
    assert line.body == "Downloading shards: 100%"


def test_impossible_dates_are_not_times():
    assert not timeline_of(["2024-13-45 99:99:99 not a time"]).timed


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (  # glog, as Caffe prints it (corpora/waste_logs/loss_progress--caffe-glog-solver.log)
            "I0718 01:35:50.598567 23375 sgd_solver.cpp:105] Iteration 9700, lr = 0.001",
            "2024-07-18 01:35:50.598567",
        ),
        (  # detectron2 (github.com/facebookresearch/detectron2/issues/1563)
            "[06/09 11:05:25 d2.engine.hooks]: Total training time: 0:01:02 (0:00:00 on hooks)",
            "2024-06-09 11:05:25",
        ),
    ],
)
def test_a_time_without_a_year_takes_the_jobs_year(line, expected):
    timeline = timeline_of([line], year_of=utc("2024-03-01 00:00:00"))
    assert timeline.timed and timeline.lines[0].ts == pytest.approx(utc(expected), abs=1e-3)
    assert not timeline_of([line]).timed  # without a job there is no year to give it


def test_a_line_without_a_time_lies_between_its_neighbours_and_after_the_last_anywhere_later():
    lines = timeline_of(["2024-05-01 10:00:00 a\n", "b\r", "c\n", "2024-05-01 10:10:00 d\n", "e\n"]).lines
    assert [(line.text, line.number) for line in lines] == [
        ("2024-05-01 10:00:00 a", 1),
        ("b", 2),
        ("c", 2),
        ("2024-05-01 10:10:00 d", 3),
        ("e", 4),
    ]
    assert [line.until - line.ts for line in lines] == [0.0, 600.0, 600.0, 0.0, math.inf]


def test_tensorflows_evaluation_time_with_a_dash_is_a_time():
    (line,) = timeline_of(["INFO:tensorflow:Starting evaluation at 2024-05-02-02:03:41"]).lines
    assert line.ts == 1714615421.0
