"""The policy file's watch: section: the built-in steps, an operator's own, and a wrong one
refused in one line that names its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from failclass.errors import ConfigError
from failclass.policy.config import load_policy
from failclass.policy.watch import IdleRule, WatchPolicy


def test_the_built_in_watch_warns_interactive_jobs_twice_then_cancels() -> None:
    watch = load_policy().watch
    assert watch.idle == (IdleRule(("interactive",), (), 10, (30, 45), 60, "cancel"),)
    assert watch.rule_for("interactive", "any") == watch.idle[0] and watch.rule_for("batch", "any") is None
    assert (watch.hung_after_minutes, watch.hung_cancel_minutes, watch.repeat.releases, watch.repeat.days) == (30, 60, 3, 7)


def test_an_operators_rules_replace_the_built_in_ones(tmp_path: Path) -> None:
    own = tmp_path / "policy.yaml"
    own.write_text(
        "watch:\n  idle:\n"
        "    - {kinds: [batch], virtual_clusters: [short], warn_minutes: [20], release_minutes: 40, release: requeue}\n"
        "    - {kinds: [interactive], warn_minutes: [60], release_minutes: null}\n"
        "  hung_after_minutes: 15\n"
    )
    watch = load_policy(own).watch
    assert watch.rule_for("batch", "short") == IdleRule(("batch",), ("short",), 10, (20,), 40, "requeue")
    assert watch.rule_for("batch", "long") is None
    assert watch.rule_for("interactive", "long") == IdleRule(("interactive",), (), 10, (60,), None, "cancel")
    assert (watch.hung_after_minutes, watch.hung_cancel_minutes) == (15, 60)


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ("idle: [{warn_minutes: [45, 30]}]", "watch.idle[0].warn_minutes: each warning later than the one before"),
        (
            "idle: [{warn_minutes: [30, 50], release_minutes: 40}]",
            "watch.idle[0].release_minutes: must not come before the last warning",
        ),
        ("idle: [{release: kill}]", "watch.idle[0].release: 'kill' is not one of ('cancel', 'requeue')"),
        ("idle: [{kinds: []}]", "watch.idle[0].kinds: name at least one kind of job"),
        ("hung_after_minutes: 90", "watch.hung_cancel_minutes: must not be shorter than hung_after_minutes"),
        ("stale_after_minutes: -1", "watch.stale_after_minutes: -1 must be > 0"),
        ("repeat: {weeks: 2}", "watch.repeat: unknown"),
    ],
)
def test_a_wrong_watch_section_is_refused_naming_its_place(tmp_path: Path, section: str, problem: str) -> None:
    own = tmp_path / "policy.yaml"
    own.write_text(f"watch:\n  {section}\n")
    with pytest.raises(ConfigError) as refused:
        load_policy(own)
    assert problem in str(refused.value) and "\n" not in str(refused.value)


def test_a_commands_limits_make_one_rule_from_the_first() -> None:
    watch = load_policy().watch
    assert watch.with_limits(20).idle == (IdleRule(("interactive",), (), 10, (20,), 60, "cancel"),)
    assert watch.with_limits(release=40).idle[0].warn_minutes == (30,)  # the warnings before the release stay
    assert watch.with_limits(kinds=("batch",)).idle[0].kinds == ("batch",)
    assert watch.with_limits(hung_after_minutes=5).hung_after_minutes == 5 and watch.with_limits().idle == watch.idle
    assert WatchPolicy().idle == watch.idle  # the file's defaults are the schema's
