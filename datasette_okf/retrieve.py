"""context_for: seeds -> gate -> intent -> walk -> budget -> render.

Each stage is one SQL statement over the tables, using this package's SQL
functions (okf_title_matches, okf_fts_query, okf_embed, rrf, graph_expand), and
the response carries those statements so they can be rerun in Datasette's SQL
editor with the same :question. Python only orchestrates.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlite_utils

from .embed import EmbeddingError, canonical_id, embed_query
from .graph import WalkOptions
from .render import (
    chunk_block,
    context_text,
    estimate_tokens,
    fact_line,
    no_confident_match,
    node_header,
)
from .schema import check_format, stored_model
from .sqlfunctions import prepare_connection
from .titles import MAX_QUESTION, coverage

MODES = ("hybrid", "vector", "keyword", "graph-walk")
RRF_K = 60
GRAPH_WEIGHT = 0.5
# Cosine similarity above which a vector hit alone makes the answer confident.
VECTOR_THRESHOLDS = {"okf-minilm-l6-int8": 0.48}
DEFAULT_VECTOR_THRESHOLD = 0.55
SUPERSESSION_HOPS = 5

TITLE_SQL = "select value as id, key + 1 as rank from json_each(okf_title_matches(:question))"
# BM25 is ranked inside the full-text index first and only the best rows are joined: joining every
# match before sorting costs twice as much on OR-ed questions (10k concepts: 9 ms -> 4.5 ms).
# The extra 16 rows make room for index nodes, which are never seeds.
FTS_SQL = """select id, row_number() over (order by score) as rank from (
  select concepts.id, best.score
  from (select rowid, bm25(concepts_fts, 4.0, 4.0, 2.0, 2.0, 1.0) as score from concepts_fts
        where concepts_fts match okf_fts_query(:question) order by score limit :k + 16) as best
  join concepts on concepts.rowid = best.rowid
  where not concepts.is_index
  order by best.score limit :k)"""
VECTOR_SQL = """select chunks.concept_id as id,
  row_number() over (order by min(knn.distance)) as rank,
  1 - min(knn.distance) as similarity,
  json_group_array(json_array(knn.rowid, knn.distance)) as chunk_distances
from (select rowid, distance from chunk_vectors
      where embedding match okf_embed(:question) and k = :vector_k) as knn
join chunks on chunks.id = knn.rowid
join concepts on concepts.id = chunks.concept_id and not concepts.is_index
group by chunks.concept_id
order by rank limit :k"""
# Above this many chunks, candidates come from 1-bit codes (Hamming distance, 32x less to scan) and the
# best :candidates of them are re-ranked by exact cosine: recall@10 0.988 at 200 candidates on real
# MiniLM vectors (benchmarks/quantized_knn.py). okf_hamming_candidates() scans the codes of chunk_bits
# held in memory (hamming.py); `select rowid from chunk_bits where embedding match
# vec_quantize_binary(okf_embed(:question)) and k = :candidates` gives the same set, ~10x slower.
BINARY_FROM = 20_000
VECTOR_BINARY_SQL = """select chunks.concept_id as id,
  row_number() over (order by min(knn.distance)) as rank,
  1 - min(knn.distance) as similarity,
  json_group_array(json_array(knn.rowid, knn.distance)) as chunk_distances
from (select chunk_floats.id as rowid, vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question))) as distance
      from json_each(okf_hamming_candidates(okf_embed(:question), :candidates)) as candidates
      join chunk_floats on chunk_floats.id = candidates.value
      order by distance limit :vector_k) as knn
