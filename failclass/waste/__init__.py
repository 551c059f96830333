"""GPU time held but not used: read utilisation signals, measure idle slots, never-used
GPUs and low utilisation per job, explain each low interval from the job's log, and turn
it into advice and scheduler signals.

The pipeline: ``formats`` (DCGM scrapes, Prometheus range queries, nvidia-smi CSV,
Parquet) → ``samples`` (one columnar table) → ``allocation`` (which job held which GPU
when) → ``measure`` (U, idle slots, stable phases, drops) → ``explain`` (causes from
the aligned log and the series) → ``report``. A Parquet table is measured in parts of
whole jobs (``analyse``), here or on an executor's workers.
"""

PART_ROWS = 2_000_000  # readings in a part of a Parquet table: about 400 MB while it is measured
