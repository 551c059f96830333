"""The loader refuses broken rules with the file, rule id and field named; operator
folders go through the same loader."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from failclass.classifier import Classifier
from failclass.errors import RuleError
from failclass.matching.matcher import Matcher
from failclass.matching.rules import UnsafeRuleWarning, load_rules

GOOD_RULE = """
reason: gpu_oom
rules:
  - id: gpu_oom.site_allocator
    kind: explicit
    priority: 70
    description: Our in-house allocator gave up.
    patterns: ['acme-alloc: device heap exhausted']
    examples:
      positive:
        - source: scenario:site_allocator
          text: "acme-alloc: device heap exhausted on gpu 3"
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_operator_folder_adds_rules_through_the_same_loader(tmp_path: Path) -> None:
    write(tmp_path, "gpu_oom.yaml", GOOD_RULE)
    ruleset = load_rules([tmp_path])
    assert "gpu_oom.site_allocator" in ruleset.by_id()
    result = Classifier(ruleset).classify_bytes(b"step 10\nacme-alloc: device heap exhausted on gpu 3\n")
    assert (result.reason, result.rule_id) == ("gpu_oom", "gpu_oom.site_allocator")
    assert result.evidence[0].line == 2


def test_operator_folder_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "gpu_oom.yaml", GOOD_RULE)
    monkeypatch.setenv("FAILCLASS_RULES_DIR", str(tmp_path))
    assert "gpu_oom.site_allocator" in load_rules().by_id()


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ("kind: explicit", "kind: explicitly", "kind", "must be one of"),
        ("priority: 70", "priority: 700", "priority", "0 to 100"),
        ("id: gpu_oom.site_allocator", "id: cpu_oom.site_allocator", "id", "must start with the file's reason"),
        ("['acme-alloc: device heap exhausted']", "['acme-alloc: (device']", "patterns[0]", "does not compile"),
        ("- source: scenario:site_allocator\n          text:", "- text:", "examples.positive[0].source", "needs its source"),
        ("    description: Our in-house allocator gave up.\n", "", "description", "non-empty string"),
        ("priority: 70", "priority: 70\n    generic: yes please", "generic", "true or false"),
        ("priority: 70", "priority: 70\n    generic: true", "generic", "only an implicit rule"),
    ],
)
def test_broken_rule_names_file_rule_and_field(tmp_path: Path, old: str, new: str, field: str, message: str) -> None:
    assert old in GOOD_RULE
    path = write(tmp_path, "gpu_oom.yaml", GOOD_RULE.replace(old, new))
    with pytest.raises(RuleError) as caught:
        load_rules([tmp_path], builtin=False)
    text = str(caught.value)
    assert str(path) in text and f"field '{field}'" in text and message in text


def test_rule_without_positive_example_is_refused(tmp_path: Path) -> None:
    start = GOOD_RULE.index("    examples:")
    write(tmp_path, "gpu_oom.yaml", GOOD_RULE[:start])
    with pytest.raises(RuleError, match=r"examples.positive.*at least one real example"):
        load_rules([tmp_path], builtin=False)


def test_duplicate_rule_id_across_folders_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "a", "gpu_oom.yaml", GOOD_RULE)
    write(tmp_path / "b", "gpu_oom.yaml", GOOD_RULE)
    with pytest.raises(RuleError, match="duplicate of a rule in"):
        load_rules([tmp_path / "a", tmp_path / "b"], builtin=False)


def test_file_named_after_another_reason_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "cpu_oom.yaml", GOOD_RULE)
    with pytest.raises(RuleError, match=r"must be named gpu_oom\.yaml"):
        load_rules([tmp_path], builtin=False)


def test_pattern_the_engine_cannot_run_is_named(tmp_path: Path) -> None:
    # A backreference compiles in `regex` but Hyperscan refuses it: the error names the rule.
    write(tmp_path, "gpu_oom.yaml", GOOD_RULE.replace("'acme-alloc: device heap exhausted'", "'acme-(alloc): \\1 heap'"))
    ruleset = load_rules([tmp_path], builtin=False)
    with pytest.raises(RuleError, match=r"gpu_oom.site_allocator: field 'patterns\[0\]': rejected by the engine"):
        Matcher(ruleset)


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="rules folder does not exist"):
        load_rules([tmp_path / "nope"])


def test_scaffolded_rule_is_refused_until_it_has_a_real_example(tmp_path: Path) -> None:
    from conftest import run_cli

    done = run_cli("rules", "new", "gpu_oom", "site_allocator", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    with pytest.raises(
        RuleError, match=r"gpu_oom.site_allocator: field '(description|patterns\[0\]|examples.positive\[0\]\.\w+)'"
    ):
        load_rules([tmp_path], builtin=False)
    assert run_cli("rules", "new", "gpu_oom", "site_allocator", "--dir", str(tmp_path)).returncode == 2
    assert run_cli("rules", "new", "no_such_reason", "x", "--dir", str(tmp_path)).returncode == 2
    text = (tmp_path / "gpu_oom.yaml").read_text()
    filled = (
        text.replace('description: ""', "description: in-house allocator")
        .replace("      - ''", "      - 'acme-alloc: device heap exhausted'")
        .replace('source: ""', "source: scenario:site_allocator")
        .replace("# paste the real log lines here", "acme-alloc: device heap exhausted on gpu 3")
    )
    (tmp_path / "gpu_oom.yaml").write_text(filled)
    assert "gpu_oom.site_allocator" in load_rules([tmp_path], builtin=False).by_id()


def test_an_operators_catastrophic_pattern_is_refused_or_loaded_with_a_loud_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The errors of `rules lint` stop the loader too, unless the operator says warn."""
    dangerous = GOOD_RULE.replace(
        "patterns: ['acme-alloc: device heap exhausted']", "patterns: ['acme-alloc: (device( heap)+)+ exhausted']"
    )
    write(tmp_path, "gpu_oom.yaml", dangerous)
    with pytest.raises(RuleError, match=r"rule gpu_oom\.site_allocator: field 'patterns\[0\]': .*nests unbounded quantifiers"):
        load_rules([tmp_path])
    monkeypatch.setenv("FAILCLASS_UNSAFE_RULES", "warn")
    with pytest.warns(UnsafeRuleWarning, match="nests unbounded quantifiers"):
        assert "gpu_oom.site_allocator" in load_rules([tmp_path]).by_id()
    done = run_cli("--rules-dir", str(tmp_path), "classify", "samples/README.md")
    assert done.returncode == 0 and "nests unbounded quantifiers" in done.stderr
