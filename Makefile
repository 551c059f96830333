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
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# PyTorch (CPU wheel) for the scenarios and the Slurm end-to-end tests' real failing launch.
$(TORCH): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,corpus]'
	touch $(TORCH)

demo: $(STAMP)
	$(BIN)/failclass classify samples/*.log
	$(BIN)/failclass waste report samples/gpu/samples.parquet --jobs samples/gpu/jobs.csv --time-limit 8 --top 5

# The Slurm end-to-end tests need Debian's slurm-wlm and munge (about 20 s to install), the
# Prometheus one Debian's prometheus, the HTML report's browser test Debian's chromium; without
# them (no root, no apt) those tests skip and say why.
test: $(TORCH)
	command -v slurmctld >/dev/null || apt-get install -y -q slurm-wlm munge >/dev/null || \
		(apt-get update -q >/dev/null && apt-get install -y -q slurm-wlm munge >/dev/null) || true
	command -v prometheus >/dev/null || apt-get install -y -q prometheus >/dev/null || \
		(apt-get update -q >/dev/null && apt-get install -y -q prometheus >/dev/null) || true
	command -v chromium >/dev/null || apt-get install -y -q chromium >/dev/null || \
		(apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null) || true
	test -x $(VENV)/node/node_modules/.bin/tsc || npm install --silent --no-audit --no-fund --prefix $(VENV)/node \
		typescript@5.9.3 @grafana/schema@13.2.3 >/dev/null || true  # the dashboard's check against Grafana's schema
	$(BIN)/python -m pytest -q

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
	$(BIN)/pip install --quiet ruff mypy types-PyYAML
	$(BIN)/ruff check failclass tests benchmarks corpora/*.py
	$(BIN)/ruff format --check failclass tests benchmarks corpora/*.py
	$(BIN)/mypy --ignore-missing-imports failclass

clean:
	rm -rf $(VENV) .pytest_cache
