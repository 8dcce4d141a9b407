"""The bounded, damped walk over the edges table.

From the seeds, walk up to `hops` hops over every edge kind in both directions
(a place never links back to the sessions that visited it). A node reached at
hop h via an edge scores

    parent score × predicate weight(intent) × hop_decay × trust × superseded / degree^damping

summed over the edges that reach it at that hop (docs/design.md §5.2). Hubs —
index.md nodes and very high-degree notes — are walked through but never
returned, and the result is capped, so the walk adds what the seeds missed and
can never hand back most of the vault (§5.3). Ties break on the node's own
vector rank: structure defers to semantics where structure is silent (§5.5).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TRUST = {"human-reviewed": 1.0, "machine-confirmed": 0.8, "unverified": 0.6}
KIND_WEIGHTS = {
    "relation": 1.0, "link": 1.0, "wikilink": 1.0, "property": 0.9,
    "mention": 0.7, "embed": 0.6, "supersedes": 0.5, "sequence": 0.8,
}
TYPED_KINDS = ("relation", "property")  # edges whose predicate names how two notes are related


def _typed(kind: str, predicate: str | None) -> bool:
    """A relation or property, not `sources`: a note's sources say where it comes from (OKF §5.1), not how it is
    related to them."""
    return kind in TYPED_KINDS and predicate != "sources" and not (predicate or "").startswith("sources.")
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
    edge_budget: int = 1500  # edges read per hop beyond the first node: strongest nodes first, so the
    # budget cuts the weak, high-degree ones (their score is already divided by sqrt(degree))
    intent: str = "GENERAL"
    predicate_weights: dict[str, dict[str, float]] = field(default_factory=dict)
    tie_ranks: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str | None) -> WalkOptions:
        """Options from SQL (`graph_expand(seeds, hops, options_json)`): checked, with hard caps, because
        anyone with a SQL editor can pass them."""
        try:
            data = json.loads(text) if text else {}
        except (TypeError, ValueError):
            raise ValueError("graph_expand: options must be a JSON object") from None
        if not isinstance(data, dict):
            raise ValueError("graph_expand: options must be a JSON object")
        options = cls()
        for name, kind in (("intent", str), ("predicate_weights", dict), ("tie_ranks", dict)):
            if data.get(name) is not None:
                if not isinstance(data[name], kind):
                    raise ValueError(f"graph_expand: {name} must be a JSON {'string' if kind is str else 'object'}")
                setattr(options, name, data[name])
        for name, (low, high) in WALK_LIMITS.items():
            if data.get(name) is not None:
                setattr(options, name, bounded(name, data[name], low, high))
        check_predicate_weights(options.predicate_weights)
        return options

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
            if pattern == f"kind:{kind}" or (pattern == "kind:dated" and dated) or not pattern.startswith("kind:") and re.search(pattern, predicate or "", re.IGNORECASE):
                weight *= factor
        return weight


MAX_HOPS, MAX_SEEDS = 3, 100
# Hard caps on what SQL callers may ask of the walk: time and memory stay bounded on any graph.
WALK_LIMITS: dict[str, tuple[float, float]] = {
    "cap": (0, 1000), "beam": (1, 200), "edge_budget": (1, 20_000), "expand_max_degree": (0, 100_000),
    "hub_degree": (1, 10**9), "hop_decay": (0, 1), "degree_damping": (0, 4), "superseded_multiplier": (0, 10),
}


def bounded(name: str, value: Any, low: float, high: float) -> Any:
    """`value` as a number between `low` and `high`, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"graph_expand: {name} must be a number, not {value!r}")
    if not low <= value <= high:
        raise ValueError(f"graph_expand: {name} must be between {low:g} and {high:g}")
    return value


