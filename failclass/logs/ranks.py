"""One attempt's logs read as ranks: each line given to the rank that wrote it.

The logs come as launchers write them, and each line says whose it is by its prefix:
torchrun's ``[rank3]:`` (the global rank, torch's excepthook) and ``[default3]:`` (``--tee``:
role and local rank), ``srun --label``'s ``3: `` (the task), ``mpirun --tag-output``'s
``[1,3]<stderr>:`` (the world rank), pdsh's ``host: `` (DeepSpeed's multi-node runner:
github.com/huggingface/transformers/issues/22363), Ray's ``(Worker pid=N, ip=A)``
(github.com/ray-project/ray/issues/23060, whose ``[rank=0, world_size=5]`` names the rank);
or one file per rank: torchrun ``--log-dir``'s ``.../attempt_0/<local rank>/stderr.log``,
Slurm's ``%t``/``%N`` output names, a file per Kubernetes pod. Prefixes nest (``0:
[rank3]: ``); the torchrun, mpirun and srun ones were produced here with the real launchers
(tests/data/ranks/README.md). A line's time is read where it carries one: glog's
``W1128 19:33:38.582000`` (torch's C++ records write the month unpadded, ``[E626 06:24:44``:
github.com/XPixelGroup/BasicSR/issues/737), ISO and Python logging's ``2026-11-28
19:35:30,625``, DeepSpeed's ``[2023-03-24 10:26:51,118]``, torchrun's table's
``2026-11-28_19:33:46``. A node's kernel log (dmesg, ``dmesg -T``, syslog and ``journalctl -k``:
``Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid ...``,
github.com/NVIDIA/gpu-operator/issues/1146) is that node's evidence, not a rank's: its
lines form the node's own stream, named by the syslog host or the file's name. Which rank
failed first is failclass.logs.origin's question."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from failclass.logs.text import BlockReader, open_log

# -- prefixes, outermost first; each match is consumed and the next tried ------------------
_SRUN = re.compile(r" *(\d{1,6}): ")
_MPIRUN = re.compile(r"\[\d+,(\d+)\]<std(?:out|err|diag)>: ?")
_RAY = re.compile(r"\((?:[A-Za-z_][\w.]* )?pid=(\d+)(?:, ip=([\d.]+))?\) ?")
_HOST = re.compile(r"([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9]): ")
_TORCH_RANK = re.compile(r"\[rank(\d+)\]: ?")
_ELASTIC_ROLE = re.compile(r"\[([A-Za-z_][A-Za-z_-]*?)(\d+)\]: ?")
_RAY_RANK = re.compile(r"\[rank=(\d+), world_size=\d+\]")
# NCCL's own prefix, host:pid:tid [cuda device] (kept: rules read it), and the line that
# ties the process to its rank: "comm 0x... rank 10 nranks 16 cudaDev 2"
# (github.com/sgl-project/sglang/issues/3398)
NCCL_PROCESS = re.compile(r"([A-Za-z0-9][\w.-]*):(\d+):\d+ \[(\d+)\] ")
# c10d's records name their rank in the message: "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL
# watchdog thread terminated" (samples/gpu_ecc_error--kohya_ddp_ecc_nccl_watchdog.log),
# "[PG ID 0 PG GUID 0(default_pg) Rank 1]" (github.com/XPixelGroup/BasicSR/issues/737)
_C10D_RANK = re.compile(r"ProcessGroup\w*\.cpp:\d+\] \[(?:PG [^\]]*?)?Rank (\d+)\]")
_NCCL_RANK = re.compile(r"NCCL INFO .*\brank (\d+) nranks \d+")
# A kernel record: syslog's or journalctl's "Mon DD HH:MM:SS host kernel: ", dmesg's uptime
# "[  219.470994] " or dmesg -T's "[Fri Apr  5 21:29:39 2024] " (kept in the line: rules read it)
_KERNEL = re.compile(
    r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d ([A-Za-z0-9][\w.-]*) kernel: )"
    r"|\[ *\d+\.\d+\] |\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] "
)
_TORCHRUN_DIR = re.compile(r"(?:^|/)attempt_\d+/(\d+)/(?:stdout|stderr)\.log$")
# -- times ------------------------------------------------------------------------------
_ISO = re.compile(r"\[?\d{4}-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_GLOG = re.compile(r"\[?[IWEF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)")
_SYSLOG = re.compile(r"(?:\[[A-Z][a-z]{2} )?([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)()")  # syslog, dmesg -T
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
LOCALHOST = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class Layout:
    """The attempt's facts about where ranks ran: nodes in rank order, tasks per node,
    pod name -> node, and the GPUs of the attempt (all nodes together)."""

    nodes: tuple[str, ...] = ()
    tasks_per_node: int | None = None
    pods: Mapping[str, str] = field(default_factory=dict)
    gpus: int = 0

    @classmethod
    def of(cls, facts: Mapping[str, object]) -> Layout:
        nodes = facts.get("nodes") or ()
        per = facts.get("tasks_per_node")
        pods = facts.get("pods") or {}
        gpus = facts.get("gpus") or 0
        if not isinstance(nodes, list | tuple) or not isinstance(pods, Mapping) or not (per is None or isinstance(per, int)):
            raise ValueError("facts: nodes must be a list, tasks_per_node an integer, pods an object")
        if not isinstance(gpus, int):
            raise ValueError("facts: gpus must be an integer")
        return cls(tuple(str(n) for n in nodes), per, {str(k): str(v) for k, v in pods.items()}, gpus)

    def node_named(self, host: str | None) -> str | None:
        """A host as the facts name it (``node1`` for ``node1.cluster``); None for localhost."""
        if host is None or host in LOCALHOST:
            return None
        if not self.nodes or host in self.nodes:
            return host
        short = host.split(".")[0]
        return next((n for n in self.nodes if n.split(".")[0] == short), host)

    @property
    def world_size(self) -> int | None:
        """How many ranks the facts say the attempt ran."""
        return len(self.nodes) * self.tasks_per_node if self.nodes and self.tasks_per_node else None

    def rank_of(self, host: str, local: int) -> int | None:
        """The global rank of a node's local rank, where the facts say the node's place and
        how many ranks each node runs."""
        node = self.node_named(host)
        if not self.tasks_per_node or node not in self.nodes or local >= self.tasks_per_node:
            return None
        return self.nodes.index(node) * self.tasks_per_node + local

    def gpu_of_rank(self, rank: int) -> int | None:
        """A rank's GPU where the facts give each rank one GPU (as many GPUs as ranks): its
        local rank, as torchrun and srun jobs pick theirs (``cuda:LOCAL_RANK``)."""
        if self.world_size is None or self.gpus != self.world_size or not 0 <= rank < self.world_size:
            return None
        assert self.tasks_per_node is not None
        return rank % self.tasks_per_node

    def rank_on_gpu(self, node: str | None, gpu: int) -> int | None:
        """The rank the facts place on a node's GPU, where they give each rank one GPU."""
        rank = None if node is None else self.rank_of(node, gpu)
        return rank if rank is not None and self.gpu_of_rank(rank) == gpu else None

    def node_of_rank(self, rank: int) -> str | None:
        if len(self.nodes) == 1:
            return self.nodes[0]
        if self.tasks_per_node and rank // self.tasks_per_node < len(self.nodes):
            return self.nodes[rank // self.tasks_per_node]
        return None


@dataclass(frozen=True)
class RankLine:
    path: str
    number: int  # in its file, from 1
    text: str  # without the launcher's prefixes

    @cached_property
    def time(self) -> float | None:
        """Seconds from the start of the year (the year itself is ignored) where the line
        begins with a time; read where asked (most lines' never are)."""
        return time_of(self.text)


@dataclass
class Tag:
    """Whose a line is, as its prefixes and its file say."""

    rank: int | None = None  # global rank
    local: int | None = None  # local rank under torchrun's role
    role: str | None = None
    task: int | None = None  # srun task
    host: str | None = None
    pid: int | None = None  # Ray's worker process
    kernel: bool = False  # a node's kernel record
    context: str = ""  # what a local rank is local to (a file, a torchrun log folder)


@dataclass
class Stream:
    """The lines of one rank (or, where no rank can be told, one process, host or file)."""

    key: tuple[object, ...]
    rank: int | None
    lines: list[RankLine] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    tasks: set[int] = field(default_factory=set)
    kernel: bool = False  # a node's kernel log


def read_lines(path: Path) -> list[str]:
    """A log's lines, gzip or not, ANSI sequences removed, invalid UTF-8 replaced."""
    with open_log(path) as stream:
        data = b"".join(BlockReader(stream))
    return data.decode("utf-8", "replace").splitlines()


def time_of(text: str) -> float | None:
    match = _ISO.match(text) or _GLOG.match(text) or _SYSLOG.match(text)
    if match is None or (match.re is _SYSLOG and match.group(1) not in _MONTHS):
        return None
    month, day, hour, minute, second = (_MONTHS.index(g) + 1 if g in _MONTHS else int(g) for g in match.groups()[:5])
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


@dataclass(frozen=True)
class Labels:
    """The prefixes a file's lines carry that could be something else at a line's start
    (``100: `` a user's print, ``RuntimeError: `` an exception, ``[step3]: ``): srun's task
    labels, torchrun's role names and pdsh's hosts, each counted only where it starts at
    least a fifth of the file's lines (a launcher labels every line), or names a node of
    the facts. None: any (the first pass that counts them)."""

    srun: bool = True
    roles: frozenset[str] | None = None
    hosts: frozenset[str] | None = None


def _labels(lines: Sequence[str], layout: Layout) -> Labels:
    srun = 0
    roles: dict[str, int] = defaultdict(int)
    hosts: dict[str, int] = defaultdict(int)
    blank, any_label = Tag(), Labels()
    for line in lines:
        tag, _ = _parse(line, blank, any_label)
        srun += tag.task is not None
        if tag.role is not None:
            roles[tag.role] += 1
        if tag.host is not None and tag.pid is None:
            hosts[tag.host] += 1
    most = (sum(1 for line in lines if line.strip()) or 1) / 5
    return Labels(
        srun >= most,
        frozenset(role for role, count in roles.items() if count >= most),
        frozenset(
            host
            for host, count in hosts.items()
            if host in layout.nodes
            or (re.search(r"[\d.-]", host) and not re.search(r"(?:Error|Exception|Warning)$", host) and count >= most)
        ),
    )


_ANY_PREFIX = re.compile(
    "|".join(f"(?:{p.pattern})" for p in (_SRUN, _MPIRUN, _RAY, _HOST, _TORCH_RANK, _ELASTIC_ROLE, NCCL_PROCESS, _KERNEL))
)  # one look for most lines, which start with none of them


def _parse(line: str, base: Tag, labels: Labels) -> tuple[Tag, str]:
    """The line's tag (its file's, refined by its prefixes) and the text after them. A
    line without a prefix gets ``base`` itself: a tag is copied before its first change
    (most lines have none, and a copy per line was most of a log's reading)."""
    if _ANY_PREFIX.match(line) is None and (base.rank is not None or _C10D_RANK.search(line) is None):
        return base, line
    tag, rest = base, line
    while True:
        if (m := _MPIRUN.match(rest) or _TORCH_RANK.match(rest)) is not None:
            tag = _own(tag, base)
            tag.rank = int(m.group(1))
        elif (m := _ELASTIC_ROLE.match(rest)) is not None and tag.local is None and _among(m.group(1), labels.roles):
            tag = _own(tag, base)
            tag.role, tag.local = m.group(1), int(m.group(2))
        elif (m := _RAY.match(rest)) is not None:
            tag = _own(tag, base)
            tag.pid, tag.host = int(m.group(1)), m.group(2) or tag.host
        elif (m := _SRUN.match(rest)) is not None and labels.srun and tag.task is None and tag.rank is tag.local is None:
            tag = _own(tag, base)
            tag.task = int(m.group(1))
        elif (m := _HOST.match(rest)) is not None and not m.group(1).isdigit() and _among(m.group(1), labels.hosts):
            tag = _own(tag, base)
            tag.host = m.group(1)
        else:
            if (m := _KERNEL.match(rest)) is not None:  # the node's, whoever's file it is in
                return Tag(host=m.group(1) or tag.host, kernel=True, context=base.context), rest
            if (m := NCCL_PROCESS.match(rest)) is not None and tag.pid is None:
                tag = _own(tag, base)
                tag.host, tag.pid = tag.host or m.group(1), int(m.group(2))
            if tag.rank is None and (m := _C10D_RANK.search(rest)) is not None:
                tag = _own(tag, base)
                tag.rank = int(m.group(1))
            return tag, rest
        rest = rest[m.end() :]


def _own(tag: Tag, base: Tag) -> Tag:
    """``tag``, copied first where it is still the file's ``base``."""
    return replace(base) if tag is base else tag


def _among(token: str, allowed: frozenset[str] | None) -> bool:
    return allowed is None or token in allowed


def rank_streams(files: Mapping[str, Sequence[str]], layout: Layout) -> list[Stream]:
    """Every file's lines, in per-rank streams (ordered as read within each file)."""
    numbered = _numbered(list(files))
    tagged: list[tuple[Tag, RankLine]] = []
    for path, lines in files.items():
        base = _file_tag(path, layout, numbered)
        labels = _labels(lines, layout)
        for number, raw in enumerate(lines, 1):
            tag, text = _parse(raw, base, labels)
            if tag.task is not None and base.task is None:
                tag.context = f"{path}#task{tag.task}"
            elif tag.host is not None and base.host is None:
                tag.context = f"{path}#host{tag.host}"
            tagged.append((tag, RankLine(path, number, text)))
    return _group(tagged, layout)


def _group(tagged: list[tuple[Tag, RankLine]], layout: Layout) -> list[Stream]:
    """Lines into streams by rank: a local rank, a Ray worker or an srun task resolved to the
    global rank where a line says both; where none can be, by local rank, process or file.
    A node's kernel records go to that node's stream (or their file's), never a rank's."""
    local_rank: dict[tuple[str, int], int] = {}
    agents: set[tuple[str, int]] = set()  # srun tasks that are a node's launcher (their lines carry ranks)
    process_rank: dict[tuple[str | None, int], int] = {}  # a Ray worker's, an NCCL process's
    for tag, line in tagged:
        if tag.rank is not None and tag.local is not None:
            local_rank[(tag.context, tag.local)] = tag.rank
        if tag.task is not None and (tag.local is not None or tag.rank not in (None, tag.task)):
            agents.add((tag.context.split("#")[0], tag.task))
        if tag.pid is not None and (m := _RAY_RANK.search(line.text) or _NCCL_RANK.search(line.text)):
            process_rank[(tag.host, tag.pid)] = int(m.group(1))
    contexts = {tag.context for tag, _ in tagged if tag.local is not None}
    streams: dict[tuple[object, ...], Stream] = {}
    for tag, line in tagged:
        rank = tag.rank
        if rank is None and tag.local is not None:
            rank = local_rank.get((tag.context, tag.local))
            if rank is None and len(contexts) == 1:
                rank = tag.local  # one torchrun: its local ranks are the ranks
            if rank is None and tag.host is not None:
                rank = layout.rank_of(tag.host, tag.local)  # a node's torchrun, its place in the facts
        if rank is None and tag.pid is not None:
            rank = process_rank.get((tag.host, tag.pid))
        if rank is None and tag.task is not None and (tag.context.split("#")[0], tag.task) not in agents:
            rank = tag.task
        if rank is not None:
            key: tuple[object, ...] = ("rank", rank)
        elif tag.local is not None:
            key = ("local", tag.context, tag.local)
        elif tag.pid is not None:
            key = ("process", tag.host, tag.pid)
        elif tag.kernel:
            key = ("kernel", tag.host or tag.context)
        else:
            key = ("file", tag.context)
        stream = streams.setdefault(key, Stream(key, rank, kernel=tag.kernel))
        stream.lines.append(line)
        if tag.host is not None and tag.host not in stream.hosts:
            stream.hosts.append(tag.host)
        if tag.task is not None:
            stream.tasks.add(tag.task)
    return list(streams.values())
