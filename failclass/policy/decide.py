"""The retry policy: a failed attempt, its classification and the history around it ->
a Decision. Pure: everything it needs comes in as arguments (the store gathers the
history), everything it concludes goes out in the Decision, effects included (a new
hold, a blacklisted input, suspect nodes) for the store to record.

Order of questions:
1. Does the attempt declare a blacklisted input?            -> reject
2. Is the user on hold for this reason?                      -> hold
3. Does this failure blacklist one of its own inputs?        -> reject
4. Is this the user's hold_after-th failure of this reason?  -> hold
5. The reason's action, if the (job, signature) budget allows; else no_retry.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from failclass.attempts import Attempt
from failclass.contracts import Action, Decision, Effects, Explanation
from failclass.history import Failure, History, HistoryNeeds, PriorAttempt
from failclass.logs.facts import paths_in
from failclass.policy.config import PolicyConfig, ReasonPolicy


def history_needs(attempt: Attempt, failure: Failure, config: PolicyConfig, now: datetime) -> HistoryNeeds:
    """The parts of the history that this failure's settings can use."""
    rules = config.for_failure(failure.reason, failure.rule_id, attempt.vc)
    about_nodes = rules.suspect_node or rules.action == "retry_elsewhere"
    return HistoryNeeds(
        user_failures_since=now - timedelta(hours=config.user_window_hours) if rules.hold_after else None,
        input_failures=rules.blacklist_inputs,
        nodes_since=now - timedelta(hours=config.nodes.window_hours) if about_nodes else None,
    )


def failures_counted(prior: Sequence[PriorAttempt], failure: Failure) -> int:
    """This failure's number within its (job, signature) budget: earlier failures of the
    same signature that spent budget, counted again from 1 after the job made progress."""
    count, best = 0, None
    for earlier in sorted(prior, key=lambda p: p.attempt):
        if earlier.signature != failure.signature:
            continue
        if best is not None and earlier.progress is not None and earlier.progress > best:
            count = 0
        count += 1
        if earlier.progress is not None and (best is None or earlier.progress > best):
            best = earlier.progress
    if best is not None and failure.progress is not None and failure.progress > best:
        return 1
    return count + 1


def backoff_seconds(config: PolicyConfig, attempt: Attempt, number: int) -> float:
    """base * factor^(n-1), capped, with a jitter drawn from the job and attempt (repeatable)."""
    backoff = config.backoff
    delay = min(backoff.base_seconds * backoff.factor ** (number - 1), backoff.max_seconds)
    digest = hashlib.sha256(f"{attempt.job_id}/{attempt.attempt}".encode()).digest()
    unit = int.from_bytes(digest[:8], "big") / 2**64  # in [0, 1)
    return round(delay * (1 + backoff.jitter * (2 * unit - 1)), 1)


@functools.lru_cache(maxsize=64)
def implicated_inputs(attempt: Attempt, failure: Failure) -> tuple[str, ...]:
    """Declared inputs that contain a path the evidence names; else the named paths; else
    every declared input. Kept for the last attempts: the use case asks first (to lock and
    read those inputs' history), the policy again when it decides."""
    named = paths_in(failure.evidence)
    declared = [d for d in attempt.inputs if any(p == d or p.startswith(d.rstrip("/") + "/") for p in named)]
    return tuple(declared or named or attempt.inputs)


def _input_effects(config: PolicyConfig, attempt: Attempt, history: History, paths: Sequence[str]) -> tuple[str, ...]:
    newly = []
    for path in paths:
        jobs = [*history.input_failures.get(path, ()), attempt.job_id]
        if len(jobs) >= config.blacklist.min_failures and len(set(jobs)) >= config.blacklist.min_jobs:
            newly.append(path)
    return tuple(newly)


def implicated_nodes(attempt: Attempt, failure: Failure) -> tuple[str, ...]:
    """The node of the rank that failed first, where the logs read as ranks tell it (one of
    the attempt's nodes, or any when the attempt lists none); else the attempt's nodes that
    the evidence names (a line labelled with its host, a scheduler's record of a node that
    went down); if it names none, every node of the attempt. Over many failures a bad node
    is the one common to the failed jobs."""
    if failure.origin_node is not None and (not attempt.nodes or failure.origin_node in attempt.nodes):
        return (failure.origin_node,)
    named = tuple(node for node in attempt.nodes if any(_names(line, node) for line in failure.evidence))
    return named or attempt.nodes


def _names(line: str, node: str) -> bool:
    """``node`` as a whole host name in ``line`` (gpu2 is not in gpu21 nor in gpu2-3)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(node)}(?![A-Za-z0-9_]|-[A-Za-z0-9])", line) is not None


def _excluded_nodes(
    config: PolicyConfig, attempt: Attempt, implicated: tuple[str, ...], history: History, rules: ReasonPolicy
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(nodes to exclude from the retry, nodes that became suspect with this failure), given
    the nodes this failure implicates."""
    jobs = {node: set(ids) for node, ids in history.node_jobs.items()}
    if rules.suspect_node:
        for node in implicated:
            jobs.setdefault(node, set()).add(attempt.job_id)
    suspects = sorted((n for n, ids in jobs.items() if len(ids) >= config.nodes.min_jobs), key=lambda n: (-len(jobs[n]), n))
    newly = tuple(
        n
        for n in suspects
        if rules.suspect_node and n in implicated and len(history.node_jobs.get(n, ())) < config.nodes.min_jobs
    )
    own = [n for n in implicated if rules.suspect_node or rules.action == "retry_elsewhere"]
    ordered = list(dict.fromkeys([*own, *suspects]))
    cap = min(config.nodes.max_excluded, max(1, int(config.nodes.max_excluded_share * max(history.nodes_seen, len(ordered)))))
    return tuple(ordered[:cap]), newly


