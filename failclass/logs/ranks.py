"""One attempt's logs read as ranks: which rank failed first, where, and which followed.

The logs come as launchers write them, and each line says whose it is by its prefix:
torchrun's ``[rank3]:`` (the global rank, torch's excepthook) and ``[default3]:`` (``--tee``:
role and local rank), ``srun --label``'s ``3: `` (the task), ``mpirun --tag-output``'s
``[1,3]<stderr>:`` (the world rank), pdsh's ``host: `` (DeepSpeed's multi-node runner:
github.com/huggingface/transformers/issues/22363), Ray's ``(Worker pid=N, ip=A)``
(github.com/ray-project/ray/issues/23060, whose ``[rank=0, world_size=5]`` names the rank);
or one file per rank: torchrun ``--log-dir``'s ``.../attempt_0/<local rank>/stderr.log``,
Slurm's ``%t``/``%N`` output names, a file per Kubernetes pod. Prefixes nest (``0:
[rank3]: ``); the outer ones were produced here with torchrun, mpirun and a real Slurm
(tests/data/ranks/README.md). A line's time is read where it carries one: glog's
``W1128 19:33:38.582000``, ISO and Python logging's ``2026-11-28 19:35:30,625``, DeepSpeed's
``[2023-03-24 10:26:51,118]``.

Each rank's stream is classified on its own (failclass.classifier); the origin is the rank
whose failure is the most causal (a named root cause, then the model's answer, then a
process that died of itself, then one that lost a peer, then one told to stop), and among
those the first: by time where every one has a time, else as the launcher saw it
(torchrun's "Root Cause (first observed failure)", mpirun's "The first process to do so
was", srun's first non-zero exit), else the strongest answer. Where comes from the log
first (a host prefix, NCCL's ``host:pid:tid [gpu]`` lines: github.com/facebookresearch/deit/issues/28,
torchrun's failure table, srun's ``srun: error: NODE: task N:``), then from the attempt's
facts (its nodes in rank order with tasks per node, pod -> node)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from failclass.classifier import Classifier
from failclass.contracts import AttemptAnswer, Classification, Evidence, Origin
from failclass.logs.region import names_no_cause
from failclass.logs.text import BlockReader, open_log
from failclass.matching.taxonomy import NO_SIGNATURE

# -- prefixes, outermost first; each match is consumed and the next tried ------------------
_SRUN = re.compile(r" *(\d{1,6}): ")
_MPIRUN = re.compile(r"\[\d+,(\d+)\]<std(?:out|err|diag)>: ?")
_RAY = re.compile(r"\((?:[A-Za-z_][\w.]* )?pid=(\d+)(?:, ip=([\d.]+))?\) ?")
_HOST = re.compile(r"([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9]): ")
_TORCH_RANK = re.compile(r"\[rank(\d+)\]: ?")
_ELASTIC_ROLE = re.compile(r"\[([A-Za-z_][A-Za-z_-]*?)(\d+)\]: ?")
_RAY_RANK = re.compile(r"\[rank=(\d+), world_size=\d+\]")
# -- times ------------------------------------------------------------------------------
_ISO = re.compile(r"\[?\d{4}-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_GLOG = re.compile(r"\[?[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)")
# -- where -------------------------------------------------------------------------------
_NCCL = re.compile(r"^([A-Za-z0-9][\w.-]*):\d+:\d+ \[(\d+)\] NCCL")
_GPU = re.compile(r"\bcudaDev (\d+)|\bcuda:(\d+)|\bGPU (\d+)\b|\bdevice[ =](\d+)\b")
_TORCHRUN_DIR = re.compile(r"(?:^|/)attempt_\d+/(\d+)/(?:stdout|stderr)\.log$")
# -- launchers' own verdicts -------------------------------------------------------------
_ROOT_CAUSE = "Root Cause (first observed failure):"
_ENTRY = re.compile(r"^\s*\[\d+\]:\s*$")
_FIELD = re.compile(r"^\s+(time|host|rank|exitcode|error_file)\s*: (.*)$")
_MPI_FIRST = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\]")
_SRUN_ERROR = re.compile(r"^srun: error: (\S+): tasks? ([\d,-]+): (.*)$")

# A rank's failure, most causal first: the origin is taken from the first kind present.
CAUSE, MODEL, DIED, PEER, STOPPED, NOTHING = range(6)
KINDS = ("named a cause", "model's answer", "died", "lost a peer", "told to stop", "no failure")
# Reasons a rank reports when a peer died or hung: a collective or the store timed out, the
# peer closed the connection (the rules' own why says "find the first rank that failed").
PEER_REASONS = frozenset({"mpi_runtime_failure"})
LOCALHOST = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class Layout:
    """The attempt's facts about where ranks ran: nodes in rank order, tasks per node,
    pod name -> node."""

    nodes: tuple[str, ...] = ()
    tasks_per_node: int | None = None
    pods: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, facts: Mapping[str, object]) -> Layout:
        nodes = facts.get("nodes") or ()
        per = facts.get("tasks_per_node")
        pods = facts.get("pods") or {}
        if not isinstance(nodes, list | tuple) or not isinstance(pods, Mapping) or not (per is None or isinstance(per, int)):
            raise ValueError("facts: nodes must be a list, tasks_per_node an integer, pods an object")
        return cls(tuple(str(n) for n in nodes), per, {str(k): str(v) for k, v in pods.items()})

    def node_named(self, host: str | None) -> str | None:
        """A host as the facts name it (``node1`` for ``node1.cluster``); None for localhost."""
        if host is None or host in LOCALHOST:
            return None
        if not self.nodes or host in self.nodes:
            return host
        short = host.split(".")[0]
        return next((n for n in self.nodes if n.split(".")[0] == short), host)

    def node_of_rank(self, rank: int) -> str | None:
        if len(self.nodes) == 1:
            return self.nodes[0]
        if self.tasks_per_node and rank // self.tasks_per_node < len(self.nodes):
            return self.nodes[rank // self.tasks_per_node]
        return None


@dataclass(frozen=True)
class Line:
    path: str
    number: int  # in its file, from 1
    text: str  # without the launcher's prefixes
    time: float | None  # seconds from the start of the year (the year itself is ignored)


@dataclass
class Tag:
    """Whose a line is, as its prefixes and its file say."""

    rank: int | None = None  # global rank
    local: int | None = None  # local rank under torchrun's role
    task: int | None = None  # srun task
    host: str | None = None
    pid: int | None = None  # Ray's worker process
    context: str = ""  # what a local rank is local to (a file, a torchrun log folder)


@dataclass
class Stream:
    """The lines of one rank (or, where no rank can be told, one process, host or file)."""

    key: tuple[object, ...]
    rank: int | None
    lines: list[Line] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    tasks: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Report:
    """A launcher's word on one rank: from torchrun's failure table (``root``: its Root
    Cause entry), mpirun's first failed process, or srun's error lines."""

    rank: int
    host: str | None = None
    time: float | None = None
    root: bool = False
    exit_code: str = ""
    line: Line | None = None
    by: str = ""
    text: str = ""  # what the launcher printed of it (torchrun's table entry)


def read_lines(path: Path) -> list[str]:
    """A log's lines, gzip or not, ANSI sequences removed, invalid UTF-8 replaced."""
    with open_log(path) as stream:
        data = b"".join(BlockReader(stream))
    return data.decode("utf-8", "replace").splitlines()


