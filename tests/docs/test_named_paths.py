"""The docs name files that exist: every `failclass/...`, `benchmarks/...`, `corpora/...` or
`tests/...` path written in backticks in the project's Markdown is there (a moved module
leaves no stale pointer behind)."""

from __future__ import annotations

import re

from conftest import ROOT

PLACEHOLDER = re.compile(r"[*<]|\b[A-Z]{3,}\b")  # `signatures/REASON.yaml`, `logs/<job>.log`: a name to fill in
PATH = re.compile(
    r"`((?:failclass|benchmarks|corpora|tests|samples)/[A-Za-z0-9_./-]+\.(?:py|yaml|yml|json|md|j2|sh|csv|log|txt))`"
)


def tracked_markdown() -> list[str]:
    """The project's own Markdown: the checkout's, not what a build, the venv or a tool put there."""
    skip = {".venv", "build", "dist", "node_modules", ".git", ".pytest_cache"}
    return sorted(str(path.relative_to(ROOT)) for path in ROOT.rglob("*.md") if not skip & set(path.relative_to(ROOT).parts))


def test_every_file_path_the_docs_name_exists() -> None:
    missing = [
        f"{doc}: {path}"
        for doc in tracked_markdown()
        for path in PATH.findall((ROOT / doc).read_text(encoding="utf-8"))
        if not PLACEHOLDER.search(path) and not (ROOT / path).exists()
    ]
    assert not missing, "\n".join(missing)


def test_every_environment_variable_the_docs_name_is_read() -> None:
    """A FAILCLASS_* variable in the Markdown is read somewhere: by the package (its settings
    take FAILCLASS_ + the field's name), or by the Makefile, CI or the test set-up."""
    from failclass.service.settings import Settings

    named = {name for doc in tracked_markdown() for name in re.findall(r"\bFAILCLASS_[A-Z0-9_]+\b", (ROOT / doc).read_text())}
    sources = [
        *sorted((ROOT / "failclass").rglob("*.py")),
        ROOT / "Makefile",
        ROOT / ".ci" / "run",
        ROOT / "tests" / "conftest.py",
    ]
    read = "\n".join(path.read_text(encoding="utf-8") for path in sources)
    settings = {f"FAILCLASS_{field.upper()}" for field in Settings.model_fields}
    assert sorted(name for name in named if name not in read and name not in settings) == []