join chunks on chunks.id = knn.rowid
join concepts on concepts.id = chunks.concept_id and not concepts.is_index
group by chunks.concept_id
order by rank limit :k"""
LISTS = {"title": (TITLE_SQL, 2.0), "fts": (FTS_SQL, 1.0), "vector": (VECTOR_SQL, 1.0)}
MODE_LISTS = {
    "hybrid": ("title", "fts", "vector"),
    "vector": ("vector",),
    "keyword": ("fts",),
    "graph-walk": ("vector",),
}
WALK_SQL = "select value from json_each(graph_expand(:seeds, :hops, :walk_options))"
FACTS_SQL = """select edges.src, edges.predicate, edges.dst, edges.object_literal, edges.date, edges.source_id
from edges where edges.kind = 'relation' and edges.src in (select value from json_each(:nodes))
order by edges.src, edges.date, edges.id"""

_INTENTS = [
    ("HISTORICAL", r"\b(previous(ly)?|former(ly)?|used to|original(ly)?|first (version|charter)|chang(e|ed|es)|versions|over time|evolv\w*|earlier|prior|superseded|old(er)? (version|charter|rule)|history of|before the (new|current))\b"),
    ("WHY", r"\b(why|reason|reasons|cause[sd]?|motive|motivation|because)\b"),
    ("WHEN", r"\b(when|what (year|date|day|month|time)|how long|since|until|timeline|chronolog\w*|date[sd]?)\b"),
    ("ENTITY", r"^\s*(who|what|which|where)\b"),
]


def classify_intent(question: str) -> str:
    """WHY / WHEN / HISTORICAL / ENTITY / GENERAL by keywords (seed 003 §6.2, §7.7)."""
    q = question.casefold()
    for intent, pattern in _INTENTS:
        if re.search(pattern, q):
            return intent
    return "GENERAL"


def connection(db: Any) -> Any:
    """A sqlite3 connection with sqlite-vec and our SQL functions, from a path, Database or connection."""
    if isinstance(db, (str, Path)):
        conn = sqlite_utils.Database(db).conn
    elif isinstance(db, sqlite_utils.Database):
        conn = db.conn
    else:
        conn = db
    try:
        conn.execute("select okf_fts_query('x')")
    except Exception:
        prepare_connection(conn)
    return conn


def context_for(
    db: Any,
    question: str,
    mode: str = "hybrid",
    k: int = 10,
    max_seeds: int = 5,
    budget: int = 2000,
    hops: int = 2,
    cap: int | None = None,
    vector_k: int = 60,
    vector_threshold: float | None = None,
    coverage_threshold: float = 0.5,
    historical: bool | None = None,
    predicate_weights: dict[str, dict[str, float]] | None = None,
    fusion_weights: dict[str, float] | None = None,
    binary_from: int = BINARY_FROM,
    today: str | None = None,
) -> dict[str, Any]:
    """The slice of the bundle an LLM needs for `question`, as the JSON contract of issue 4."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    if len(question) > MAX_QUESTION:  # the SQL functions refuse longer text; say so here, where it is asked
        raise ValueError(f"the question is {len(question):,} characters; at most {MAX_QUESTION:,}")
    started = time.perf_counter()
    timings: dict[str, float] = {}
    conn = connection(db)
    check_format(conn)
    model = canonical_id(stored_model(conn))
    has_vectors = _has_table(conn, "chunk_vectors")
    vectors = "used" if has_vectors else "none in this database"
    if has_vectors and "vector" in MODE_LISTS[mode]:
        try:  # embedded here (and cached) so that a failing model degrades the answer, not the request
            embed_query(model, question)
        except EmbeddingError as error:
            has_vectors, vectors = False, f"unavailable: {error}"
    lists = [name for name in MODE_LISTS[mode] if name != "vector" or has_vectors] or ["title", "fts"]
    binary = has_vectors and _chunk_count(conn) >= binary_from
    params = {"question": question, "k": k if mode in ("vector", "keyword") else max(k, 20), "vector_k": vector_k,
              "candidates": max(200, 4 * vector_k)}
    if mode == "graph-walk":
        params["k"] = 5
    sql: dict[str, str] = {}

    # 1. seeds, fused by reciprocal rank fusion
    tick = time.perf_counter()
    names = tuple(lists)
    seed_sql = _fusion_sql(names, fusion_weights or {}, binary)
    sql["seeds"] = seed_sql
    fused = _rows(conn, seed_sql, params) if names else []
    timings["seeds"] = _ms(tick)

    concepts = _concepts(conn, [row["id"] for row in fused])
    intent = classify_intent(question)
    is_historical = historical if historical is not None else intent == "HISTORICAL"

    # 2. confidence gate (seed 003 §10.4): a title hit, BM25 coverage, or vector similarity
    tick = time.perf_counter()
    threshold = vector_threshold if vector_threshold is not None else VECTOR_THRESHOLDS.get(model, DEFAULT_VECTOR_THRESHOLD)
    confident, reason = _gate(conn, question, fused, concepts, threshold, coverage_threshold)
    timings["gate"] = _ms(tick)

    # superseded concepts are not seeds: they resolve to the end of their chain
    seeds: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in fused:
        target, chain = row["id"], []
        if not is_historical:
            target, chain = _end_of_chain(conn, row["id"], concepts)
        if target in seen:
            continue
        seen.add(target)
        concepts.update(_concepts(conn, [target]))
        seeds.append({
            "id": target, "path": concepts[target]["path"], "title": concepts[target]["title"],
            "ranks": {name: row.get(f"{name}_rank") for name in MODE_LISTS[mode]},
            "rrf": round(row["rrf"], 6), "resolved_from": chain[0] if chain else None,
        })
        if len(seeds) >= (max_seeds if mode == "hybrid" else (5 if mode == "graph-walk" else k)):
            break

    # 3-4. intent-weighted, capped walk (hybrid: 2 hops; graph-walk: 1 hop; others: none);
    # not confident, nothing is returned: no walk
    walked: list[dict[str, Any]] = []
    if mode in ("hybrid", "graph-walk") and seeds and confident:
        tick = time.perf_counter()
        tie_ranks = {row["id"]: row.get("vector_rank") or 10**6 for row in fused}
        options = WalkOptions(
            hops=hops if mode == "hybrid" else 1,
            cap=cap if cap is not None else len(seeds),
            intent=intent,
            superseded_multiplier=1.0 if is_historical else WalkOptions.superseded_multiplier,
            predicate_weights=predicate_weights or {},
            tie_ranks={k2: v for k2, v in tie_ranks.items() if v},
        )
        walk_params = {"seeds": json.dumps([s["id"] for s in seeds]), "hops": options.hops,
                       "walk_options": json.dumps({k2: getattr(options, k2) for k2 in ("cap", "intent", "superseded_multiplier", "predicate_weights", "tie_ranks")})}
        sql["walk"] = WALK_SQL
        walked = [json.loads(row[0]) for row in conn.execute(WALK_SQL, walk_params)]
        walked = [w for w in walked if w["id"] not in seen]
        concepts.update(_concepts(conn, [w["id"] for w in walked]))
        timings["walk"] = _ms(tick)

    # 5. budget: seeds in fused order, then what the walk added; trust breaks ties
    tick = time.perf_counter()
    now = today or datetime.now(timezone.utc).isoformat()
    # the walk's list joins the fusion at weight 0.5, below the seeds: it adds, it does not reorder them
    fused_rrf = {row["id"]: row["rrf"] for row in fused}
    candidates = [
        {**concepts[s["id"]], "score": s["rrf"], "via": _seed_why(s)} for s in seeds
    ] + [
        {**concepts[w["id"]], "score": round(GRAPH_WEIGHT / (RRF_K + rank) + fused_rrf.get(w["id"], 0.0), 6),
         "via": f"hop {w['hop']} via {w['via']} ({w['predicate']})", "anchor": w.get("anchor")}
        for rank, w in enumerate(walked, start=1)
    ]
    for node in candidates:
        node["stale"] = bool(node.get("stale_after")) and now >= node["stale_after"]
    distances = {chunk_id: distance for row in fused for chunk_id, distance in json.loads(row.get("chunk_distances") or "[]")}
    chunks = _chunks(conn, [n["id"] for n in candidates], distances)
    facts = _facts(conn, candidates) if confident else []
    picked, blocks, facts = _fill_budget(question, candidates, chunks, facts, budget)
    sql["facts"] = FACTS_SQL
    timings["budget"] = _ms(tick)

    # 6. render
    if confident:
        text = context_text(question, [f["text"] for f in facts], [b for b in blocks])
    else:
        text = no_confident_match(question, reason)
    nodes = [
        {k2: node.get(k2) for k2 in ("id", "bundle", "path", "title", "score", "via", "trust", "stale", "superseded_by")}
        for node in picked
    ] if confident else []
    timings["total"] = _ms(started)
    return {
        "question": question,
        "mode": mode,
        "vectors": vectors,
        "intent": intent,
        "confident": confident,
        "reason": reason,
        "seeds": seeds,
        "nodes": nodes,
        "facts": facts,
        "context": text,
        "sql": sql,
        "timings_ms": timings,
    }


