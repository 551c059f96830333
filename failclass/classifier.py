"""The one entry point: a log (path, bytes or text) -> Classification."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from failclass.contracts import Classification, Evidence, Origin, Rival, Source
from failclass.limits import LIMITS
from failclass.logs.diff import Templates
from failclass.logs.facts import Progress, progress_of
from failclass.logs.region import TailLines, normalised, segment
from failclass.logs.text import BlockReader, Readable, Tail, blocks_of_text, open_log, open_stream
from failclass.matching.matcher import Hit, Matcher, ScanResult
from failclass.matching.roles import Role
from failclass.matching.rootcause import Candidate, Ranking, SetAside, rank
from failclass.matching.rules import RuleSet, load_rules
from failclass.matching.structure import StructureMatcher
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.model.artifact import LoadedModel

# The model speaks only where the log shows a failure: a rule that names one (a cause or a
# consequence) matched, or one of its last lines records one (failclass.logs.region's
# FAILURE_RECORD: an exception, an error-level record, a fatal signal, an errno's message).
# A log that ends mid-training, whatever words it prints, is No signature (the guide's
# principle 6): a job killed from outside leaves exactly such a log. Where it shows a failure
# and no rule, or only a generic one (a bare traceback says that the program failed, not
# why), named it, "No signature" is almost always wrong: the model then speaks from this
# confidence on, below its own threshold.
NO_RULE_THRESHOLD = 0.15
SIGNATURE_STRENGTH = {Role.CAUSE: 3, Role.CONSEQUENCE: 3, Role.HINT: 1, Role.GENERIC: 1}  # the model's answer: 2, none: 0
MODEL_WHY = (
    "No rule matched; the fallback model read the end of the log and found it most like this reason's logs. "
    "Check the evidence line before acting on it, and correct it with `failclass label` if it is wrong."
)


def evidence_cut(text: str) -> str:
    """A model evidence line as readable as a signature's: stripped, at most LIMITS.evidence_chars."""
    text = text.strip()
    return text if len(text) <= LIMITS.evidence_chars else text[: LIMITS.evidence_chars - 1] + "…"


def signature_confidence(priority: int) -> float:
    """Confidence of a signature answer: 0.55 for the weakest implicit rule, 0.95 at priority 90."""
    return round(min(0.5 + priority / 200, 0.99), 2)


@dataclass(frozen=True)
class ModelGuess:
    """What the fallback model says of a log, when it is confident enough."""

    reason: str
    confidence: float
    evidence: Evidence


@dataclass(frozen=True)
class Examination:
    """What the service and the hook learn from an attempt's logs."""

    classification: Classification
    progress: Progress | None
    checkpoint: tuple[str, datetime | None] | None = None  # (basis, last save) where the log was searched for saves
    origin: Origin | None = None  # where the failure started, where the logs were read as ranks (failclass.logs.attempt)
    templates: Templates | None = None  # its lines' templates, where asked for (the store keeps a good run's)


