"""The initiating failure of a multi-rank attempt: which rank failed first, where, and
which followed.

Each rank's stream (failclass.logs.ranks) is classified on its own (failclass.classifier);
the origin is the rank whose failure is the most causal (a named root cause, then the
model's answer, then a process that died of itself, then one that lost a peer, then one
told to stop: which reasons a rank reports when a peer failed is data, ranks.yaml), and
among those the first: by time where every one has a time, else as the launcher saw it
(failclass.logs.launchers), else the strongest answer. Where every rank that speaks only
lost a peer, the rank that said nothing is the origin: the one the launcher saw fail
first, or the one rank of the launcher's table that reported nothing (the others waited
on it: a hang). Where comes from the log first (a host prefix, NCCL's ``host:pid:tid
[gpu]`` lines: github.com/facebookresearch/deit/issues/28, torchrun's failure table,
srun's errors), then from the attempt's facts (its nodes in rank order with tasks per
node, pod -> node). A node's kernel log that names a cause (an Xid: the GPU's own fault) is
upstream of whatever the ranks printed: that node is the origin, its GPU the one the Xid's
PCI bus id names, and its rank the one that used that GPU."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from failclass.classifier import Classifier
from failclass.contracts import AttemptAnswer, Classification, Evidence, Origin
from failclass.errors import ConfigError
from failclass.logs.launchers import LauncherReport, launcher_only, outside_tables
from failclass.logs.launchers import reports as reports_of
from failclass.logs.ranks import NCCL_PROCESS, Layout, Stream, rank_streams, read_lines
from failclass.matching.roles import Role
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.resources import PACKAGE_DATA
from failclass.schema import load

_GPU = re.compile(r"\bcudaDev (\d+)|\bcuda:(\d+)|\bGPU (\d+)\b|\bdevice[ =](\d+)\b")
# An Xid names its GPU by PCI bus id, "NVRM: Xid (PCI:0000:07:00): 48, ..."
# (github.com/NVIDIA/gpu-operator/issues/1146; older drivers "NVRM: Xid (0000:03:00): 14":
# houmin.cc/posts/feaa4605). The logs tie a bus id to a GPU in NCCL's communicator lines,
# "... rank 3 nranks 4 cudaDev 3 nvmlDev 3 busId e1000 ..." (github.com/Lightning-AI/
# pytorch-lightning/issues/20434; NCCL prints the hex digits of 0000:e1:00.0), and in
# nvidia-smi's table, "|   0  NVIDIA A100-PCIE-40GB          On  | 00000000:01:00.0 Off |"
# (github.com/NVIDIA/nccl/issues/1812).
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\)")
_NCCL_BUS = re.compile(r"\brank (\d+) nranks \d+ cudaDev (\d+) (?:nvmlDev \d+ )?busId ([0-9a-fA-F]+)\b")
_SMI_ROW = re.compile(r"\|\s+(\d+)\s.*?\|\s*([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.[0-7] ")
BusId = tuple[int, int, int]  # PCI domain, bus, device
BusKey = tuple[str | None, BusId]  # a node (None: not known) and a bus id on it
Tie = tuple[int | None, int, str]  # a bus id's rank (None: not known), its GPU, the logs that tie them
# A rank's failure, most causal first: the origin is taken from the first kind present.
NODE, CAUSE, MODEL, DIED, PEER, STOPPED, NOTHING = range(7)
KINDS = (
    "named a cause in its node's kernel log",
    "named a cause",
    "got a cause from the model",
    "died",
    "lost a peer",
    "was told to stop",
    "showed no failure",
)
SETTINGS = PACKAGE_DATA / "ranks.yaml"


@dataclass(frozen=True)
class RanksFile:
    """ranks.yaml: the reasons a rank reports when a peer died or hung; the reason of a rank
    known only from its launcher's word that it died, and what that word alone reads as."""

    peer_reasons: tuple[str, ...]
    launcher_death: str
    crash_signal: str


@cache
def ranks_settings(path: Path = SETTINGS) -> RanksFile:
    return load(path, RanksFile, "the ranks settings")


