"""The linter catches dangerous, too-broad, duplicate and overlapping patterns; the
engine stays linear on adversarial input even for a pattern a backtracking engine
would never finish."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

from failclass.classifier import Classifier
from failclass.matching.lint import lint
from failclass.matching.rules import UnsafeRuleWarning, load_rules

RULE = """
reason: cpu_oom
rules:
  - id: cpu_oom.site_{slug}
    kind: explicit
    description: test rule
    patterns: ['{pattern}']
    examples:
      positive:
        - source: scenario:cpu_oom__sigkill_killed
          text: "{example}"
"""


def findings_for(tmp_path: Path, pattern: str, example: str, extra: str = "") -> list[str]:
    """What `rules lint` says of an operator's rule (loaded with FAILCLASS_UNSAFE_RULES=warn:
    the loader itself refuses dangerous patterns, tests/matching/test_loader.py)."""
    (tmp_path / "cpu_oom.yaml").write_text(RULE.format(slug="a", pattern=pattern, example=example) + extra)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setenv("FAILCLASS_UNSAFE_RULES", "warn")
        warnings.simplefilter("ignore", UnsafeRuleWarning)
        ruleset = load_rules([tmp_path], builtin=False)
    return [str(f) for f in lint(ruleset, Classifier(ruleset).matcher)]


def test_nested_unbounded_quantifier_is_an_error(tmp_path: Path) -> None:
    found = findings_for(tmp_path, "Killed (a+)+b", "Killed aab")
    assert any(f.startswith("error") and "nests unbounded quantifiers" in f for f in found)


def test_pattern_without_a_literal_is_an_error(tmp_path: Path) -> None:
    found = findings_for(tmp_path, "[0-9]+ [a-z]+", "12 killed")
    assert any(f.startswith("error") and "no required literal" in f for f in found)


def test_whitespace_class_that_crosses_lines_is_a_warning(tmp_path: Path) -> None:
    found = findings_for(tmp_path, "Killed\\s+process", "Killed process 12")
    assert any(f.startswith("warning") and "across lines" in f for f in found)


@pytest.mark.parametrize(
    ("pattern", "example"),
    [
        ("Killed[^\\n]{0,40}process", "Killed the process"),
        ("Killed[^\\s]* process", "Killed process"),
        ("Killed\\\\nprocess", "Killed\\\\nprocess"),
    ],
)
def test_a_negated_class_or_an_escaped_backslash_stays_on_its_line(tmp_path: Path, pattern: str, example: str) -> None:
    r"""``[^\n]`` is how a pattern stays on one line: no warning (nor for a backslash and an n)."""
    assert findings_for(tmp_path, pattern, example) == []


def test_duplicate_pattern_across_rules_is_an_error(tmp_path: Path) -> None:
    second = RULE.format(slug="b", pattern="Killed process", example="Killed process 1").split("rules:\n")[1]
    found = findings_for(tmp_path, "Killed process", "Killed process 1", second)
    assert any("duplicates a pattern of cpu_oom.site_a" in f for f in found)


def test_overlap_with_a_stronger_rule_of_another_reason_is_reported(tmp_path: Path) -> None:
    (tmp_path / "gpu_oom.yaml").write_text(
        RULE.replace("cpu_oom", "gpu_oom").format(slug="x", pattern="out of memory", example="CUDA out of memory")
    )
    found = findings_for(tmp_path, "CUDA out of", "CUDA out of memory")
    assert any("is also matched by gpu_oom.site_x" in f for f in found)


def test_built_in_rules_have_no_lint_errors(classifier: Classifier) -> None:
    errors = [f for f in lint(classifier.ruleset, classifier.matcher) if f.severity == "error"]
    assert not errors


def test_catastrophic_pattern_cannot_stall_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (x+x+)+y against a long run of x backtracks exponentially in re/regex/PCRE;
    # Hyperscan's automata answer in one linear pass (an operator who insists loads it).
    (tmp_path / "cpu_oom.yaml").write_text(RULE.format(slug="a", pattern="Killed:(x+x+)+y", example="Killed:xxy"))
    monkeypatch.setenv("FAILCLASS_UNSAFE_RULES", "warn")
    with pytest.warns(UnsafeRuleWarning):
        classifier = Classifier(load_rules([tmp_path], builtin=False))
    adversarial = b"Killed:" + b"x" * 5_000_000 + b"\n"
    started = time.monotonic()
    result = classifier.classify_bytes(adversarial * 4)
    assert result.reason == "no_signature"
    assert time.monotonic() - started < 30  # takes well under a second; re would not finish in a lifetime
    assert classifier.classify_bytes(adversarial + b"Killed:xxxy\n").reason == "cpu_oom"
