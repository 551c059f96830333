"""A GPU's memory total from each source, in order (its readings, its model through the GPU
model table, the operator's option), and the report's line and field when none has one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import run_cli

from failclass.errors import ConfigError
from failclass.waste.formats import read_signal
from failclass.waste.memory import GPU_MODELS, coverage, describe, fill, gpu_models, model_of
from failclass.waste.samples import GpuSamples, TotalOrigin

ROOT = Path(__file__).resolve().parents[2]
SIGNALS = ROOT / "corpora" / "gpu_signals"
H200 = ROOT / "corpora" / "gpu_recordings" / "h200_2026-11-28_a" / "signals" / "vm--nvidia-smi-lms200.csv"


def origin(samples: GpuSamples) -> str:
    (only,) = samples.totals.values()
    return only.text


def test_dcgm_used_plus_free_plus_reserved():
    samples = read_signal(SIGNALS / "dcgm_scrape--ericsson_ccd_t4_busy.prom")
    assert samples.mem_total[0] == 5120 + 9791 + 447 and origin(samples) == "DCGM FB_USED + FB_FREE + FB_RESERVED"
    samples = read_signal(SIGNALS / "dcgm_scrape--nvidia_docs_a100_mig_busy.prom")  # no FB_RESERVED series
    assert samples.mem_total[0] == 4845 + 35690 and origin(samples) == "DCGM FB_USED + FB_FREE"


def test_dcgm_used_alone_takes_the_model_named_by_the_modelname_label():
    samples = read_signal(SIGNALS / "dcgm_scrape--issue363_rtxa5000_idle_mem_held.prom")
    assert samples.mem_total[0] == 24 * 1024 and origin(samples) == "GPU model table (NVIDIA RTX A5000)"


def test_dcgm_used_alone_without_a_known_model_says_why(tmp_path):
    scrape = (SIGNALS / "dcgm_scrape--issue363_rtxa5000_idle_mem_held.prom").read_text()
    unlabelled = tmp_path / "scrape.prom"
    unlabelled.write_text(scrape.replace('modelName="NVIDIA RTX A5000",', ""))
    samples = read_signal(unlabelled)
    assert math.isnan(samples.mem_total[0])
    (why,) = samples.totals.values()
    assert not why.known and why.text == "DCGM_FI_DEV_FB_USED without DCGM_FI_DEV_FB_FREE, and no modelName label"


def test_nvidia_smi_memory_total_and_used_plus_free():
    assert origin(read_signal(H200)) == "nvidia-smi memory.total"
    assert read_signal(H200).mem_total[0] == 143771


def test_nvidia_smi_with_only_a_name_takes_its_model(tmp_path):
    # the real H200 log, cut to the columns a log without memory.total would have
    lines = H200.read_text().splitlines()[:20]
    keep = [0, 1, 2, 5, 8]  # timestamp, index, name, utilization.gpu, memory.used
    cut = tmp_path / "vm--cut.csv"
    cut.write_text("\n".join(", ".join(line.split(", ")[i] for i in keep) for line in lines) + "\n")
    samples = read_signal(cut)
    assert samples.mem_total[0] == 143771 and origin(samples) == "GPU model table (NVIDIA H200)"


def test_nvidia_smi_without_memory_columns_or_name_has_no_total():
    samples = read_signal(SIGNALS / "nvidia_smi--a100pcie_lms_burst_start.csv")
    assert np.isnan(samples.mem_total).all()
    assert origin(samples) == "an nvidia-smi log without memory.total or memory.free, and no name column"


def test_the_option_fills_what_no_source_gave_and_a_gpu_keeps_its_own_total():
    rows = [("n1", 0, 0.0, 50.0, 100.0, math.nan, "j"), ("n1", 0, 10.0, 50.0, 100.0, 16384.0, "j")]
    rows += [("n2", 0, 0.0, 50.0, 100.0, math.nan, "j")]
    totals = {("n1", 0): TotalOrigin(True, "x"), ("n2", 0): TotalOrigin(False, "none")}
    samples = GpuSamples.from_rows(rows, "t", totals)
    assert fill(samples, None).mem_total.tolist()[:2] == [16384.0, 16384.0]  # the same GPU's other reading
    filled = fill(samples, 40960.0)
    assert filled.mem_total[2] == 40960.0 and filled.totals[("n2", 0)] == TotalOrigin(True, "--gpu-memory-mib")


def test_the_missing_totals_are_one_line_naming_the_gpus_the_reason_and_the_figures():
    cover = coverage({("n1", 0): TotalOrigin(True, "nvidia-smi memory.total"), ("n2", 1): TotalOrigin(False, "no reason")})
    assert (cover.gpus, cover.known, cover.missing[0].examples) == (2, 1, ["n2:1"])
    line = describe(cover)
    assert line.startswith("memory total unknown for 1 of 2 GPUs: no reason (1 GPUs: n2:1). Not measured for them: stable phases")
    assert line.endswith("give --gpu-memory-mib") and "\n" not in line
    assert describe(coverage({("n1", 0): TotalOrigin(True, "x")})) == ""


# Names real GPUs report, each from real output: the left column is the name, the right
# the table's model it must find.
REPORTED = [
    ("NVIDIA H200", "NVIDIA H200"),  # corpora/gpu_recordings/h200_2026-11-28_a (nvidia-smi, recorded here)
    (
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H100 (SXM5 and PCIe)",
    ),  # https://huggingface.co/datasets/blorg469/deepfaketar/raw/main/slurm-1181.out
    (
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA A100 80GB",
    ),  # https://gist.github.com/gengwg/3520df2ebf8872e5ee4818367e3a4122 (deviceQuery)
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"),  # corpora/gpu_signals/nvidia_smi--omniopt_3xA100_noheader.csv
    (
        "NVIDIA A100-PCIE-40GB",
        "NVIDIA A100 40GB",
    ),  # https://huggingface.co/PrunaAI/mattshumer-Llama-3-8B-16K-HQQ-4bit-smashed/blob/521a1ba996efcc53055694ac9f876f5f24a236e3/results.json
    ("Tesla T4", "NVIDIA T4"),  # corpora/gpu_signals/dcgm_scrape--ericsson_ccd_t4_busy.prom
    ("NVIDIA RTX A5000", "NVIDIA RTX A5000"),  # corpora/gpu_signals/dcgm_scrape--issue363_rtxa5000_idle_mem_held.prom
    (
        "NVIDIA RTX 4000 Ada Generation",
        "NVIDIA RTX 4000 Ada Generation",
    ),  # corpora/gpu_signals/dcgm_scrape--lke_rtx4000ada_pod_labels.prom
    ("GeForce GTX 1080 Ti", None),  # corpora/gpu_signals/nvidia_smi--bpytop26_gtx1080ti_gtx1060.csv: not in the table
]


@pytest.mark.parametrize(("reported", "model"), REPORTED)
def test_reported_names_find_their_model(reported, model):
    found = model_of(reported)
    assert (found.name if found else None) == model


def test_a_size_the_name_does_not_say_is_not_guessed():
    assert model_of("NVIDIA A100") is None and model_of("Tesla V100") is None  # 40 or 80, 16 or 32 GB


def test_the_table_estimates_are_close_to_what_real_gpus_of_the_model_report():
    """The datasheet's GB x 1024 against the totals seen in this repository's real output."""
    seen = {"NVIDIA RTX 4000 Ada Generation": 20015 + 1 + 457, "NVIDIA T4": 9791 + 5120 + 447}  # FB_FREE + USED + RESERVED
    for name, mib in seen.items():
        (model,) = [m for m in gpu_models() if m.name == name]
        assert abs(model.mib - mib) / mib < 0.07


def test_every_model_has_a_source_and_each_reported_total_is_in_its_file():
    names = [model.name for model in gpu_models()]
    assert len(set(names)) == len(names)
    for model in gpu_models():
        assert model.source.startswith("https://")
        if model.reported_source:
            assert str(int(model.reported_mib or 0)) in (ROOT / model.reported_source).read_text(), model.name


def test_a_broken_table_names_the_file_the_row_and_the_key(tmp_path):
    document = yaml.safe_load(GPU_MODELS.read_text())
    document["models"][2]["memory_gib"] = 80
    broken = tmp_path / "models.yaml"
    broken.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as refused:
        gpu_models(broken)
    known = "['match', 'memory_gb', 'name', 'reported_mib', 'reported_source', 'source']"
    assert str(refused.value) == f"{broken}: models[2]: unknown keys ['memory_gib']; known: {known}"
    document["models"][2].pop("memory_gib")
    document["models"][2]["reported_mib"] = 81920
    broken.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as refused:
        gpu_models(broken)
    assert str(refused.value) == f"{broken}: models[2]: reported_mib and reported_source go together"


def test_the_report_says_which_figures_are_missing_and_the_option_fills_them(tmp_path):
    log = tmp_path / "gpu07.csv"
    log.write_bytes((SIGNALS / "nvidia_smi--a100pcie_lms_burst_start.csv").read_bytes())
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job,user,gpus\nbench,ana,gpu07:0\n")
    text = run_cli("waste", "report", str(log), "--jobs", str(jobs))
    assert text.returncode == 0, text.stderr
    (line,) = [line for line in text.stdout.splitlines() if "memory total unknown" in line]
    assert "1 of 1 GPUs: an nvidia-smi log without memory.total or memory.free, and no name column (1 GPUs: gpu07:0)" in line
    done = run_cli("waste", "report", str(log), "--jobs", str(jobs), "--format", "json")
    memory = json.loads(done.stdout)["inputs"]["memory_total"]
    assert (memory["gpus"], memory["known"], memory["missing"][0]["examples"]) == (1, 0, ["gpu07:0"])
    assert memory["figures_missing"].startswith("stable phases")
    done = run_cli("waste", "report", str(log), "--jobs", str(jobs), "--format", "json", "--gpu-memory-mib", "40960")
    memory = json.loads(done.stdout)["inputs"]["memory_total"]
    assert (memory["missing"], memory["sources"], memory["figures_missing"]) == ([], {"--gpu-memory-mib": 1}, "")
