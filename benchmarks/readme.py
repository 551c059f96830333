"""Writing a benchmark's table into the README, between its markers, so that a figure
there is always one a benchmark printed."""

from __future__ import annotations

import argparse
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_options(parser: argparse.ArgumentParser, name: str) -> None:
    """``--readme WHAT`` (write the table, saying WHAT was measured) and ``--name MARKER``."""
    parser.add_argument("--readme", metavar="WHAT", help="write the table into README.md, saying WHAT was measured")
    parser.add_argument("--name", default=name, help=f"the README markers' name (default {name})")


def write_table(args: argparse.Namespace, script: str, rows: list[str], detail: str = "") -> None:
    """With ``--readme``, the table under a line naming the script that wrote it and what it measured."""
    if args.readme is not None:
        said = f"{args.readme}; {detail}" if detail else args.readme
        write_between(args.name, [f"Written by `{script} --readme` ({said}):", "", *rows])


def write_between(name: str, lines: list[str]) -> None:
    """Replace what stands between ``<!-- NAME: begin -->`` and ``<!-- NAME: end -->``."""
    text = README.read_text()
    begin, end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{README}: no {begin} ... {end} markers")
    body = "\n".join([begin, *lines, end])
    README.write_text(text[: text.index(begin)] + body + text[text.index(end) + len(end) :])