class AttemptReader:
    """Reads one attempt's files as ranks and finds its origin."""

    def __init__(self, classifier: Classifier, layout: Layout | None = None) -> None:
        self.classifier = classifier
        self.layout = layout or Layout()
        self.settings = ranks_settings()
        self.peer = frozenset(self.settings.peer_reasons)
        named = {*self.peer, self.settings.launcher_death, self.settings.crash_signal}
        unknown = sorted(named - set(classifier.ruleset.taxonomy.reasons))
        if unknown:
            raise ConfigError(f"{SETTINGS}: unknown reasons {unknown}")

    def read(self, streams: list[Stream]) -> AttemptAnswer:
        """One answer for the attempt's rank streams: the origin rank's classification, the origin, the cascade."""
        reports = reports_of(line for s in streams if s.rank is None for line in s.lines)
        launchers = {id(s) for s in streams if launcher_only(s)}
        for stream in streams:
            if stream.rank is None:  # a launcher's own lines, not its table of the ranks' errors
                stream.lines = outside_tables(stream.lines)
        judged = [(s, self._classify(s)) for s in streams]
        kinds = {id(s): self.kind(c, s) for s, c in judged}
        ranked = [(s, c) for s, c in judged if (s.rank is not None or s.kernel) and kinds[id(s)] != NOTHING]
        candidates = ranked or [(s, c) for s, c in judged if kinds[id(s)] != NOTHING and id(s) not in launchers]
        task_nodes = {task: node for report in reports if report.by == "srun" for task, node in [(report.rank, report.host)]}
        if not candidates:
            root = next((r for r in reports if r.root), None)
            if root is None:
                return AttemptAnswer(self._reported(None, judged, kinds)[0])
            how = f"{root.by} saw it fail first ({root.exit_code or 'exit'})"
            found, path = self._reported(root, judged, kinds)
            return AttemptAnswer(found, self._reported_origin(root, how, found, path))
        top = min(kinds[id(s)] for s, _ in candidates)
        first = [(s, c) for s, c in candidates if kinds[id(s)] == top]
        chosen, how = self._first(first, reports, top)
        seen = [s for s, _ in judged if s.rank is not None]
        if top >= PEER and (silent := self._silent(candidates, reports, top, seen)) is not None:
            report, how = silent
            found, path = self._reported(report if report.root else None, judged, kinds)
            origin = self._reported_origin(report, how, found, path)
            return AttemptAnswer(found, origin, *_cascade(candidates, reports, report.rank, kinds))
        classification = next(c for s, c in judged if s is chosen)
        origin = self._origin(chosen, classification, reports, task_nodes, how)
        if chosen.kernel:
            origin = self._on_its_gpu(origin, classification, judged, reports, task_nodes)
        cascade = _cascade(candidates, reports, origin.rank, kinds)
        return AttemptAnswer(self._in_files(chosen, classification), origin, *cascade)

    def _silent(
        self, candidates: list[tuple[Stream, Classification]], reports: list[LauncherReport], top: int, seen: list[Stream]
    ) -> tuple[LauncherReport, str] | None:
        """Where every rank that speaks only lost a peer (or was told to stop), the rank that
        said nothing: the one the launcher saw fail first, else the only one of the ranks
        known (from the facts' nodes and ranks per node, the launchers' tables and the ranks
        ``seen`` in the logs) that reported no failure: the others waited on it."""
        spoke = {s.rank for s, _ in candidates}
        named = [r for r in reports if r.root or r.by == "mpirun"]  # each torchrun agent names its node's first
        first = min(named, key=lambda r: (r.time if r.time is not None else float("inf"), r.rank in spoke), default=None)
        if first is not None and first.rank not in spoke:
            return first, f"{first.by} saw it fail first ({first.exit_code or 'exit'}); no line of its rank names a failure"
        known = {rank: LauncherReport(rank, by="facts") for rank in range(self.layout.world_size or 0)}
        known |= {s.rank: _quiet(s) for s in seen if s.rank is not None}
        known |= {r.rank: r for r in reports if r.by in ("torchrun", "srun")}
        quiet = [r for rank, r in known.items() if rank not in spoke]
        if top == PEER and len(quiet) == 1 and len(spoke) >= 2:
            return quiet[0], f"the one rank of {len(known)} that reported no failure while the others lost a peer"
        return None

    def _reported(
        self, report: LauncherReport | None, judged: list[tuple[Stream, Classification]], kinds: Mapping[int, int]
    ) -> tuple[Classification, str | None]:
        """The answer for an origin whose own rank's lines name no failure, and the file of its
        first evidence line. Where a launcher saw it fail first (``report``): the strongest of
        what the launcher printed of it (torchrun's entry: a signal, an exit code; not a
        SIGTERM, which only stopped it) and of the lines no rank's prefix claims (a native
        crash writes past the excepthook: "Fatal Python error"). Else, or where those name
        nothing, the strongest answer of any log (a hang: the others' timeouts)."""
        options: list[tuple[Classification, str | None]] = []
        if report is not None:
            options = [self._placed(s, c) for s, c in judged if s.rank is None and kinds[id(s)] in (CAUSE, MODEL, DIED)]
            if report.text and report.line is not None and "SIGTERM" not in report.exit_code:
                found = self.classifier.classify_bytes(report.text + "\n")
                first = report.line.number
                evidence = tuple(Evidence(first + e.line - 1, e.text) for e in found.evidence)
                options.append((replace(found, evidence=evidence), report.line.path))
        options = [o for o in options if o[0].reason != NO_SIGNATURE] or [self._placed(s, c) for s, c in judged]
        best = max(options, key=lambda o: self.classifier.strength(o[0]), default=(self.classifier.classify_bytes(b""), None))
        if report is not None and report.line is not None and self._only_the_death(best[0], report.line.text):
            return self._death(best[0], report), report.line.path
        return best

    def _death(self, found: Classification, report: LauncherReport) -> Classification:
        """A rank that printed nothing of its failure, only its launcher's word that it died
        (an exit code, a signal): traceback_from_crash, as docs/TAXONOMY.md has it ("only a
        parent's or launcher's report that a child died"); what its peers printed after it
        are consequences."""
        assert report.line is not None
        reason = self.classifier.ruleset.taxonomy[self.settings.launcher_death]
        return replace(
            found,
            reason=reason.id,
            reason_name=reason.name,
            categories=reason.categories,
            source="launcher",
            rule_id=None,
            why=f"Only {report.by}'s report that rank {report.rank} died ({report.exit_code or 'exit'}) survived; "
            "its own output, or the node's logs, hold the cause.",
            evidence=(Evidence(report.line.number, report.line.text),),
            also_matched=(),
        )

    def _only_the_death(self, found: Classification, report_line: str) -> bool:
        """Whether an answer says no more than that the rank died: nothing, its peers' loss,
        or the launcher's own line naming the signal."""
        by_launcher = found.reason == self.settings.crash_signal and any(e.text == report_line for e in found.evidence)
        return found.reason == NO_SIGNATURE or found.reason in self.peer or by_launcher

    def _placed(self, stream: Stream, found: Classification) -> tuple[Classification, str | None]:
        """A stream's classification numbered as in its files, and its first evidence line's file."""
        path = stream.lines[found.evidence[0].line - 1].path if found.evidence else None
        return self._in_files(stream, found), path

    def _classify(self, stream: Stream) -> Classification:
        return self.classifier.classify_bytes("\n".join(line.text for line in stream.lines) + "\n")

    def kind(self, classification: Classification, stream: Stream) -> int:
        """How causal a rank's failure is (NODE ... NOTHING); a node's kernel log counts only
        where it names a cause."""
        if classification.reason == NO_SIGNATURE:
            return NOTHING
        if stream.kernel:
            return NODE if self.classifier.roles.get(classification.rule_id or "") is Role.CAUSE else NOTHING
        if classification.reason in self.peer:
            return PEER
        if classification.source == "model":
            return MODEL
        if self.classifier.roles.get(classification.rule_id or "") is Role.CAUSE:
            return CAUSE
        ended = self.classifier.ruleset.endings.names_no_cause
        if any(ended(e.text) for e in classification.evidence):
            return STOPPED
        # told to stop before its failure (a SIGTERM, a cancelled step): a stop printed after
        # it (srun's step cancelled once the rank had died) is its consequence
        failed_at = classification.evidence[0].line if classification.evidence else len(stream.lines) + 1
        tail = range(max(0, len(stream.lines) - 20), len(stream.lines))
        if any(ended(stream.lines[i].text) for i in tail if i + 1 < failed_at):
            return STOPPED
        return DIED

    def _first(self, first: list[tuple[Stream, Classification]], reports: list[LauncherReport], kind: int) -> tuple[Stream, str]:
        label = KINDS[kind]
        if len(first) == 1:
            return first[0][0], f"the only {'rank' if first[0][0].rank is not None else 'log'} that {label}"
        times = [(_first_time(s, c), s) for s, c in first]
        if all(t is not None for t, _ in times):
            _, stream = min(times, key=lambda pair: (pair[0], pair[1].rank if pair[1].rank is not None else -1))
            return stream, f"earliest of {len(first)} ranks that {label}, by the time on its lines"
        for report in sorted(reports, key=lambda r: (not r.root, r.time if r.time is not None else float("inf"))):
            if report.root or report.by in ("mpirun", "srun"):
                match = next((s for s, _ in first if s.rank == report.rank), None)
                if match is not None:
                    return match, f"{report.by} saw it fail first, of {len(first)} ranks that {label}"
        stream = max(first, key=lambda pair: (self.classifier.strength(pair[1]), -(pair[0].rank or 0)))[0]
        return stream, f"strongest answer of {len(first)} ranks that {label} (no time, no launcher's word)"

    def _origin(
        self, stream: Stream, found: Classification, reports: list[LauncherReport], task_nodes: Mapping[int, str | None], how: str
    ) -> Origin:
        evidence_line = stream.lines[found.evidence[0].line - 1] if found.evidence else stream.lines[-1]
        node = self._node(stream, reports, task_nodes)
        gpu = _gpu(stream, found)
        if gpu is None and stream.rank is not None:
            gpu = self.layout.gpu_of_rank(stream.rank)
        return Origin(stream.rank, node, gpu, evidence_line.path, evidence_line.number, how)

    def _on_its_gpu(
        self,
        origin: Origin,
        found: Classification,
        judged: list[tuple[Stream, Classification]],
        reports: list[LauncherReport],
        task_nodes: Mapping[int, str | None],
    ) -> Origin:
        """A node's kernel origin with the GPU its Xid names (by bus id, as NCCL's lines or
        nvidia-smi's table in the logs map it) and the rank that used that GPU: the one whose
        NCCL line names the bus id, else the one rank of that node whose lines name that GPU,
        else the rank the facts place there (one GPU per rank)."""
        bus = next((_bus_id(m) for e in found.evidence if (m := _XID.search(e.text)) is not None), None)
        if bus is None:
            return origin
        ranks = [(s, c) for s, c in judged if s.rank is not None]
        nodes = {id(s): self._node(s, reports, task_nodes) for s, _ in judged}
        known = self._bus_ids(judged, nodes)
        tie = known.get((origin.node, bus)) or known.get((None, bus))
        if tie is None:
            return replace(origin, how=f"{origin.how}; no log maps the Xid's bus id {_bus_text(bus)} to a GPU")
        rank, gpu, where = tie
        if rank is None:
            on_gpu = [s.rank for s, c in ranks if nodes[id(s)] == origin.node and _gpu(s, c) == gpu]
            rank = on_gpu[0] if len(on_gpu) == 1 else self.layout.rank_on_gpu(origin.node, gpu)
        of = "" if rank is None else f" of rank {rank}"
        how = f"{origin.how}; the Xid's bus id {_bus_text(bus)} is GPU {gpu}{of} ({where})"
        return replace(origin, rank=rank, gpu=gpu, how=how)

    def _bus_ids(self, judged: list[tuple[Stream, Classification]], nodes: Mapping[int, str | None]) -> dict[BusKey, Tie]:
        """(node, bus id) -> the rank and GPU the logs tie it to: NCCL's lines (the process's
        rank and CUDA device), nvidia-smi's table rows (the node's GPU index, no rank). A
        line's node is its NCCL host, else its stream's, else its rank's by the facts; None
        where none is known. Where lines disagree on the rank, the GPU they agree on alone;
        on the GPU, nothing."""
        seen: dict[BusKey, set[tuple[int | None, int, str]]] = defaultdict(set)
        for stream, _ in judged:
            for line in stream.lines:
                if (m := _NCCL_BUS.search(line.text)) is not None:
                    rank = stream.rank if stream.rank is not None else int(m.group(1))
                    host = self.layout.node_named(p.group(1)) if (p := NCCL_PROCESS.match(line.text)) else None
                    value = int(m.group(3), 16)
                    bus = (value >> 20, (value & 0xFF000) >> 12, (value & 0xFF0) >> 4)
                    node = host or nodes[id(stream)] or self.layout.node_of_rank(rank)
                    seen[(node, bus)].add((rank, int(m.group(2)), "NCCL's busId"))
                elif (m := _SMI_ROW.match(line.text)) is not None:
                    seen[(nodes[id(stream)], _bus_id(m))].add((None, int(m.group(1)), "nvidia-smi's table"))
        known: dict[BusKey, Tie] = {}
        for key, ties in seen.items():
            gpus = {gpu for _, gpu, _ in ties}
            ranks = {rank for rank, _, _ in ties if rank is not None}
            if len(gpus) == 1:
                known[key] = (ranks.pop() if len(ranks) == 1 else None, gpus.pop(), " and ".join(sorted({w for *_, w in ties})))
        return known

    def _node(self, stream: Stream, reports: list[LauncherReport], task_nodes: Mapping[int, str | None]) -> str | None:
        named = self.layout.node_named
        for host in stream.hosts:
            if (node := named(host)) is not None:
                return node
        for line in stream.lines:
            if (m := NCCL_PROCESS.match(line.text)) and (node := named(m.group(1))) is not None:
                return node
        for report in reports:
            if report.rank == stream.rank and report.by == "torchrun" and (node := named(report.host)) is not None:
                return node
        for task in sorted(stream.tasks):
            if (node := named(task_nodes.get(task))) is not None:
                return node
            if task < len(self.layout.nodes) and self.layout.tasks_per_node is None and stream.rank != task:
                return self.layout.nodes[task]  # one srun task per node: the task is the node
        if stream.rank is not None and (node := named(task_nodes.get(stream.rank))) is not None:
            return node
        return None if stream.rank is None else self.layout.node_of_rank(stream.rank)

    def _reported_origin(self, report: LauncherReport, how: str, found: Classification, path: str | None) -> Origin:
        """The origin a launcher named, at the first line of the answer's evidence if its file
        is known (else at the launcher's own line)."""
        node = self.layout.node_named(report.host) or self.layout.node_of_rank(report.rank)
        gpu = self.layout.gpu_of_rank(report.rank)
        if path is not None and found.evidence:
            return Origin(report.rank, node, gpu, path, found.evidence[0].line, how)
        line = report.line
        return Origin(report.rank, node, gpu, line.path if line else None, line.number if line else None, how)

    @staticmethod
    def _in_files(stream: Stream, found: Classification) -> Classification:
        """The classification with its evidence numbered as in the files."""
        evidence = tuple(Evidence(stream.lines[e.line - 1].number, e.text) for e in found.evidence)
        return replace(found, evidence=evidence)


