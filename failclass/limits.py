"""Every limit failclass enforces at its edges, in one place: how much of a log is read and
kept, how large an input may be, what the store can hold. The README's Limits table is
checked against these values (tests/architecture/test_limits.py). The service's request
and page limits are defaults its settings may change (FAILCLASS_MAX_REQUEST_BYTES,
FAILCLASS_MAX_PAGE)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    read_block_bytes: int = 1 << 20  # logs stream in blocks; memory does not grow with the log
    scanned_line_bytes: int = 4 << 20  # a longer line is scanned in pieces of this size
    evidence_chars: int = 600  # evidence text kept around a match on one line
    evidence_lines: int = 5  # evidence lines in one answer
    model_tail_bytes: int = 64 << 10  # what the fallback model reads: the end of the log
    region_lines: int = 150  # of it, the last non-blank lines
    label_bytes: int = 8 << 20  # of a labelled log, the end kept for training
    stream_log_bytes: int = 2 << 30  # a log from a pipe, FIFO or standard input, whose end may never come
    request_bytes: int = 16 << 20  # an HTTP request body (413 beyond)
    page_rows: int = 1000  # rows of one listing
    archive_member_bytes: int = 2 << 30  # one member of an archive, uncompressed
    zip_ratio: int = 1000  # a zip member's size against its compressed size
    batch_in_memory_bytes: int = 64 << 20  # a batch member read whole; larger ones stream
    waste_text_bytes: int = 1 << 30  # a text signal file (larger series belong in Parquet)
    waste_jobs_file_bytes: int = 256 << 20
    waste_log_files: int = 100_000  # in a --logs folder
    waste_log_lines: int = 200_000  # evidence and loss lines kept from one job's log
    waste_line_chars: int = 4096  # of each of them
    prometheus_points_per_series: int = 11_000  # steps of one range query (Prometheus refuses more)
    prometheus_series_per_query: int = 1000  # a selector matching more is asked a group of hosts at a time
    prometheus_window_points: int = 5_000_000  # readings of one time window over every series, held at once
    prometheus_queries: int = 100_000  # range queries of one report (beyond: a larger --step or a shorter range)
    container_log_lines: int = 20_000  # of a failed container's log, the end the controller reads
    container_log_bytes: int = 16 << 20
    k8s_explanation_chars: int = 1000  # of the decision's message, written on the Job
    slurm_comment_chars: int = 250  # of the decision, written in the job's comment
    int32_min: int = -(2**31)  # the store's INTEGER columns (PostgreSQL: 4 bytes)
    int32_max: int = 2**31 - 1


LIMITS = Limits()
