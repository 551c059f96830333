"""Every data file loads through one schema style (failclass.schema): the bundled files
load, and a bad file is refused in one line, `file: key.path: problem`, with exit status 2
where the command line reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from failclass.errors import ConfigError
from failclass.matching.patterns import load_prefixes
from failclass.matching.taxonomy import BUILTIN_DIR, load_taxonomy
from failclass.policy.config import load_policy
from failclass.resources import PACKAGE_DATA
from failclass.schema import load
from failclass.waste.causes import load_causes
from failclass.waste.generate import LinesFile
from failclass.waste.memory import gpu_models
from failclass.waste.mig import mig_models

ROOT = Path(__file__).resolve().parents[2]
CAUSE = "{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot]"  # a cause, its mapping left open
SIGNAL = ROOT / "corpora" / "gpu_signals" / "nvidia_smi--xuesongtap_a10_lms.csv"
OPERATOR_RULE = """
reason: gpu_oom
rules:
  - id: gpu_oom.site_allocator
    kind: explicit
    description: Our in-house allocator gave up.
    exception: {types: [RuntimeError], message: 'acme-alloc: (device( heap)+)+ exhausted'}
    examples:
      positive:
        - source: scenario:site_allocator
          text: "acme-alloc: device heap exhausted on gpu 3"
"""


def test_the_bundled_data_files_all_load_and_each_generator_line_is_in_its_source() -> None:
    assert load_causes() and gpu_models() and mig_models() and load_policy()
    assert "no_signature" in load_taxonomy(BUILTIN_DIR / "taxonomy.yaml")
    assert load_prefixes(BUILTIN_DIR / "prefixes.yaml")
    lines = load(PACKAGE_DATA / "waste" / "lines.yaml", LinesFile, "the generator's log lines")
    for event, listed in lines.events.items():
        for line in listed:
            assert line.text in (ROOT / "corpora" / "waste_logs" / line.source).read_text(), (event, line.source)
    done = run_cli("waste", "check-causes")
    assert done.returncode == 0 and done.stdout.startswith(f"{PACKAGE_DATA / 'waste' / 'causes.yaml'}: ok ("), done.stderr


@pytest.mark.parametrize(
    ("cause", "line"),
    [
        # a string where a list of patterns is due was three one-character patterns
        ("log: {where: during, patterns: 'abc'}", "causes[0].log.patterns: 'abc' is not a list"),
        # a series condition's "no" was true (bool("no"))
        ("series: {other_gpus_used: 'no'}", "causes[0].series.other_gpus_used: 'no' is not true or false"),
        ("certainty: 0.9, declared_kind: batch", "causes[0]: unknown keys ['certainty']; known: ['confidence', "
         "'declared_kind', 'detectable', 'dimension', 'fix', 'id', 'intervals', 'log', 'name', 'series', 'sources']"),
        ("confidence: 0.9, declared_kind: batch", "causes[0].confidence: 0.9 is not text"),
        (
            "log: {where: during, patterns: ['Saving (model( checkpoint)+)+']}",
            "causes[0].log.patterns[0]: 'Saving (model( checkpoint)+)+' nests unbounded quantifiers (catastrophic backtracking)",
        ),
    ],
)  # fmt: skip
def test_a_bad_causes_file_exits_2_with_one_line_from_check_causes_and_report(tmp_path: Path, cause: str, line: str) -> None:
    path = tmp_path / "causes.yaml"
    path.write_text(f"causes: [{CAUSE}, {cause}}}]\n")
    for args in (("waste", "check-causes", str(path)), ("waste", "report", str(SIGNAL), "--causes", str(path))):
        done = run_cli(*args)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"Error: {path}: {line}\n"), args


def test_an_operators_catastrophic_exception_pattern_is_refused_and_linted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `exception:` rule's message and frames pass the patterns' safety check: the loader
    refuses them (exit 2) and, loaded anyway, `rules lint` names them (exit 1, as for a pattern)."""
    (tmp_path / "gpu_oom.yaml").write_text(OPERATOR_RULE)
    where = f"{tmp_path / 'gpu_oom.yaml'}: rule gpu_oom.site_allocator"
    problem = "exception.message nests unbounded quantifiers (catastrophic backtracking)"
    done = run_cli("--rules-dir", str(tmp_path), "rules", "lint")
    assert (done.returncode, done.stderr) == (
        2,
        f"Error: {where}: field 'exception.message': {problem}; set FAILCLASS_UNSAFE_RULES=warn to load it anyway\n",
    )
    monkeypatch.setenv("FAILCLASS_UNSAFE_RULES", "warn")
    done = run_cli("--rules-dir", str(tmp_path), "rules", "lint")
    assert done.returncode == 1 and f"error: {where}: {problem}\n" in done.stdout


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        # a string where a list of words is due was one word per character
        ("slurm: [OUT_OF_MEMORY]", "slurm: OUT_OF_MEMORY", "reasons[0].scheduler.slurm: 'OUT_OF_MEMORY' is not a list"),
        ("categories: [IF, U]", "categories: [IF, UX]", "reasons[0].categories: unknown categories ['UX']; known: ['AE', 'IF', 'U']"),
        ("[AE, U], consequence: true", "[AE, U], consequence: yes please", "reasons[3].consequence: 'yes please' is not true or false"),
        ("{id: semantic_error,", "{id: cpu_oom,", "reasons[2].id: 'cpu_oom' repeats reasons[0].id"),
    ],
)  # fmt: skip
def test_a_bad_taxonomy_is_refused_in_one_line(tmp_path: Path, old: str, new: str, line: str) -> None:
    text = (BUILTIN_DIR / "taxonomy.yaml").read_text()
    assert old in text
    path = tmp_path / "taxonomy.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as refused:
        load_taxonomy(path)
    assert str(refused.value) == f"{path}: {line}"


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ("examples: ['[1,3]<stderr>:']", "examples: '[1,3]<stderr>:'", "prefixes[0].examples: '[1,3]<stderr>:' is not a list"),
        ("examples: ['12: ']", "examples: ['12 ']", "prefixes[4].examples[0]: '12 ' is not consumed whole by the pattern"),
        ("pattern: '[ \\t]+'", "pattern: '(?:[ \\t]+)+'", "prefixes[10].pattern: '(?:[ \\\\t]+)+' nests unbounded quantifiers "
         "(catastrophic backtracking)"),
        ("  - id: whitespace\n", "  - id: whitespace\n    colour: blue\n",
         "prefixes[10]: unknown keys ['colour']; known: ['description', 'examples', 'id', 'pattern']"),
    ],
)  # fmt: skip
def test_a_bad_prefixes_file_is_refused_in_one_line(tmp_path: Path, old: str, new: str, line: str) -> None:
    text = (BUILTIN_DIR / "prefixes.yaml").read_text()
    assert old in text
    path = tmp_path / "prefixes.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as refused:
        load_prefixes(path)
    assert str(refused.value) == f"{path}: {line}"
