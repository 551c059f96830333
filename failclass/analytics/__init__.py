"""Reports over classified attempts: manifests, batch results or the store read as
columns (``records``, in parts on an executor's workers: ``parts``), and the study's
tables computed over them (``columns``, ``report``, ``ettr``)."""

PART_BYTES = 32 << 20  # of a JSON Lines manifest, or of a Parquet one's row groups uncompressed, read as one part