def time_of(text: str) -> float | None:
    match = _ISO.match(text) or _GLOG.match(text)
    if match is None:
        return None
    month, day, hour, minute, second = (int(g) for g in match.groups()[:5])
    fraction = float("0." + match.group(6)) if match.group(6) else 0.0
    return ((month * 31 + day) * 24 + hour) * 3600 + minute * 60 + second + fraction


def _file_tag(path: str, layout: Layout, numbered: Mapping[str, int]) -> Tag:
    """What a file's path says of whose it is: torchrun's --log-dir folder (local rank), a
    number that alone tells apart files named alike (Slurm's %t, ``rank-3.log``), a pod or
    node of the facts among its parts."""
    tag = Tag(context=path)
    if match := _TORCHRUN_DIR.search(path):
        tag.local, tag.context = int(match.group(1)), path[: match.start(1)]
    elif path in numbered:
        tag.task = numbered[path]
    parts = re.split(r"[/_.]|(?<=\D)-|-(?=\d+\.)", path)
    for name, node in layout.pods.items():
        if name in path:
            tag.host = node
    for node in layout.nodes:
        if tag.host is None and node in parts:
            tag.host = node
    return tag


def _numbered(paths: Sequence[str]) -> dict[str, int]:
    """Files named alike but for one number (``out-7-vm-0.out``, ``out-7-vm-1.out``): path ->
    that number, where it differs between them (a job id the same in all does not count)."""
    groups: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path in paths:
        numbers = list(re.finditer(r"\d+", Path(path).name))
        if numbers:
            last = numbers[-1]
            template = str(Path(path).parent / (Path(path).name[: last.start()] + "#" + Path(path).name[last.end() :]))
            groups[template].append((path, int(last.group())))
    return {path: n for members in groups.values() if len(members) > 1 for path, n in members}


