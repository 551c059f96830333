"""The compiled rules are cached (failclass.matching.cache): a start with unchanged rule
files reads the validated rule set back instead of parsing YAML, a changed file (an
operator's folder included) is loaded anew, and a damaged or unwritable cache costs a
load, never a command."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from conftest import run_cli
from test_loader import GOOD_RULE

from failclass.matching.rules import UnsafeRuleWarning, load_rules

RULE = GOOD_RULE  # an operator's rule file that loads
LOG = "step 10 loss 0.31\nacme-alloc: device heap exhausted on gpu 3\nacme-net: link 2 down\n"


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A cache folder, an operator's rules folder (FAILCLASS_RULES_DIR) and a log."""
    cache, rules = tmp_path / "cache", tmp_path / "rules"
    rules.mkdir()
    (rules / "gpu_oom.yaml").write_text(RULE)
    monkeypatch.setenv("FAILCLASS_CACHE_DIR", str(cache))
    monkeypatch.setenv("FAILCLASS_RULES_DIR", str(rules))
    log = tmp_path / "train.log"
    log.write_text(LOG)
    return cache, rules, log


def classify(log: Path) -> str | None:
    """The rule that names the log's failure, from `failclass classify`, which says nothing else."""
    done = run_cli("--no-model", "classify", "--json", str(log))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)["rule_id"]  # type: ignore[no-any-return]


def test_an_operators_rules_folder_edited_between_two_runs_gives_the_new_answer(folders: tuple[Path, Path, Path]) -> None:
    cache, rules, log = folders
    assert classify(log) == "gpu_oom.site_allocator"
    assert len(list(cache.glob("ruleset-*.json"))) == 1  # the next run could read it back
    edited = (
        RULE.replace("site_allocator", "site_network")
        .replace("['acme-alloc: device heap exhausted']", "['acme-net: link \\d+ down']")
        .replace("acme-alloc: device heap exhausted on gpu 3", "acme-net: link 2 down")
    )
    (rules / "gpu_oom.yaml").write_text(edited)
    assert classify(log) == "gpu_oom.site_network"
    assert len(list(cache.glob("ruleset-*.json"))) == 2
    assert classify(log) == "gpu_oom.site_network"  # unchanged: read back
    assert len(list(cache.glob("ruleset-*.json"))) == 2


def seal(payload: bytes) -> bytes:
    """A cache file's form: the SHA-256 of its contents, then the contents."""
    return hashlib.sha256(payload).digest() + payload


@pytest.mark.parametrize("damage", ["garbage", "truncated", "sealed nonsense"])
def test_a_damaged_cache_is_ignored_and_rebuilt(folders: tuple[Path, Path, Path], damage: str) -> None:
    cache, _, log = folders
    first = classify(log)
    files = sorted(cache.iterdir())
    assert {p.name.split("-")[0] for p in files} == {"rules", "ruleset", "structure"}
    for path in files:
        data = path.read_bytes()
        damaged = {"garbage": b"garbage", "truncated": data[: len(data) // 2], "sealed nonsense": seal(b'{"rules": 5}')}
        path.write_bytes(damaged[damage])
    assert classify(log) == first
    assert all(p.read_bytes()[:32] == hashlib.sha256(p.read_bytes()[32:]).digest() for p in cache.iterdir())


def test_a_cache_folder_that_cannot_be_made_costs_nothing_but_time(
    folders: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, log = folders
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("FAILCLASS_CACHE_DIR", str(blocked / "cache"))
    assert classify(log) == "gpu_oom.site_allocator"
    assert classify(log) == "gpu_oom.site_allocator"


def test_a_warm_load_parses_no_yaml_and_gives_the_same_rule_set(
    folders: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = load_rules()
    assert "gpu_oom.site_allocator" in cold.by_id()

    def no_yaml(*_: object, **__: object) -> None:
        raise AssertionError("the rule files were parsed again")

    monkeypatch.setattr(yaml, "load", no_yaml)
    warm = load_rules()
    assert warm.rules == cold.rules and warm.prefixes == cold.prefixes and warm.taxonomy == cold.taxonomy
    assert warm.endings == cold.endings and warm.endings.no_cause and warm.endings.benign
    assert warm.line_start == cold.line_start


def test_an_unsafe_rule_loaded_anyway_warns_at_every_load(
    folders: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, rules, _ = folders
    dangerous = RULE.replace("'acme-alloc: device heap exhausted'", "'acme-alloc: (device( heap)+)+ exhausted'")
    (rules / "gpu_oom.yaml").write_text(dangerous)
    monkeypatch.setenv("FAILCLASS_UNSAFE_RULES", "warn")
    for _ in range(2):  # loaded, then read back from the cache
        with pytest.warns(UnsafeRuleWarning, match="nests unbounded quantifiers"):
            load_rules()
