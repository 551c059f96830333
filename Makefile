# Everything a fresh machine needs: a virtualenv with the project and its test tools.
# `make demo` and `make test` (the README's two commands) set up on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH := $(VENV)/.installed-torch

.PHONY: demo test bench lint clean corpus train evaluate

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# PyTorch's CPU build, for the scenarios and the Slurm end-to-end tests' real failing launch.
# PyPI's Linux wheel is the CUDA build (2.7 GB more), so the CPU one comes from a folder of
# wheels where the machine has it (TORCH_WHEELS), else from PyTorch's own CPU index.
TORCH_CPU := torch==2.13.0+cpu
TORCH_WHEELS ?= /opt/wheels
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_SOURCE := $(if $(wildcard $(TORCH_WHEELS)/torch-2.13.0+cpu-*.whl),--find-links $(TORCH_WHEELS),--extra-index-url $(TORCH_INDEX))
$(TORCH): $(STAMP)
	$(BIN)/pip install --quiet $(TORCH_SOURCE) '$(TORCH_CPU)'
	$(BIN)/pip install --quiet -e '.[dev,corpus]'
	touch $(TORCH)

demo: $(STAMP)
	$(BIN)/failclass classify samples/*.log
	$(BIN)/failclass waste report samples/gpu/samples.parquet --jobs samples/gpu/jobs.csv --time-limit 8 --top 5

# The end-to-end tests' system tools (Slurm, promtool, Chromium, TypeScript with Grafana's
# schema) are installed on first use; one that cannot be is named in a warning, and its
# tests skip saying why (tests/install_tools.sh).
test: $(TORCH)
	tests/install_tools.sh
	$(BIN)/python -m pytest -q -n auto --dist loadgroup

# Regenerate the produced corpus (real failing programs; needs gcc, OpenMPI, root for the
# cgroup OOM scenario) and the manifest; then retrain the fallback model.
corpus: $(TORCH)
	command -v mpirun >/dev/null || apt-get install -y openmpi-bin libopenmpi-dev
	$(BIN)/python corpora/build.py

train: $(STAMP)
	$(BIN)/failclass train

evaluate: $(STAMP)
	$(BIN)/failclass evaluate --folds
	$(BIN)/failclass evaluate --split test
	$(BIN)/failclass evaluate --split holdout

bench: $(STAMP)
	command -v rg >/dev/null || apt-get install -y ripgrep
	$(BIN)/python benchmarks/engine_throughput.py
	$(BIN)/python benchmarks/fallback_cost.py
	command -v wrk >/dev/null || apt-get install -y wrk
	$(BIN)/python benchmarks/service_load.py --postgres
	$(BIN)/python benchmarks/analytics_scale.py
	$(BIN)/python benchmarks/batch_archive.py
	$(BIN)/pip install --quiet duckdb
	$(BIN)/python benchmarks/waste_scale.py

lint: $(STAMP)
	$(BIN)/ruff check failclass tests benchmarks corpora/*.py
	$(BIN)/ruff format --check failclass tests benchmarks corpora/*.py
	$(BIN)/mypy failclass

clean:
	rm -rf $(VENV) .pytest_cache
