"""The README's command table names commands and options that exist: each row's command
answers `--help`, and every option the row shows is in that help (as sqlite-utils tests
its own docs)."""

from __future__ import annotations

import re

from conftest import ROOT, run_cli

README = (ROOT / "README.md").read_text()
GLOBAL = {"--rules-dir", "--model", "--no-model", "--model-threshold"}  # options of `failclass` itself


def rows() -> list[tuple[list[str], set[str]]]:
    """(the command's words, the options the row shows) for each row of the command table."""
    table = README.split("\n## Commands", 1)[1].split("\n## ", 1)[0] if "\n## Commands" in README else README
    found = []
    for line in table.splitlines():
        if not line.startswith("| `failclass "):
            continue
        cell = line.split("|")[1]
        text = cell.split("`")[1]
        words = [w for w in text.split()[1:] if re.fullmatch(r"[a-z][a-z-]*", w)]
        found.append((words, set(re.findall(r"--[a-z][a-z-]*", cell))))
    return found


def test_every_command_and_option_the_readme_shows_exists() -> None:
    checked = rows()
    assert len(checked) >= 20
    for words, shown in checked:
        done = run_cli(*words, "--help")
        assert done.returncode == 0, f"failclass {' '.join(words)} --help: {done.stderr}"
        missing = {option for option in shown - GLOBAL if option not in done.stdout}
        assert not missing, f"failclass {' '.join(words)}: the README shows {sorted(missing)}, its --help does not"
    top = run_cli("--help").stdout
    assert all(option in top for option in GLOBAL)