def _quiet(stream: Stream) -> LauncherReport:
    """A rank the logs show, that no launcher reported: at its last line."""
    assert stream.rank is not None
    return LauncherReport(stream.rank, stream.hosts[0] if stream.hosts else None, line=stream.lines[-1], by="log")


def _first_time(stream: Stream, found: Classification) -> float | None:
    """The time of a rank's failure: its first evidence line's, or the last time before it."""
    if not found.evidence:
        return None
    upto = found.evidence[0].line
    return next((line.time for line in reversed(stream.lines[:upto]) if line.time is not None), None)


def _gpu(stream: Stream, found: Classification) -> int | None:
    """The CUDA device the failure names: in its evidence (``GPU 0``, ``cuda:1``, NCCL's
    ``host:pid:tid [3]``), else in the rank's NCCL lines. An index as the process saw it
    (under CUDA_VISIBLE_DEVICES)."""
    for text in (e.text for e in found.evidence):
        if (m := NCCL_PROCESS.match(text)) is not None:
            return int(m.group(3))
        if (m := _GPU.search(text)) is not None:
            return int(next(g for g in m.groups() if g is not None))
    return next((int(m.group(3)) for line in stream.lines if (m := NCCL_PROCESS.match(line.text)) is not None), None)


def _bus_id(match: re.Match[str]) -> BusId:
    domain, bus, device = (int(g, 16) for g in match.groups()[-3:])
    return domain & 0xFFFF, bus, device


def _bus_text(bus: BusId) -> str:
    return "{:04x}:{:02x}:{:02x}".format(*bus)


def _cascade(
    candidates: list[tuple[Stream, Classification]], reports: list[LauncherReport], origin: int | None, kinds: Mapping[int, int]
) -> tuple[tuple[int, ...], dict[str, int]]:
    """The other ranks that failed (those whose logs show it, and those only a launcher
    reports), and how many of them failed in each way."""
    shown = {s.rank: KINDS[kinds[id(s)]] for s, _ in candidates if s.rank is not None and s.rank != origin}
    reported = {r.rank for r in reports if r.by in ("torchrun", "srun", "mpirun")} - set(shown) - {origin}
    counts: dict[str, int] = defaultdict(int)
    for kind in [*shown.values(), *(["reported by its launcher"] * len(reported))]:
        counts[kind] += 1
    return tuple(sorted({*shown, *reported})), dict(counts)


def read_attempt(classifier: Classifier, paths: Sequence[Path], layout: Layout | None = None) -> AttemptAnswer:
    """The answer for an attempt given as its log files (InputError for one that cannot be read)."""
    reader = AttemptReader(classifier, layout)
    return reader.read(rank_streams({str(path): read_lines(path) for path in paths}, reader.layout))
