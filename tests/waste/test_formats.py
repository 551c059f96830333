"""The signal readers on real output of DCGM exporter and nvidia-smi (corpora/gpu_signals,
each with its source), and their refusals of what no GPU tool prints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from failclass.errors import InputError
from failclass.waste.formats import read_signal
from failclass.waste.formats.parquet import read_parquet, write_parquet
from failclass.waste.measure import Thresholds, measure
from failclass.waste.samples import GpuSamples

SIGNALS = Path(__file__).resolve().parents[2] / "corpora" / "gpu_signals"


def test_a_dcgm_scrape_with_pod_labels_names_the_job_and_the_memory():
    samples = read_signal(SIGNALS / "dcgm_scrape--lke_rtx4000ada_pod_labels.prom")
    assert samples.nodes == ("lke529760-766837-0a634ab30000",)
    assert samples.jobs[samples.job[0]] == "default/cuda-75454ffb9f-8ljq7"
    assert (samples.util[0], samples.mem_used[0]) == (0.0, 1.0)
    assert samples.mem_total[0] == 20473.0  # FB_USED + FB_FREE + FB_RESERVED, as nvidia-smi counts its total


def test_a_busy_t4_scrape_reads_its_utilisation():
    samples = read_signal(SIGNALS / "dcgm_scrape--ericsson_ccd_t4_busy.prom")
    assert (samples.util[0], samples.mem_used[0], samples.mem_total[0]) == (91.0, 5120.0, 5120.0 + 9791.0 + 447.0)


def test_a_scrape_without_free_memory_takes_the_total_of_its_model():
    samples = read_signal(SIGNALS / "dcgm_scrape--issue363_rtxa5000_idle_mem_held.prom")
    assert samples.mem_used[0] == 21383.0 and samples.mem_total[0] == 24 * 1024  # RTX A5000: 24 GB
    assert samples.totals[("k8s-gpu1", 0)].text == "GPU model table (NVIDIA RTX A5000)"


def test_profiling_engine_activity_stands_in_when_the_utilisation_field_is_absent():
    samples = read_signal(SIGNALS / "dcgm_scrape--nvidia_docs_a100_mig_busy.prom")
    assert 99 < samples.util[0] <= 100


def test_an_nvidia_smi_log_reads_every_row_with_its_memory():
    samples = read_signal(SIGNALS / "nvidia_smi--xuesongtap_a10_lms.csv")
    assert len(samples) == 5
    assert samples.mem_used.tolist() == [21, 7, 7, 7, 21]
    assert set(samples.mem_total.tolist()) == {23028.0}
    assert samples.ts[1] - samples.ts[0] == pytest.approx(0.004, abs=1e-3)


def test_the_idle_tail_of_a_real_a100_burst_is_an_idle_slot_at_a_short_threshold():
    samples = read_signal(SIGNALS / "nvidia_smi--a100pcie_lms_burst_end_idle.csv")
    samples = samples.with_jobs(("", "bench"), np.ones(len(samples), dtype=np.int32))
    measured = measure(samples, Thresholds(idle_slot_s=5))
    kinds = measured.intervals.kind.tolist()
    assert kinds == ["idle_slot"]
    zero = np.flatnonzero(samples.util == 0)
    assert (zero == np.arange(zero[0], len(samples))).all()  # the log ends in one idle run
    assert measured.intervals.start[0] == samples.ts[zero[0]]
    assert samples.ts[-1] < measured.intervals.end[0] < samples.ts[-1] + 0.1
    assert "idle_slot" not in measure(samples).intervals.kind.tolist()  # under the 60 s of the definition


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nvidia_smi--omniopt_3xA100_noheader.csv", "not noheader"),
        ("nvidia_smi--bpytop26_gtx1080ti_gtx1060.csv", "missing timestamp"),
        ("prom_range--docs_example.json", "no DCGM_FI_DEV_GPU_UTIL"),
    ],
)
def test_real_files_that_cannot_give_a_series_are_refused_with_the_reason(name, message):
    with pytest.raises(InputError, match=message):
        read_signal(SIGNALS / name)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"timestamp, utilization.gpu [%]\n2024/01/01 00:00:00.000, 150 %\n", "utilisation outside 0-100"),
        (b"timestamp, utilization.gpu [%], memory.used [MiB]\n2024/01/01 00:00:00.000, 5 %, -3 MiB\n", "negative"),
        (b"timestamp, utilization.gpu [%]\n9999/99/99 00:00:00.000, 5 %\n", "timestamp"),
        (b"timestamp, utilization.gpu [%]\n2024/01/01 00:00:00.000, 5 %, 7\n", "3 fields, the header has 2"),
        (b"timestamp, utilization.gpu [%]\n2024/01/01 00:00:00.000, lots\n", "not a number"),
        (b"timestamp, utilization.gpu [%]\n\x00\x00\x00", "NUL bytes"),
        (b"timestamp, utilization.gpu [%]\n\xff\xfe", "not UTF-8"),
        (b'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 1e400\n', "utilisation outside"),
        (b'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1" 5\n', ":1: not a Prometheus sample line"),
        (b'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5\n', "no Hostname/instance or gpu label"),
        (b'{"status": "error", "error": "bad"}', "not a successful Prometheus API answer"),
        (b"PAR1 but not really", "not a readable Parquet file"),
    ],
)
def test_bad_input_is_an_input_error_that_says_what(tmp_path, content, message):
    path = tmp_path / ("signal.csv" if content.startswith(b"timestamp") else "signal.prom")
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_signal(path)


def test_parquet_keeps_every_column(tmp_path):
    rows = [("n1", 0, 1000.0 + i, float(i % 100), 10.0 * i, 40960.0, "job-a" if i < 5 else "job-b") for i in range(10)]
    samples = GpuSamples.from_rows(rows, "test")
    write_parquet(samples, tmp_path / "s.parquet").close()
    back = read_parquet(tmp_path / "s.parquet")
    assert [back.jobs[j] for j in back.job] == [r[6] for r in rows]
    assert back.util.tolist() == [r[3] for r in rows] and back.mem_used.tolist() == [r[4] for r in rows]
    assert back.ts.tolist() == [r[2] for r in rows]


def test_a_truncated_parquet_file_is_an_input_error(tmp_path):
    rows = [("n1", 0, 1000.0 + i, 50.0, 1.0, 2.0, "j") for i in range(1000)]
    write_parquet(GpuSamples.from_rows(rows, "test"), tmp_path / "s.parquet").close()
    data = (tmp_path / "s.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError):
        read_signal(tmp_path / "cut.parquet")