MAX_PATTERNS, MAX_PATTERN = 100, 200
# Names joined by "|", or kind:KIND: nothing that backtracks. Each pattern is searched in every predicate the
# walk meets: (.*){13}# took 5 s on the example bundle, each more repeat doubles that, and Datasette's
# time limit cannot stop a Python function.
_SAFE_PATTERN = re.compile(r"kind:\w+|[\w.\-^$ ]+(\|[\w.\-^$ ]+)*")


def check_predicate_weights(table: dict[str, Any]) -> None:
    """`predicate_weights` from SQL: {intent: {pattern: factor}}, at most MAX_PATTERNS patterns, none that backtracks."""
    if not all(isinstance(weights, dict) for weights in table.values()):
        raise ValueError("graph_expand: predicate_weights must map each intent to a JSON object")
    if sum(len(weights) for weights in table.values()) > MAX_PATTERNS:
        raise ValueError(f"graph_expand: predicate_weights may hold at most {MAX_PATTERNS} patterns")
    for weights in table.values():
        for pattern, factor in weights.items():
            if len(pattern) > MAX_PATTERN or not _SAFE_PATTERN.fullmatch(pattern):
                raise ValueError(
                    f"graph_expand: a predicate pattern is words joined by | (or kind:KIND), at most {MAX_PATTERN} "
                    f"characters, not {pattern[:MAX_PATTERN]!r}"
                )
            bounded("a predicate weight", factor, 0, 100)


def walk_arguments(seeds: Any, hops: Any, options: Any) -> tuple[list[str], WalkOptions]:
    """The arguments of SQL's `graph_expand(seeds_json, hops, options_json)`, checked."""
    walk = WalkOptions.from_json(options)
    if isinstance(hops, str) and hops.strip().isdigit():  # Datasette's SQL editor passes every parameter as text
        hops = int(hops)
    walk.hops = bounded("hops", hops, 0, MAX_HOPS)
    try:
        ids = json.loads(seeds or "[]")
    except (TypeError, ValueError):
        ids = None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(ids) > MAX_SEEDS:
        raise ValueError(f"graph_expand: seeds must be a JSON array of at most {MAX_SEEDS} concept ids")
    return ids, walk


# Every edge touching the frontier, seen from the frontier node (parent) out to the other end
# (child), with what the walk needs to know about the child: one statement per hop. Index nodes and
# stubs (unfilled templates) are passed through, never returned: they have nothing to say themselves.
_STEPS_SQL = """
select frontier.value, edges.dst, edges.predicate, edges.kind, edges.anchor, edges.date is not null,
       child.is_index or child.is_stub, child.trust_tier, child.superseded_by is not null or child.status = 'superseded',
       coalesce(child.degree, 0)
from json_each(:ids) as frontier
join edges on edges.src = frontier.value and edges.dst != edges.src
join concepts as child on child.id = edges.dst
union all
select frontier.value, edges.src, edges.predicate, edges.kind, null, edges.date is not null,
       child.is_index or child.is_stub, child.trust_tier, child.superseded_by is not null or child.status = 'superseded',
       coalesce(child.degree, 0)
from json_each(:ids) as frontier
join edges on edges.dst = frontier.value and edges.src != edges.dst
join concepts as child on child.id = edges.src
"""
_SEEDS_SQL = """
select id, coalesce(degree, 0) from concepts where id in (select value from json_each(:ids))
"""