def _host_prefixes(lines: Sequence[str], layout: Layout) -> frozenset[str]:
    """Tokens that prefix this file's lines as pdsh writes a host: known nodes, or a name
    with a digit, dot or dash that starts at least a fifth of the lines (an exception's
    name, ``RuntimeError: ``, is not one)."""
    counts: dict[str, int] = defaultdict(int)
    for line in lines:
        if (match := _HOST.match(line)) and not match.group(1).isdigit():
            counts[match.group(1)] += 1
    filled = sum(1 for line in lines if line.strip()) or 1
    return frozenset(
        token
        for token, count in counts.items()
        if token in layout.nodes
        or (re.search(r"[\d.-]", token) and not re.search(r"(?:Error|Exception|Warning)$", token) and count * 5 >= filled)
    )


def _parse(line: str, base: Tag, hosts: frozenset[str]) -> tuple[Tag, str]:
    """The line's tag (its file's, refined by its prefixes) and the text after them."""
    tag = replace(base)
    rest = line
    while True:
        if (m := _MPIRUN.match(rest) or _TORCH_RANK.match(rest)) is not None:
            tag.rank = int(m.group(1))
        elif (m := _ELASTIC_ROLE.match(rest)) is not None and tag.local is None:
            tag.local = int(m.group(2))
        elif (m := _RAY.match(rest)) is not None:
            tag.pid, tag.host = int(m.group(1)), m.group(2) or tag.host
        elif (m := _SRUN.match(rest)) is not None and tag.task is None and tag.rank is None and tag.local is None:
            tag.task = int(m.group(1))
        elif (m := _HOST.match(rest)) is not None and m.group(1) in hosts:
            tag.host = m.group(1)
        else:
            return tag, rest
        rest = rest[m.end() :]


