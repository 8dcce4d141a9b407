"""The bounded, damped walk over the edges table.

From the seeds, walk up to `hops` hops over every edge kind in both directions
(a place never links back to the sessions that visited it). A node reached at
hop h via an edge scores

    parent score × predicate weight(intent) × hop_decay × trust × superseded / degree^damping

summed over the edges that reach it at that hop (seed 003 §6.3; degree damping
from seed 004). Hubs — index.md nodes and very high-degree notes — are walked
through but never returned, and the result is capped, so the walk adds what
the seeds missed and can never hand back most of the vault (seed 000). Ties
break on the node's own vector rank: structure defers to semantics where
structure is silent (seed 004's open problem).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TRUST = {"human-reviewed": 1.0, "machine-confirmed": 0.8, "unverified": 0.6}
KIND_WEIGHTS = {
    "relation": 1.0, "link": 1.0, "wikilink": 1.0, "property": 0.9,
    "mention": 0.7, "embed": 0.6, "supersedes": 0.5,
}
# Intent modifiers: (predicate or kind pattern, factor). Configurable per call.
INTENT_WEIGHTS: dict[str, dict[str, float]] = {
    "WHY": {r"caus|because|reason|motiv|led_to|result|why|blame": 1.6, "kind:relation": 1.2},
    "WHEN": {"kind:dated": 1.6, "kind:supersedes": 1.5},
    "HISTORICAL": {"kind:supersedes": 3.0, "kind:dated": 1.3},
    "ENTITY": {"kind:relation": 1.2, "kind:property": 1.1},
    "GENERAL": {},
}


@dataclass
class WalkOptions:
    hops: int = 2
    hop_decay: float = 0.6
    degree_damping: float = 0.5
    superseded_multiplier: float = 0.15
    hub_degree: int = 150
    cap: int | None = None  # most nodes returned; None = no cap
    beam: int = 24  # hop-1 nodes expanded further, strongest first (a weak path cannot win at hop 2)
    expand_max_degree: int = 1000  # a node with more edges is reached but not expanded: its children
    # would score below 1/sqrt(1000) of its own damped score anyway
    intent: str = "GENERAL"
    predicate_weights: dict[str, dict[str, float]] = field(default_factory=dict)
    tie_ranks: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str | None) -> "WalkOptions":
        data = json.loads(text) if text else {}
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def weight(self, predicate: str, kind: str, dated: bool) -> float:
        key = (predicate, kind, dated)
        cached = self._weights.get(key)
        if cached is None:
            cached = self._weights[key] = self._weight(predicate, kind, dated)
        return cached

    def __post_init__(self) -> None:
        self._weights: dict[tuple, float] = {}

    def _weight(self, predicate: str, kind: str, dated: bool) -> float:
        weight = KIND_WEIGHTS.get(kind, 1.0)
        table = {**INTENT_WEIGHTS.get(self.intent, {}), **self.predicate_weights.get(self.intent, {})}
        for pattern, factor in table.items():
            if pattern == f"kind:{kind}" or (pattern == "kind:dated" and dated):
                weight *= factor
            elif not pattern.startswith("kind:") and re.search(pattern, predicate or "", re.I):
                weight *= factor
        return weight


_EDGES_SQL = """
select src, dst, predicate, kind, anchor, date from edges
where dst is not null and src != dst
  and (src in (select value from json_each(:ids)) or dst in (select value from json_each(:ids)))
"""
_NODES_SQL = """
select id, is_index, trust_tier, superseded_by, status, coalesce(degree, 0)
from concepts where id in (select value from json_each(:ids))
"""


def parent_score_best(per_seed: dict[str, float]) -> float:
    return max(per_seed.values(), default=0.0)


def graph_expand(conn: Any, seeds: list[str], options: WalkOptions) -> list[dict[str, Any]]:
    """Nodes reached from `seeds`, best first: {id, hop, via, predicate, anchor, score, degree}."""
    nodes: dict[str, dict[str, Any]] = {}

    def describe(ids: set[str]) -> None:
        missing = [i for i in ids if i not in nodes]
        for row in conn.execute(_NODES_SQL, {"ids": json.dumps(missing)}):
            nodes[row[0]] = {
                "is_index": bool(row[1]), "trust": row[2], "superseded": bool(row[3]) or row[4] == "superseded",
                "degree": row[5],
            }

    # strength[node][seed]: the best path score from that seed; a node's score sums over seeds
    strength: dict[str, dict[str, float]] = {seed: {seed: 1.0} for seed in seeds}
    reached: dict[str, dict[str, Any]] = {}
    visited = set(seeds)
    describe(visited)
    frontier = {s for s in seeds if s in nodes and nodes[s]["degree"] <= options.expand_max_degree * 5}
    for hop in range(1, options.hops + 1):
        if not frontier:
            break
        edges = conn.execute(_EDGES_SQL, {"ids": json.dumps(sorted(frontier))}).fetchall()
        describe({e[0] for e in edges} | {e[1] for e in edges})
        links: dict[tuple[str, str], list[tuple[float, str, str, str | None]]] = {}
        for src, dst, predicate, kind, anchor, date in edges:
            for parent, child in ((src, dst), (dst, src)):
                if parent in frontier and child not in visited and child in nodes:
                    weight = options.weight(predicate, kind, bool(date))
                    links.setdefault((parent, child), []).append(
                        (weight, predicate, kind, anchor if child == dst else None)
                    )
        arriving: dict[str, dict[str, Any]] = {}
        for (parent, child), via_edges in links.items():
            info = nodes[child]
            factor = (
                sum(w for w, *_ in via_edges)
                * options.hop_decay
                * TRUST.get(info["trust"], 0.6)
                * (options.superseded_multiplier if info["superseded"] else 1.0)
                / max(info["degree"], 1) ** options.degree_damping
            )
            entry = arriving.setdefault(child, {"id": child, "hop": hop, "degree": info["degree"], "best": -1.0})
            per_seed = strength.setdefault(child, {})
            for seed, parent_score in strength[parent].items():
                per_seed[seed] = max(per_seed.get(seed, 0.0), parent_score * factor)
            if parent_score_best(strength[parent]) * factor > entry["best"]:
                weight, predicate, kind, anchor = max(via_edges, key=lambda e: e[0])
                entry.update(best=parent_score_best(strength[parent]) * factor, via=parent,
                             predicate=predicate, kind=kind, anchor=anchor)
        for child, entry in arriving.items():
            entry["score"] = sum(strength[child].values())
            info = nodes[child]
            if not info["is_index"] and info["degree"] < options.hub_degree:
                reached[child] = entry
        visited |= set(arriving)
        expandable = [c for c in arriving if nodes[c]["degree"] <= options.expand_max_degree]
        frontier = set(sorted(expandable, key=lambda c: -arriving[c]["score"])[: options.beam])

    far = len(options.tie_ranks) + 10**6
    ranked = sorted(
        reached.values(),
        key=lambda e: (-round(e["score"], 12), options.tie_ranks.get(e["id"], far), e["id"]),
    )
    if options.cap is not None:
        ranked = ranked[: options.cap]
    return [
        {k: e.get(k) for k in ("id", "hop", "via", "predicate", "kind", "anchor", "score", "degree")}
        for e in ranked
    ]