def _fusion_sql(names: tuple[str, ...], weights: dict[str, float], binary: bool = False) -> str:
    """The seeds statement: each list as a CTE, then rrf() over their union (weights: title 2, fts 1, vector 1)."""
    sql_of = {name: (VECTOR_BINARY_SQL if name == "vector" and binary else LISTS[name][0]) for name in names}
    ctes = ",\n".join(f"{name} as (\n{sql_of[name]}\n)" for name in names)
    union = "\n  union all ".join(
        f"select id, rank, {float(weights.get(name, LISTS[name][1]))} as weight, '{name}' as list from {name}"
        for name in names
    )
    ranks = ",\n  ".join(f"min(case when list = '{name}' then rank end) as {name}_rank" for name in names)
    similarity = (",\n  (select similarity from vector where vector.id = lists.id) as similarity"
                  ",\n  (select chunk_distances from vector where vector.id = lists.id) as chunk_distances"
                  if "vector" in names else "")
    return (
        f"with {ctes},\nlists as (\n  {union}\n)\n"
        f"select id,\n  {ranks},\n  rrf(rank, weight, {RRF_K}) as rrf{similarity}\n"
        "from lists group by id order by rrf desc, id"
    )


def _rows(conn: Any, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, params)
    columns = [c[0] for c in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _chunk_count(conn: Any) -> int:
    """Chunks with vectors (the largest rowid is a cheap stand-in for the count)."""
    return conn.execute("select coalesce(max(id), 0) from chunk_floats").fetchone()[0]


def _has_table(conn: Any, name: str) -> bool:
    return conn.execute("select 1 from sqlite_master where name = ?", [name]).fetchone() is not None


_CONCEPT_COLUMNS = ("id", "bundle", "path", "title", "description", "trust_tier", "status", "stale_after", "superseded_by", "is_index")


def _concepts(conn: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
    rows = conn.execute(
        f"select {', '.join(_CONCEPT_COLUMNS)} from concepts where id in (select value from json_each(?))",
        [json.dumps(ids)],
    ).fetchall()
    out = {}
    for row in rows:
        concept = dict(zip(_CONCEPT_COLUMNS, row))
        concept["trust"] = concept.pop("trust_tier")
        out[concept["id"]] = concept
    return out


def _gate(conn, question, fused, concepts, threshold, coverage_threshold) -> tuple[bool, str]:
    if any(row.get("title_rank") for row in fused):
        return True, "the question names a concept's title or alias"
    fts = sorted((row for row in fused if row.get("fts_rank")), key=lambda r: r["fts_rank"])
    if fts:
        top = fts[0]["id"]
        text = conn.execute(
            "select title || ' ' || coalesce(description, '') || ' ' || coalesce(tags, '') || ' ' || body"
            " from concepts where id = ?", [top]
        ).fetchone()[0]
        share = coverage(question, text)
        if share > coverage_threshold:
            return True, f"the top keyword match covers {share:.0%} of the question's content words"
    best = max((row.get("similarity") or 0.0 for row in fused), default=0.0)
    if best >= threshold:
        return True, f"the nearest chunk has cosine similarity {best:.2f} (threshold {threshold:.2f})"
    if not fused:
        return False, "no title, keyword or vector match at all"
    return False, (
        f"no title named, keyword coverage at most {coverage_threshold:.0%}, "
        f"best vector similarity {best:.2f} below {threshold:.2f}"
    )


def _end_of_chain(conn, concept_id, concepts) -> tuple[str, list[str]]:
    """Follow superseded_by at most SUPERSESSION_HOPS times, cycle-safe."""
    chain = []
    current = concept_id
    for _ in range(SUPERSESSION_HOPS):
        info = concepts.get(current) or _concepts(conn, [current]).get(current)
        if not info or not info.get("superseded_by") or info["superseded_by"] in chain + [concept_id]:
            break
        chain.append(current)
        current = info["superseded_by"]
        concepts.update(_concepts(conn, [current]))
    return current, chain


def _seed_why(seed: dict[str, Any]) -> str:
    signals = [name for name, rank in seed["ranks"].items() if rank]
    why = "seed: " + "+".join(signals)
    if seed.get("resolved_from"):
        why += f" (resolved from superseded {seed['resolved_from']})"
    return why


def _slug(text: str) -> str:
    return re.sub(r"[^\w]+", "-", text.casefold()).strip("-")


def _chunks(conn, ids: list[str], distance: dict[int, float]) -> dict[str, list[dict[str, Any]]]:
    """Each node's chunks, best first: those the vector search found nearest, then in reading order.

    The distances come from the seeds statement's own KNN, so no second vector scan is needed.
    """
    by_concept: dict[str, list[dict[str, Any]]] = {}
    for chunk_id, concept_id, seq, heading, text in conn.execute(
        "select id, concept_id, seq, heading, text from chunks"
        " where concept_id in (select value from json_each(?)) order by concept_id, seq",
        [json.dumps(ids)],
    ):
        by_concept.setdefault(concept_id, []).append({"id": chunk_id, "seq": seq, "heading": heading, "text": text})
    for chunks in by_concept.values():
        chunks.sort(key=lambda c: (distance.get(c["id"], 2.0), c["seq"]))
    return by_concept


def _fill_budget(question, candidates, chunks, facts, budget) -> tuple[list, list[str], list]:
    """Nodes in order while the budget lasts — each with its facts and its best chunk — then more seed chunks.

    Everything rendered counts: headers, facts, chunks. At equal walk score a
    human-reviewed, non-stale node goes first.
    """
    trust_order = {"human-reviewed": 0, "machine-confirmed": 1, "unverified": 2}
    seeds = [c for c in candidates if c["via"].startswith("seed")]
    walked = sorted(
        (c for c in candidates if not c["via"].startswith("seed")),
        key=lambda c: (-c["score"], c["stale"], trust_order.get(c["trust"], 3)),
    )
    titles = {c["id"]: c["title"] for c in candidates}
    facts_of: dict[str, list] = {}
    for fact in facts:
        facts_of.setdefault(fact["subject_id"], []).append(fact)
    used = estimate_tokens(context_text(question, ["-"], ["-"]))
    picked, parts, kept_facts, rest = [], {}, [], {}
    for node in seeds + walked:
        pieces = chunks.get(node["id"], [])
        if node.get("anchor"):  # an anchored link arrives at its section
            pieces = sorted(pieces, key=lambda c: _slug(c.get("heading") or "") != _slug(node["anchor"]))
        header = node_header(node, titles)
        first = chunk_block(pieces[0]) if pieces and pieces[0]["text"] else ""
        own_facts = facts_of.get(node["id"], [])
        cost = estimate_tokens(header + "\n" + first) + sum(estimate_tokens(f["text"]) + 1 for f in own_facts)
        if used + cost > budget:
            continue
        used += cost
        picked.append(node)
        kept_facts.extend(own_facts)
        parts[node["id"]] = [header] + ([first] if first else [])
        rest[node["id"]] = pieces[1:]
    for node in picked:
        if not node["via"].startswith("seed"):
            continue
        for piece in rest[node["id"]]:
            block = chunk_block(piece)
            cost = estimate_tokens(block) + 1
            if piece["text"] and used + cost <= budget:
                used += cost
                parts[node["id"]].append(block)
    return picked, ["\n".join(parts[n["id"]]) for n in picked], kept_facts


def _facts(conn, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {n["id"]: n for n in nodes}
    rows = conn.execute(FACTS_SQL, {"nodes": json.dumps(list(by_id))}).fetchall()
    objects = _concepts(conn, [r[2] for r in rows if r[2]])
    facts = []
    for src, predicate, dst, literal, date, source_id in rows:
        subject = by_id[src]
        obj = objects[dst]["title"] if dst and dst in objects else literal
        fact = {
            "subject": subject["title"], "subject_id": src, "predicate": predicate,
            "object": obj, "object_id": dst, "date": date, "source": source_id,
            "trust": subject["trust"], "superseded_by": subject.get("superseded_by"),
            "stale": subject.get("stale", False), "stale_after": subject.get("stale_after"),
        }
        fact["text"] = fact_line(fact)
        facts.append(fact)
    return facts