class AttemptReader:
    """Splits one attempt's files into rank streams and finds its origin."""

    def __init__(self, classifier: Classifier, layout: Layout = Layout()) -> None:
        self.classifier = classifier
        self.layout = layout

    def streams(self, files: Mapping[str, Sequence[str]]) -> list[Stream]:
        """Every file's lines, in per-rank streams (ordered as read within each file)."""
        numbered = _numbered(list(files))
        tagged: list[tuple[Tag, Line]] = []
        for path, lines in files.items():
            base = _file_tag(path, self.layout, numbered)
            hosts = _host_prefixes(lines, self.layout)
            for number, raw in enumerate(lines, 1):
                tag, text = _parse(raw, base, hosts)
                if tag.task is not None and base.task is None:
                    tag.context = f"{path}#task{tag.task}"
                elif tag.host is not None and base.host is None:
                    tag.context = f"{path}#host{tag.host}"
                tagged.append((tag, Line(path, number, text, time_of(text))))
        return self._group(tagged)

    def _group(self, tagged: list[tuple[Tag, Line]]) -> list[Stream]:
        local_rank: dict[tuple[str, int], int] = {}
        agents: set[tuple[str, int]] = set()  # srun tasks that are a node's launcher (their lines carry ranks)
        ray_rank: dict[tuple[str | None, int], int] = {}
        for tag, line in tagged:
            if tag.rank is not None and tag.local is not None:
                local_rank[(tag.context, tag.local)] = tag.rank
            if tag.task is not None and (tag.local is not None or tag.rank not in (None, tag.task)):
                agents.add((tag.context.split("#")[0], tag.task))
            if tag.pid is not None and (m := _RAY_RANK.search(line.text)):
                ray_rank[(tag.host, tag.pid)] = int(m.group(1))
        contexts = {tag.context for tag, _ in tagged if tag.local is not None}
        streams: dict[tuple[object, ...], Stream] = {}
        for tag, line in tagged:
            rank = tag.rank
            if rank is None and tag.local is not None:
                rank = local_rank.get((tag.context, tag.local))
                if rank is None and len(contexts) == 1:
                    rank = tag.local  # one torchrun: its local ranks are the ranks
            if rank is None and tag.pid is not None:
                rank = ray_rank.get((tag.host, tag.pid))
            if rank is None and tag.task is not None and (tag.context.split("#")[0], tag.task) not in agents:
                rank = tag.task
            if rank is not None:
                key: tuple[object, ...] = ("rank", rank)
            elif tag.local is not None:
                key = ("local", tag.context, tag.local)
            elif tag.pid is not None:
                key = ("process", tag.host, tag.pid)
            else:
                key = ("file", tag.context)
            stream = streams.setdefault(key, Stream(key, rank))
            stream.lines.append(line)
            if tag.host is not None and tag.host not in stream.hosts:
                stream.hosts.append(tag.host)
            if tag.task is not None:
                stream.tasks.add(tag.task)
        return list(streams.values())

    def answer(self, files: Mapping[str, Sequence[str]]) -> AttemptAnswer:
        """One answer for the attempt: the origin rank's classification, the origin, the cascade."""
        streams = self.streams(files)
        reports = _reports(line for s in streams if s.rank is None for line in s.lines)
        judged = [(s, self._classify(s)) for s in streams]
        kinds = {id(s): self.kind(c, s) for s, c in judged}
        ranked = [(s, c) for s, c in judged if s.rank is not None and kinds[id(s)] != NOTHING]
        candidates = ranked or [(s, c) for s, c in judged if kinds[id(s)] != NOTHING and not _launcher_only(s)]
        task_nodes = {task: node for report in reports if report.by == "srun" for task, node in [(report.rank, report.host)]}
        if not candidates:
            root = next((r for r in reports if r.root), None)
            if root is None:
                return AttemptAnswer(self._reported(None, judged))
            how = f"{root.by} saw it fail first ({root.exit_code or 'exit'})"
            return AttemptAnswer(self._reported(root, judged), self._reported_origin(root, how))
        top = min(kinds[id(s)] for s, _ in candidates)
        first = [(s, c) for s, c in candidates if kinds[id(s)] == top]
        chosen, how = self._first(first, reports, top)
        if top >= PEER and (silent := self._silent(candidates, reports, top)) is not None:
            classification = self._reported(silent[0], judged)
            origin = self._reported_origin(*silent)
            return AttemptAnswer(classification, origin, *_cascade(candidates, reports, silent[0].rank, kinds))
        classification = next(c for s, c in judged if s is chosen)
        origin = self._origin(chosen, classification, reports, task_nodes, how)
        cascade = _cascade(candidates, reports, chosen.rank, kinds)
        return AttemptAnswer(self._in_files(chosen, classification), origin, *cascade)

    @staticmethod
    def _silent(candidates: list[tuple[Stream, Classification]], reports: list[Report], top: int) -> tuple[Report, str] | None:
        """Where every rank that speaks only lost a peer (or was told to stop), the rank that
        said nothing: the one the launcher saw fail first, else the only one of the ranks
        known (from the logs and the launcher's table) that reported no failure: the others
        waited on it."""
        spoke = {s.rank for s, _ in candidates}
        first = next((r for r in reports if r.root or r.by == "mpirun"), None)
        if first is not None and first.rank not in spoke:
            return first, f"{first.by} saw it fail first ({first.exit_code or 'exit'}); its own log names no failure"
        known = {r.rank: r for r in reports if r.by == "torchrun"}
        quiet = [r for rank, r in known.items() if rank not in spoke]
        if top == PEER and len(quiet) == 1 and len(spoke) >= 2:
            return quiet[0], f"the one rank of {len(known)} that reported no failure while the others lost a peer"
        return None

    def _reported(self, report: Report | None, judged: list[tuple[Stream, Classification]]) -> Classification:
        """The answer for an origin whose own log names no failure: what its launcher printed
        of it (torchrun's entry: a signal, an exit code; not a SIGTERM, which only stopped
        it), else the strongest answer of any log."""
        if report is not None and report.text and report.line is not None and "SIGTERM" not in report.exit_code:
            found = self.classifier.classify_bytes(report.text + "\n")
            if found.reason != NO_SIGNATURE:
                first = report.line.number
                return replace(found, evidence=tuple(Evidence(first + e.line - 1, e.text) for e in found.evidence))
        strongest = max((c for _, c in judged), key=self.classifier.strength, default=None)
        return strongest or self.classifier.classify_bytes(b"")

    def _classify(self, stream: Stream) -> Classification:
        return self.classifier.classify_bytes("\n".join(line.text for line in stream.lines) + "\n")

    def kind(self, classification: Classification, stream: Stream) -> int:
        """How causal a rank's failure is (CAUSE ... NOTHING)."""
        if classification.reason == NO_SIGNATURE:
            return NOTHING
        if classification.source == "model":
            return MODEL
        rule = self.classifier.rules.get(classification.rule_id or "")
        if classification.reason in PEER_REASONS:
            return PEER
        if rule is not None and rule.kind == "explicit" and classification.reason not in self.classifier.consequences:
            return CAUSE
        if any(names_no_cause(e.text) for e in classification.evidence) or any(
            names_no_cause(line.text) for line in stream.lines[-20:]
        ):
            return STOPPED
        return DIED

    def _first(self, first: list[tuple[Stream, Classification]], reports: list[Report], kind: int) -> tuple[Stream, str]:
        label = KINDS[kind]
        if len(first) == 1:
            return first[0][0], f"the only rank that {label}" if first[0][0].rank is not None else label
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
        self, stream: Stream, found: Classification, reports: list[Report], task_nodes: Mapping[int, str | None], how: str
    ) -> Origin:
        evidence_line = stream.lines[found.evidence[0].line - 1] if found.evidence else stream.lines[-1]
        node = self._node(stream, reports, task_nodes)
        return Origin(stream.rank, node, _gpu(stream, found), evidence_line.path, evidence_line.number, how)

    def _node(self, stream: Stream, reports: list[Report], task_nodes: Mapping[int, str | None]) -> str | None:
        named = self.layout.node_named
        for host in stream.hosts:
            if (node := named(host)) is not None:
                return node
        for line in stream.lines:
            if (m := _NCCL.match(line.text)) and (node := named(m.group(1))) is not None:
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

    def _reported_origin(self, report: Report, how: str) -> Origin:
        node = self.layout.node_named(report.host) or self.layout.node_of_rank(report.rank)
        line = report.line
        return Origin(report.rank, node, None, line.path if line else None, line.number if line else None, how)

    @staticmethod
    def _in_files(stream: Stream, found: Classification) -> Classification:
        """The classification with its evidence numbered as in the files."""
        evidence = tuple(Evidence(stream.lines[e.line - 1].number, e.text) for e in found.evidence)
        return replace(found, evidence=evidence)


