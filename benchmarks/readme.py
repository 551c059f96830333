"""Writing a benchmark's table into the README, between its markers, so that a figure
there is always one a benchmark printed."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def write_between(name: str, lines: list[str]) -> None:
    """Replace what stands between ``<!-- NAME: begin -->`` and ``<!-- NAME: end -->``."""
    text = README.read_text()
    begin, end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{README}: no {begin} ... {end} markers")
    body = "\n".join([begin, *lines, end])
    README.write_text(text[: text.index(begin)] + body + text[text.index(end) + len(end) :])
