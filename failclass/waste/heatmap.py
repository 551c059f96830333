"""Mean GPU utilisation per node and hour, accumulated batch by batch: the cluster heat
map of the HTML report."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from failclass.waste.samples import GpuSamples

BUCKET_S = 3600


@dataclass
class HeatMap:
    sums: dict[tuple[str, int], float] = field(default_factory=dict)  # (node, hour) -> sum of utilisation
    counts: dict[tuple[str, int], int] = field(default_factory=dict)

    def add(self, samples: GpuSamples) -> None:
        if not len(samples):
            return
        hour = np.floor(samples.ts / BUCKET_S).astype(np.int64)
        key = samples.node.astype(np.int64) * (1 << 32) + (hour - hour.min())
        unique, inverse = np.unique(key, return_inverse=True)
        sums = np.bincount(inverse, weights=samples.util)
        counts = np.bincount(inverse)
        for k, total, count in zip(unique, sums, counts, strict=False):
            name = (samples.nodes[int(k >> 32)], int(k & 0xFFFFFFFF) + int(hour.min()))
            self.sums[name] = self.sums.get(name, 0.0) + float(total)
            self.counts[name] = self.counts.get(name, 0) + int(count)

    def absorb(self, other: HeatMap) -> None:
        """Add another part's cells."""
        for key, total in other.sums.items():
            self.sums[key] = self.sums.get(key, 0.0) + total
            self.counts[key] = self.counts.get(key, 0) + other.counts[key]

    def grid(self, max_nodes: int = 64) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Nodes (the ``max_nodes`` with most readings), hours, and the mean per cell (NaN: no data)."""
        if not self.counts:
            return [], np.empty(0), np.empty((0, 0))
        per_node: dict[str, int] = {}
        for (node, _), count in self.counts.items():
            per_node[node] = per_node.get(node, 0) + count
        nodes = sorted(sorted(per_node, key=lambda n: -per_node[n])[:max_nodes])
        hours = np.arange(min(h for _, h in self.counts), max(h for _, h in self.counts) + 1)
        cells = np.full((len(nodes), len(hours)), np.nan)
        row = {node: i for i, node in enumerate(nodes)}
        for (node, hour), count in self.counts.items():
            if node in row:
                cells[row[node], hour - hours[0]] = self.sums[(node, hour)] / count
        return nodes, hours * BUCKET_S, cells
