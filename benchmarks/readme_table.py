"""The README's figures are written by the benchmark that measured them: each between its
own markers (``<!-- NAME: begin -->`` ... ``<!-- NAME: end -->``), so that a figure cannot
drift from what the code does."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def write_readme_table(name: str, heading: str, table: list[str]) -> None:
    """Replace what the README holds between NAME's markers with ``heading`` and ``table``."""
    text = README.read_text()
    begin, end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{README}: no {begin} ... {end} markers")
    body = "\n".join([begin, heading, "", *table, end])
    README.write_text(text[: text.index(begin)] + body + text[text.index(end) + len(end) :])