class Classifier:
    """Rules compiled once (and the fallback model, if given), then any number of logs
    classified, in three steps (the roles are failclass.matching.roles'):

    1. the signatures: a winning rule that names a cause answers at once;
    2. the no-cause pass: where the winner is generic, the generic rules that saw only an
       end without a failure (an end reported without its cause, a log that went on after
       them) are set aside;
    3. the model's guess, where it is at least as confident as its threshold (or, where the
       log shows a failure that nothing or only a generic rule named, NO_RULE_THRESHOLD):
       it replaces a winner that names no cause unless it names the same reason (the rule's
       evidence explains more), a consequence reason (it would add nothing) or what a rule
       ranked below the winner found after it. It does not answer where only an end
       without a cause was left, nor over a run cut off mid-training: No signature.

    Otherwise the winner, or "No signature", stands."""

    def __init__(
        self, ruleset: RuleSet | None = None, extra_rule_dirs: Iterable[Path] = (), model: LoadedModel | None = None
    ) -> None:
        self.ruleset = ruleset or load_rules(extra_rule_dirs)
        self.matcher = Matcher(self.ruleset)
        self.structure = StructureMatcher(self.ruleset)
        self.rules = self.ruleset.by_id()
        self.roles = self.ruleset.roles.of
        self.model = model

    def classify_path(self, path: Path) -> Classification:
        with open_log(path) as stream:
            return self.classify_stream(stream)

    def classify_bytes(self, data: bytes | str) -> Classification:
        return self._classify(blocks_of_text(data), Tail())

    def classify_stream(self, stream: BinaryIO) -> Classification:
        """A log already opened for streaming (open_log, open_standard_input)."""
        return self._classify(BlockReader(stream), Tail())

    def examine_path(self, path: Path, templates: bool = False) -> Examination:
        """Classification plus the facts a retry policy needs (progress), and with
        ``templates`` its lines' templates, read in the same pass."""
        with open_log(path) as stream:
            return self._examine(BlockReader(stream), templates)

    def examine_bytes(self, data: bytes | str, templates: bool = False) -> Examination:
        return self._examine(blocks_of_text(data), templates)

    def examine_stream(self, stream: Readable) -> Examination:
        """A log given as an open stream (an archive member), gzip or not."""
        return self._examine(BlockReader(open_stream(stream)), templates=False)

    def examine_paths(self, paths: Iterable[Path], templates: bool = False) -> tuple[Path, Examination]:
        """The logs of one attempt (stdout, stderr, one per rank) examined together: the
        log with the strongest answer speaks for the attempt (an explicit signature over
        the model over an implicit one over none, then confidence); progress is the
        furthest any log reached; the templates, those of every log (the last lines: the
        speaking log's)."""
        examined = [(path, self.examine_path(path, templates)) for path in paths]
        if not examined:
            raise ValueError("no log to examine")
        best_path, best = max(examined, key=lambda pair: self.strength(pair[1].classification))
        progress = max((e.progress for _, e in examined if e.progress is not None), default=None)
        together = best.templates
        for _, other in examined:
            if together is not None and other is not best and other.templates is not None:
                together = together.merged(other.templates)
        return best_path, Examination(best.classification, progress, templates=together)

    def strength(self, result: Classification) -> tuple[int, float]:
        """How strongly a classification speaks: explicit signature (a cause or a consequence),
        model, implicit (a hint, a generic rule), none; then confidence."""
        if result.source == "signature" and result.rule_id is not None:
            rank = SIGNATURE_STRENGTH[self.roles[result.rule_id]]
        else:
            rank = 2 if result.source == "model" else 0
        return rank, result.confidence

    def _examine(self, reader: BlockReader, templates: bool) -> Examination:
        tail, kept = Tail(), Templates() if templates else None
        result = self._classify(reader, tail, kept)
        end = tail.numbered_lines(result.lines)
        if kept is not None:
            kept.end = end
        return Examination(result, progress_of([text for _, text in end]), templates=kept)

    def _classify(self, reader: BlockReader, tail: Tail, templates: Templates | None = None) -> Classification:
        scan = self.matcher.scan(tail.watch(reader if templates is None else templates.watch(reader)))
        found = (*scan.hits, *self.structure.hits(tail, scan.lines))
        ranking = rank(found, self.rules, self.roles)
        if ranking.winner is not None and ranking.winner.role is Role.CAUSE:  # 1. the signatures
            return self._signature(ranking.winner, scan, reader.bytes_read, ranking)
        lines = self._tail_lines(tail, scan, ranking)
        ranking = self._without_ended_generics(found, ranking, lines)  # 2. the no-cause pass
        guess = self._overruling_guess(lines, ranking)  # 3. the model's guess
        if guess is not None:
            return self._model_answer(guess, ranking, scan, reader.bytes_read)
        if ranking.winner is not None:
            return self._signature(ranking.winner, scan, reader.bytes_read, ranking)
        return self._classification(NO_SIGNATURE, "none", None, 0.0, (), scan, reader.bytes_read, ranking.others)

    def _tail_lines(self, tail: Tail, scan: ScanResult, ranking: Ranking) -> TailLines | None:
        """The log's last lines, where the next steps read them: a generic winner's (the
        no-cause pass) or the model's; None where neither does."""
        if self.model is None and not _generic(ranking.winner):
            return None
        return TailLines.of(tail.numbered_lines(scan.lines), self.ruleset.endings)

    def _without_ended_generics(self, found: tuple[Hit, ...], ranking: Ranking, lines: TailLines | None) -> Ranking:
        """The no-cause pass: where the winner is generic, the ranking without the generic
        rules (a bare traceback, a clean-up) that saw only an end without a failure: an end
        reported without a cause (see _end_without_cause), or a log that went on after them
        and ends recording no failure (a traceback the job survived, then a kill from outside)."""
        if lines is None or not _generic(ranking.winner):
            return ranking
        if (start := self._end_without_cause(ranking, lines)) is not None:
            return rank(found, self.rules, self.roles, (SetAside.END_WITHOUT_CAUSE, lambda c: c.first.line >= start))
        if not lines.shows_failure:
            ending = lines.ending_line
            return rank(found, self.rules, self.roles, (SetAside.SURVIVED, lambda c: c.hits[-1].line < ending))
        return ranking

    def _end_without_cause(self, ranking: Ranking, lines: TailLines) -> int | None:
        """The line from which the log reports an end that names no cause: a generic rule's
        own match there (SageMaker's client wrapper, torchrun's SignalException for SIGTERM)
        sets aside every generic rule; otherwise such a line among the last lines (a time
        limit, torchrun told to stop) sets aside those that matched from it on."""
        everyone = (ranking.winner, *(c for c, _ in ranking.others))
        generic = [c for c in everyone if c is not None and c.role is Role.GENERIC]
        if any(self.ruleset.endings.names_no_cause(segment(hit.text)) for candidate in generic for hit in candidate.hits):
            return 0
        return lines.first_end_without_cause()

    def _overruling_guess(self, lines: TailLines | None, ranking: Ranking) -> ModelGuess | None:
        """The model's guess where it answers instead of the winner (or of no winner)."""
        guess = None if lines is None else self._guess(lines, ranking)
        if guess is None or (ranking.winner is not None and not self._overrules(guess, ranking.winner, ranking)):
            return None
        return guess

    def _overrules(self, guess: ModelGuess, winner: Candidate, ranking: Ranking) -> bool:
        """Whether the model's guess replaces a winner that names no cause: not when it names
        the winner's reason or a consequence, nor when it names what a rule found printed after
        the winner and ranked below it (the model reads the end of the log, where the
        consequences are: an NCCL timeout after a rank's exception only echoes it)."""
        if guess.reason in self.ruleset.roles.consequences | {winner.rule.reason}:
            return False
        return not any(loser.rule.reason == guess.reason and loser.first.line > winner.first.line for loser, _ in ranking.others)

    def _model_answer(self, guess: ModelGuess, ranking: Ranking, scan: ScanResult, size: int) -> Classification:
        """The model's answer, the winner it replaced (if any) first among the others."""
        others = ranking.others
        if ranking.winner is not None:
            beaten = f"a consequence only; the model is {guess.confidence:.2f} confident of {guess.reason}"
            others = ((ranking.winner, beaten), *others)
        return self._classification(guess.reason, "model", None, guess.confidence, (guess.evidence,), scan, size, others)

    def _guess(self, lines: TailLines, ranking: Ranking) -> ModelGuess | None:
        """The model's answer from the end of a log, if it names a failure confidently: at
        its threshold, or from NO_RULE_THRESHOLD where the log shows a failure that no rule,
        or only a generic one such as a bare traceback, named. It does not guess over an end
        reported without a cause with nothing before it, nor over a run cut off mid-training
        (no rule named a failure, none of the last lines says one, some report progress):
        both are No signature."""
        winner = ranking.winner
        unspecific = winner is None or _generic(winner)  # nothing, or only "it failed"
        if self.model is None or (ranking.set_aside and winner is None):
            return None
        shown = not unspecific or lines.shows_failure
        if not shown and lines.training_to_the_end:  # cut off mid-training: No signature
            return None
        numbered, texts, region = lines.numbered, lines.texts, lines.region
        probabilities = self.model.model.regions_proba([normalised(texts, region)])[0]
        best = int(probabilities.argmax())
        reason = str(self.model.model.classes_[best])
        confidence = float(probabilities[best])
        floor = min(self.model.threshold, NO_RULE_THRESHOLD) if unspecific and shown else self.model.threshold
        if reason == NO_SIGNATURE or confidence < floor:
            return None
        strongest = region[self.model.model.strongest_line([segment(texts[i]) for i in region], reason)]
        line, text = numbered[strongest]
        return ModelGuess(reason, round(confidence, 2), Evidence(line, evidence_cut(segment(text))))

    def _signature(self, winner: Candidate, scan: ScanResult, size: int, ranking: Ranking) -> Classification:
        lines = {hit.line: hit.text for hit in winner.hits}
        evidence = tuple(Evidence(n, text) for n, text in sorted(lines.items())[: LIMITS.evidence_lines])
        confidence = signature_confidence(winner.rule.priority)
        return self._classification(
            winner.rule.reason, "signature", winner.rule.id, confidence, evidence, scan, size, ranking.others
        )

    def _classification(
        self,
        reason_id: str,
        source: Source,
        rule_id: str | None,
        confidence: float,
        evidence: tuple[Evidence, ...],
        scan: ScanResult,
        size: int,
        others: tuple[tuple[Candidate, str], ...],
    ) -> Classification:
        reason = self.ruleset.taxonomy[reason_id]
        also = tuple(
            Rival(loser.rule.id, loser.rule.reason, loser.rule.kind, loser.rule.priority, loser.first.line, loser.first.text, why)
            for loser, why in others
        )
        return Classification(
            reason=reason.id,
            reason_name=reason.name,
            categories=reason.categories,
            source=source,
            rule_id=rule_id,
            why=self.rules[rule_id].why if rule_id else (MODEL_WHY if source == "model" else ""),
            confidence=confidence,
            evidence=evidence,
            bytes=size,
            lines=scan.lines,
            also_matched=also,
        )


def _generic(candidate: Candidate | None) -> bool:
    """Whether a candidate is there and only says that the program failed."""
    return candidate is not None and candidate.role is Role.GENERIC