def _launcher_only(stream: Stream) -> bool:
    """A stream that is a launcher's own report (torchrun's agent, mpirun, srun): no rank's."""
    return any(_ROOT_CAUSE in line.text or _MPI_FIRST.search(line.text) for line in stream.lines)


def _first_time(stream: Stream, found: Classification) -> float | None:
    """The time of a rank's failure: its first evidence line's, or the last time before it."""
    if not found.evidence:
        return None
    upto = found.evidence[0].line
    return next((line.time for line in reversed(stream.lines[:upto]) if line.time is not None), None)


def _gpu(stream: Stream, found: Classification) -> int | None:
    """The CUDA device the failure names (in its evidence, else an NCCL line of the rank)."""
    for text in [e.text for e in found.evidence] + [line.text for line in stream.lines]:
        if (m := _GPU.search(text)) is not None:
            return int(next(g for g in m.groups() if g is not None))
        if (m := _NCCL.match(text)) is not None:
            return int(m.group(2))
    return None


def _reports(lines: Iterable[Line]) -> list[Report]:
    """What launchers said of ranks: torchrun's failure table (Root Cause first), mpirun's
    first failed process, srun's errors (a task and its node; rank = task)."""
    found: list[Report] = []
    entry: dict[str, str] = {}
    entry_lines: list[Line] = []
    root = False
    expect_mpi = False

    def close() -> None:
        if "rank" in entry and (m := re.match(r"\d+", entry["rank"])):
            host = entry.get("host")
            when = time_of(entry.get("time", ""))
            exit_code = entry.get("exitcode", "")
            text = "\n".join(line.text for line in entry_lines)
            found.append(Report(int(m.group()), host, when, root, exit_code, entry_lines[0], "torchrun", text))
        entry.clear()
        entry_lines.clear()

    for line in lines:
        text = line.text
        if text.strip() == _ROOT_CAUSE:
            close()
            root = True
        elif text.strip() == "Failures:":
            close()
            root = False
        elif _ENTRY.match(text):
            close()
            entry_lines.append(line)
        elif entry_lines and not text.startswith("---"):
            entry_lines.append(line)
            if m := _FIELD.match(text):
                entry[m.group(1)] = m.group(2).strip()
        elif text.startswith("====="):
            close()
            root = False
        if "The first process to do so was" in text:
            expect_mpi = True
        elif expect_mpi and (m := _MPI_FIRST.search(text)):
            found.append(Report(int(m.group(1)), None, None, True, "", line, "mpirun"))
            expect_mpi = False
        if (m := _SRUN_ERROR.match(text)) is not None:
            for task in _task_list(m.group(2)):
                exit_code = m.group(3)
                failed = "Exited with exit code" in exit_code and not exit_code.endswith(" 0")
                found.append(Report(task, m.group(1), line.time, failed, exit_code, line, "srun"))
    close()
    return found