def decide(attempt: Attempt, failure: Failure, history: History, config: PolicyConfig) -> Decision:
    """The decision for one failed attempt."""
    rules = config.for_failure(failure.reason, failure.rule_id, attempt.vc)

    def made(action: Action, clause: str, message: str, counters: dict[str, Any], **extra: Any) -> Decision:
        why = Explanation(failure.reason, failure.rule_id, clause, message, counters)
        return Decision(action, config.mode, config.mode == "enforce", explanation=why, **extra)

    blocked = sorted(set(attempt.inputs) & set(history.blacklisted))
    if blocked:
        why = history.blacklisted[blocked[0]].why
        return made("reject", "blacklist", f"input {blocked[0]} is blacklisted: {why}", {"blacklisted_inputs": blocked})
    if failure.reason in history.held_reasons:
        message = f"user {attempt.user} is on hold for {failure.reason} until an operator releases it"
        return made("hold", "holds", message, {"user_failures": history.user_failures.get(failure.reason, 0) + 1})

    inputs = implicated_inputs(attempt, failure) if rules.blacklist_inputs else ()
    blacklist = _input_effects(config, attempt, history, inputs)
    implicated = implicated_nodes(attempt, failure)
    exclude, suspects = _excluded_nodes(config, attempt, implicated, history, rules)
    user_count = history.user_failures.get(failure.reason, 0) + 1
    hold = rules.hold_after is not None and user_count >= rules.hold_after
    nodes = implicated if rules.suspect_node else ()
    effects = Effects(failure.reason if hold else None, blacklist, suspects, inputs, nodes)
    counters: dict[str, Any] = {"user_failures": user_count} if rules.hold_after is not None else {}
    if inputs:
        counters["input_failures"] = {p: len(history.input_failures.get(p, ())) + 1 for p in inputs}

    if set(blacklist) & set(attempt.inputs) or (blacklist and not attempt.inputs):
        message = f"{len(blacklist)} input(s) blacklisted after this failure: {', '.join(blacklist)}"
        return made("reject", "blacklist", message, counters, effects=effects)
    if hold:
        message = f"failure {user_count} of {failure.reason} by user {attempt.user} (hold after {rules.hold_after})"
        return made("hold", f"{rules.clause}.hold_after", message, counters, effects=effects)

    number = failures_counted(history.job_attempts, failure)
    counters.update(signature=failure.signature, failure_of_signature=number, max_retries=rules.max_retries)
    if rules.action == "no_retry":
        message = f"{failure.reason} does not go away by retrying"
        return made("no_retry", f"{rules.clause}.action", message, counters, effects=effects)
    if rules.spends_budget and number > rules.max_retries:
        message = f"retry budget spent: failure {number} of {failure.signature} in this job, budget {rules.max_retries}"
        return made("no_retry", f"{rules.clause}.max_retries", message, counters, effects=effects)
    budget = "does not spend the retry budget" if not rules.spends_budget else f"retry {number} of {rules.max_retries}"
    return made(
        cast(Action, rules.action),  # one of REASON_ACTIONS, as the policy file's check ensures
        f"{rules.clause}.action",
        f"{failure.reason}: {rules.action.replace('_', ' ')}, {budget}",
        counters,
        backoff_seconds=backoff_seconds(config, attempt, number if rules.spends_budget else 1),
        exclude_nodes=exclude if rules.action == "retry_elsewhere" else (),
        avoid_gpu_types=(attempt.gpu_type,) if rules.avoid_same_gpu_type and attempt.gpu_type else (),
        memory_factor=rules.memory_factor if rules.action == "retry_with_more_resources" else None,
        effects=effects,
    )


def admit(attempt: Attempt, history: History, config: PolicyConfig, expected_reasons: Sequence[str] = ()) -> Decision | None:
    """At submission: a rejection for a blacklisted input, a hold for a user on hold for a
    reason the job would repeat (``expected_reasons``: the reasons of the job's earlier
    failures), else None (admitted). A rejection names the reason that blacklisted the input."""
    blocked = sorted(set(attempt.inputs) & set(history.blacklisted))
    if blocked:
        entry = history.blacklisted[blocked[0]]
        message = f"input {blocked[0]} is blacklisted: {entry.why}"
        why = Explanation(
            entry.reason or config.blacklisting_reason(), None, "blacklist", message, {"blacklisted_inputs": blocked}
        )
        return Decision("reject", explanation=why).in_mode(config.mode)
    repeated = sorted(set(expected_reasons) & history.held_reasons)
    if repeated:
        message = f"user {attempt.user} is on hold for {repeated[0]}, which this job failed with before"
        why = Explanation(repeated[0], None, "holds", message, {"held_reasons": repeated})
        return Decision("hold", explanation=why).in_mode(config.mode)
    return None