def graph_expand(conn: Any, seeds: list[str], options: WalkOptions) -> list[dict[str, Any]]:
    """Nodes reached from `seeds`, best first: {id, hop, via, predicate, kind, anchor, score, degree, reached_from,
    from_seeds}; `reached_from` lists the seeds with a path to the node, strongest path first, and `from_seeds` each
    seed it is linked to directly, with that link's [predicate, kind, anchor]."""
    # strength[node][seed]: the best path score from that seed; a node's score sums over seeds
    strength: dict[str, dict[str, float]] = {seed: {seed: 1.0} for seed in seeds}
    reached: dict[str, dict[str, Any]] = {}
    visited = set(seeds)
    seed_degrees = dict(conn.execute(_SEEDS_SQL, {"ids": json.dumps(seeds)}).fetchall())
    frontier = sorted(s for s in seeds if seed_degrees.get(s, 1 << 62) <= options.expand_max_degree * 5)
    for hop in range(1, options.hops + 1):
        if not frontier:
            break
        # (parent, child) -> [(weight, predicate, kind, anchor)], and what is known of each child
        links: dict[tuple[str, str], list[tuple[float, str, str, str | None]]] = {}
        children: dict[str, tuple[bool, float, int]] = {}
        for parent, child, predicate, kind, anchor, dated, passed_through, trust, superseded, degree in conn.execute(
            _STEPS_SQL, {"ids": json.dumps(frontier)}
        ):
            if child in visited:
                continue
            links.setdefault((parent, child), []).append((options.weight(predicate, kind, bool(dated)), predicate, kind, anchor))
            if child not in children:
                damping = (
                    options.hop_decay
                    * TRUST.get(trust, 0.6)
                    * (options.superseded_multiplier if superseded else 1.0)
                    / max(degree, 1) ** options.degree_damping
                )
                children[child] = (bool(passed_through), damping, degree)
        arriving: dict[str, dict[str, Any]] = {}
        best_of = {parent: max(strength[parent].values(), default=0.0) for parent in frontier}
        for (parent, child), via_edges in links.items():
            _, damping, degree = children[child]
            factor = sum(w for w, *_ in via_edges) * damping
            entry = arriving.setdefault(child, {"id": child, "hop": hop, "degree": degree, "best": -1.0})
            per_seed = strength.setdefault(child, {})
            for seed, parent_score in strength[parent].items():
                if parent_score * factor > per_seed.get(seed, 0.0):
                    per_seed[seed] = parent_score * factor
            # the edge that says most: a typed one before a plain link, then the heaviest. Bragan Holt's
            # `organization: [[The Red Runners]]` (0.99 for ENTITY) lost to the faction's prose link back to
            # him (1.0), and his why line said "links_to".
            _, predicate, kind, anchor = max(via_edges, key=lambda e: (_typed(e[2], e[1]), e[0]))
            if hop == 1:  # its parent is a seed: the walk may place the note by it rather than by `via`
                entry.setdefault("from_seeds", {})[parent] = [predicate, kind, anchor]
            if best_of[parent] * factor > entry["best"]:
                entry.update(best=best_of[parent] * factor, via=parent, predicate=predicate, kind=kind, anchor=anchor)
        for child, entry in arriving.items():
            entry["score"] = sum(strength[child].values())
            if not children[child][0] and entry["degree"] < options.hub_degree:
                reached[child] = entry
        visited |= set(arriving)
        if hop == options.hops:
            break
        frontier = _next_frontier(arriving, options)

    far = len(options.tie_ranks) + 10**6
    ranked = sorted(
        reached.values(),
        key=lambda e: (-round(e["score"], 12), options.tie_ranks.get(e["id"], far), e["id"]),
    )
    if options.cap is not None:
        ranked = ranked[: options.cap]
    return [
        {**{k: e.get(k) for k in ("id", "hop", "via", "predicate", "kind", "anchor", "score", "degree")},
         "reached_from": sorted(strength[e["id"]], key=lambda seed: (-strength[e["id"]][seed], seed)),
         "from_seeds": e.get("from_seeds", {})}
        for e in ranked
    ]


def _next_frontier(arriving: dict[str, dict[str, Any]], options: WalkOptions) -> list[str]:
    """The strongest arrivals to expand: at most `beam` of them, within `edge_budget` edges."""
    strongest = sorted(
        (c for c in arriving if arriving[c]["degree"] <= options.expand_max_degree),
        key=lambda c: (-arriving[c]["score"], c),
    )[: options.beam]
    frontier, edges = [], 0
    for child in strongest:
        edges += arriving[child]["degree"]
        if frontier and edges > options.edge_budget:
            break
        frontier.append(child)
    return sorted(frontier)