def _task_list(text: str) -> list[int]:
    """srun's task list: ``1,3-5`` -> [1, 3, 4, 5]."""
    tasks: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if low.isdigit():
            tasks.extend(range(int(low), int(high or low) + 1))
    return tasks


def _cascade(
    candidates: list[tuple[Stream, Classification]], reports: list[Report], origin: int | None, kinds: Mapping[int, int]
) -> tuple[tuple[int, ...], dict[str, int]]:
    """The other ranks that failed (those whose logs show it, and those only a launcher
    reports), and how many of them failed in each way."""
    shown = {s.rank: KINDS[kinds[id(s)]] for s, _ in candidates if s.rank is not None and s.rank != origin}
    reported = {r.rank for r in reports if r.by in ("torchrun", "srun", "mpirun")} - set(shown) - {origin}
    counts: dict[str, int] = defaultdict(int)
    for kind in [*shown.values(), *(["reported by its launcher"] * len(reported))]:
        counts[kind] += 1
    return tuple(sorted({*shown, *reported})), dict(counts)


def read_attempt(classifier: Classifier, paths: Sequence[Path], layout: Layout = Layout()) -> AttemptAnswer:
    """The answer for an attempt given as its log files (InputError for one that cannot be read)."""
    return AttemptReader(classifier, layout).answer({str(path): read_lines(path) for path in paths})
