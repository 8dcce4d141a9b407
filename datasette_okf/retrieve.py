"""context_for: seeds -> gate -> walk -> facts -> budget -> render.

Each stage is one function over small records (Seed, Arrival, Node) and at most
one SQL statement over the tables, using this package's SQL functions
(okf_title_matches, okf_fts_query, okf_embed, rrf, graph_expand). The response
carries each statement (`sql`) and the exact named parameters it ran with
(`params`): pasted together into Datasette's SQL editor they give the stage's
rows again. Python only orchestrates; what differs between modes is in
MODE_RULES.
"""

from __future__ import annotations

import json
import posixpath
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils

from .categories import asks_which, asks_whole
from .chunks import own_heading
from .embed import EmbeddingError, canonical_id, embed_query, is_default
from .graph import WalkOptions
from .markdown import slug
from .options import BadOption, ContextOptions
from .render import (
    add_in_turns,
    chunk_block,
    context_text,
    cut_to_fit,
    estimate_tokens,
    fact_line,
    no_confident_match,
    node_header,
)
from .schema import NOT_A_SOURCE, check_format, read_meta, stored_model, vectors_progress
from .sqlfunctions import prepare_connection
from .titles import (
    MAX_QUESTION,
    STOPWORDS,
    asked,
    asks_for_list,
    besides,
    carries,
    coverage,
    end_asked,
    held,
    kinds_asked,
    number_after,
    numbered,
    of_another,
    qualified,
    spoken_names,
    word_starts,
    words,
)

T = TypeVar("T")
RRF_K = 60
# Cosine similarity above which a vector hit alone makes the answer confident.
VECTOR_THRESHOLDS = {"okf-minilm-l6-int8": 0.48}
DEFAULT_VECTOR_THRESHOLD = 0.55
SUPERSESSION_HOPS = 5

# A name a third of the notes use is a word of the bundle, not a name (sqlfunctions.is_common_name): "if I roll more
# damage" names no note "Damage". But a question that is mostly that word is about it: "How do saves work?" had the
# 13th Age vault's README first (BM25 and vectors on "work") and the Saves rule fourth. Such a name still matches
# when it holds this share of the question's content words or more (no golden context moved but two set questions'
# last notes).
COMMON_NAME_ASKED = 0.5
TITLE_SQL = f"""select json_extract(value, '$.id') as id, row_number() over (order by key) as rank
from json_each(okf_title_names(:question))
where not okf_common_name(json_extract(value, '$.name'))  -- "more damage" names no note "Damage" (docs §2.1)
  or okf_coverage(:question, json_extract(value, '$.name')) >= {COMMON_NAME_ASKED}  -- a question mostly of it"""
# BM25 is ranked inside the full-text index first and only the best rows are joined: joining every
# match before sorting costs twice as much on OR-ed questions (10k concepts: 9 ms -> 4.5 ms).
# The extra 16 rows make room for index nodes and stubs (unfilled templates), which BM25 never seeds.
FTS_SQL = """select id, row_number() over (order by score) as rank, score from (
  select concepts.id, best.score
  from (select rowid, bm25(concepts_fts, 4.0, 4.0, 2.0, 2.0, 1.0, 1.0) as score from concepts_fts
        where concepts_fts match okf_fts_query(:question) order by score limit :k + 16) as best
  join concepts on concepts.rowid = best.rowid
  where not concepts.is_index and not concepts.is_stub
  order by best.score limit :k)"""
# The nearest chunks by cosine distance: okf_nearest_chunks() scans the float vectors held in memory (nearest.py);
# `select rowid, distance from chunk_vectors where embedding match okf_embed(:question) and k = :vector_k` (vec0)
# gives the same rows, at 1.6-2.0 ms a question on the Thellade vault against 0.34 ms (docs/design.md §2.3).
VECTOR_SQL = """select chunks.concept_id as id,
  row_number() over (order by min(knn.distance)) as rank,
  1 - min(knn.distance) as similarity,
  json_group_array(json_array(knn.rowid, knn.distance)) as chunk_distances
from (select json_extract(value, '$[0]') as rowid, json_extract(value, '$[1]') as distance
      from json_each(okf_nearest_chunks(okf_embed(:question), :vector_k))) as knn
join chunks on chunks.id = knn.rowid
join concepts on concepts.id = chunks.concept_id and not concepts.is_index and not concepts.is_stub
group by chunks.concept_id
order by rank limit :k"""
# From ContextOptions.binary_from chunks on, candidates come from 1-bit codes (Hamming distance, 32x less to
# scan) and the best :candidates of them are re-ranked by exact cosine: recall@10 0.988 at 200 candidates on real
# MiniLM vectors (benchmarks/quantized_knn.py). okf_hamming_candidates() scans the codes of chunk_bits
# held in memory (hamming.py); `select rowid from chunk_bits where embedding match
# vec_quantize_binary(okf_embed(:question)) and k = :candidates` gives the same set, ~10x slower.
VECTOR_BINARY_SQL = """select chunks.concept_id as id,
  row_number() over (order by min(knn.distance)) as rank,
  1 - min(knn.distance) as similarity,
  json_group_array(json_array(knn.rowid, knn.distance)) as chunk_distances
from (select chunk_floats.id as rowid, vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question))) as distance
      from json_each(okf_hamming_candidates(okf_embed(:question), :candidates)) as candidates
      join chunk_floats on chunk_floats.id = candidates.value
      order by distance limit :vector_k) as knn
join chunks on chunks.id = knn.rowid
join concepts on concepts.id = chunks.concept_id and not concepts.is_index and not concepts.is_stub
group by chunks.concept_id
order by rank limit :k"""
def _holding(notes: str) -> str:
    """The CTEs `wanted` and `holding`: which of the categories the question names (the CTE `named`: key, category,
    asked) each note of the CTE `notes` is of: one of a category's tags or one nested below it, a folder of it, or a
    value (docs/design.md §5.13). CATEGORY_SQL reads them for the set a question asks for, DATED_SQL to order the
    notes dated alike."""
    return f"""wanted as materialized (  -- each named category's tags, folders and ids, read once
  select named.key, 'tag' as kind, tag.value as name from named, json_each(named.category, '$.tags') as tag
  union all select named.key, 'folder', folder.value from named, json_each(named.category, '$.folders') as folder
  union all select named.key, 'id', note.value from named, json_each(named.category, '$.ids') as note
),
holding as materialized (  -- the named categories each holds: one of the tags, or one nested below it; or a folder
  select concepts.id, named.key, named.asked  -- cross join: from {notes} (else SQLite may read every note)
  from {notes} cross join concepts on concepts.id = {notes}.id
  join named on exists (
      select 1 from json_each(concepts.tags) as held join wanted on wanted.key = named.key and wanted.kind = 'tag'
      and (held.value = wanted.name or substr(held.value, 1, length(wanted.name) + 1) = wanted.name || '/'))
    or exists (select 1 from wanted where wanted.key = named.key and wanted.kind = 'folder'
               and substr(concepts.id, 1, length(wanted.name) + 1) = wanted.name || '/')
    or exists (select 1 from wanted where wanted.key = named.key and wanted.kind = 'id' and wanted.name = concepts.id)
  where not concepts.is_index
)"""


# A date the question writes names the notes dated then, as a title names its note, so it weighs as much: "the
# incursions of -12 PR" is Thellade's "Incursions Reach the Deep Dark" (startdate: 01 Emberwake -12 PR), which no
# other list ranked (dates.py, docs/design.md §2.9). Of notes dated alike, those of the categories the question names
# come first ("Group 3 had two sessions on 04 Dawnmarch 212 PR…": Group 3's, tagged Group3, before Group 4's of that
# day; Thellade-check10's thl26), then those nearest the question.
DATED_SQL = """with dated as materialized (  -- the notes named, once: the function is asked one time
  select json_extract(value, '$.id') as id, json_extract(value, '$.score') as score
  from json_each(okf_dated_notes(:question))
),
named as materialized (  -- the categories the question names (a tag, a folder, a value), when a date named notes
  select key, value as category, json_extract(value, '$.asked') as asked
  from json_each(okf_categories_named(:question)) where exists (select 1 from dated)
),
""" + _holding("dated") + """,
held as materialized (select id, count(*) as categories from holding group by id)  -- how many each is of
select dated.id,
  row_number() over (order by dated.score desc, coalesce(held.categories, 0) desc{nearest}, dated.id) as rank
from dated left join held on held.id = dated.id{similarity}
order by rank limit :k"""
DATED_SIMILARITY = """
left join (select chunks.concept_id as id,
             max(1 - vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question)))) as similarity
           from chunks join chunk_floats on chunk_floats.id = chunks.id
           where chunks.concept_id in (select id from dated)
           group by chunks.concept_id) as nearest on nearest.id = dated.id"""
LISTS = {"title": (TITLE_SQL, 2.0), "fts": (FTS_SQL, 1.0), "vector": (VECTOR_SQL, 1.0),
         "dated": (DATED_SQL.format(nearest=", coalesce(nearest.similarity, 0) desc", similarity=DATED_SIMILARITY),
                   2.0)}
# A list's first note far ahead of its second takes a seed's place whatever the fusion says (docs/design.md §2.5):
# reciprocal rank fusion reads ranks, not scores, so a note first in one list only (1/61) ranked below notes fifth
# to tenth in two (2/66): 13th Age's Invisibility rule, the vector list's first for "an unseen foe" by 0.05 came
# ninth, the Barbed Vines stat block, BM25's first by 42 %, 16th behind six title matches. Ahead by this much:
LEAD_SIMILARITY = 0.04  # cosine, over the vector list's second
LEAD_BM25 = 1.3  # times the BM25 list's second (0.03-0.05 and 1.2-1.3 gave the same notes on every set; 1.5 lost two)
LEADERS = {  # a list's first note far ahead of its second
    "fts": "select id from fts where rank = 1 and score <= :lead_bm25 * (select score from fts where rank = 2)",
    "vector": "select id from vector where rank = 1\n"
              "    and similarity >= :lead_similarity + (select similarity from vector where rank = 2)",
}
# The walk reads the question (docs/design.md §5): graph_expand finds up to WALK_POOL notes around the seeds by
# structure alone; each is then scored by how well it answers the rest of the question (the question without the
# names the seeds matched): its best chunk's similarity, its BM25 among the notes found, and the walk's own
# (intent-weighted, damped) score; and the slots go round the seeds in rank order, so the best seed's best
# neighbour is never crowded out by a weak seed's hub neighbours.
WALK_POOL = 100
# The walk adds at most as many notes as there are seeds, and this many more (docs/design.md §5.6): two more found
# 13th Age's Dwarf race for "the people ruled by the icon who is lord of Forge" and three hotpotqa-mini notes in
# graph-walk mode, and lost none; one more found nothing, four no more than two. The budget still decides.
WALK_EXTRA = 2
WALK_SHARE = 0.5  # a walked note's priority: its seed's, halved for each better note walked from that seed
# `linking`: the similarity to the question of the seed's section that holds the link's text: a seed points at what
# the question needs from the section that answers it (13th-Age-check's tac22: of Other Damage Types' links, the one
# in its section on weaknesses, Vulnerable; 0.3 and 0.4 found it, 0.2 did not, 0.6 lost the example's q09).
WALK_WEIGHTS = {"similarity": 1.0, "lexical": 0.6, "structure": 0.1, "predicate": 0.5, "linking": 0.3}
# A walked note's nearest chunk is at least this similar to the question: below it, no chunk of the note is about it
# (docs §5.2). The OKF samples' skill note "run-on-bq" was walked into 9 questions at -0.03 to 0.07, and 13th Age's
# icon list and index into "I roll a natural 1 firing my bow at an orc…" at 0.02 and 0.04. Every walked note a
# golden question needed was at 0.128 or more; 22 of the 586 walked notes were below 0.1.
WALK_FLOOR = 0.1
# A table of contents links to everything and answers nothing: 13th Age's 13th-Age-Index (84 links, 55 % of its text
# theirs) and Combat-Rules (82, 58 %) were walked into 129 and 75 of the 636 hybrid and graph-walk contexts of its
# sets, and no golden question needs either. The walk returns no note with TOC_LINKS body links or more whose link
# text is TOC_SHARE of its body or more (docs/design.md §5.3); the lists may still find one.
TOC_LINKS = 50
TOC_SHARE = 0.5
# A chunk that repeats one of a seed's word for word (case aside) says nothing the seed does not: 13th Age's General
# Feats list holds the Ritual Casting feat's text, and took the feat's one walk slot from Rituals, the rules it
# points to (docs/design.md §5.5).
WALK_SIMILARITY = """,
seed_sections as materialized (  -- the seeds' chunks, read once: those with a vector get their similarity
  select chunks.concept_id as id, lower(chunks.text) as folded,
    case when chunk_floats.embedding is not null
         then 1 - vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question))) end as similarity
  from chunks left join chunk_floats on chunk_floats.id = chunks.id
  where chunks.concept_id in (select value from json_each(:seeds))
),
similarity as materialized (
  select chunks.concept_id as id,
    max(1 - vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question)))) as similarity
  from chunks join chunk_floats on chunk_floats.id = chunks.id
  where chunks.concept_id in (select id from arrivals) and lower(chunks.text) not in (select folded from seed_sections)
  group by chunks.concept_id
),
linking as materialized (  -- how like the question is the seed's section that links to the note (holds its text)
  select edges.dst as id, max(seed_sections.similarity) as linking
  from edges join seed_sections on seed_sections.id = edges.src and instr(seed_sections.folded, lower(edges.text)) > 0
  -- by the seeds' edges (`+` keeps SQLite off the dst index: a hub arrival's thousands of incoming edges, 2 ms at 10k)
  where edges.src in (select value from json_each(:seeds)) and +edges.dst in (select id from arrivals)
    and length(edges.text) >= 3
  group by edges.dst
)"""
WALK_SQL = """with arrivals as materialized (
  select json_extract(value, '$.id') as id, json_extract(value, '$.via') as via,
    json_extract(value, '$.score') as structure, value as arrival,
    (select max(okf_coverage(replace(replace(said.predicate, '_', ' '), '-', ' '), :question))
     from (select json_extract(reached.value, '$.predicate') as predicate union all
           select json_extract(link.value, '$[0]') from json_each(reached.value, '$.from_seeds') as link) as said
    ) as predicate
  from json_each(graph_expand(:seeds, :hops, :walk_options)) as reached
){similarity},
lexical as materialized (
  select concepts.id, matches.bm25
  from (select rowid, bm25(concepts_fts, 4.0, 4.0, 2.0, 2.0, 1.0, 1.0) as bm25 from concepts_fts
        where concepts_fts match okf_fts_query(:rest) limit -1) as matches
  join concepts on concepts.rowid = matches.rowid
  where concepts.id in (select id from arrivals)
),
scored as materialized (
  select arrivals.id, arrivals.via, arrivals.arrival, {similarity_value} as similarity,
    :similarity_weight * {similarity_value}
    + :lexical_weight * coalesce(lexical.bm25 / (select min(bm25) from lexical), 0)
    + :structure_weight * arrivals.structure / (select max(structure) from arrivals)
    + :predicate_weight * arrivals.predicate
    + :linking_weight * {linking_value} as score
  from arrivals left join lexical on lexical.id = arrivals.id{join}
),
bridged as (  -- a note two hops out is worth no more than the note it is reached through: paths, not points
  select scored.id, scored.arrival, scored.similarity, min(scored.score, coalesce(parent.score, scored.score)) as score
  from scored left join scored as parent on parent.id = scored.via
),
ranked as (  -- each seed's arrivals, best first, but for notes offered already
  select bridged.*, reached.value as seed,
    row_number() over (partition by reached.value order by bridged.score desc, bridged.id) as nth
  from bridged join json_each(bridged.arrival, '$.reached_from') as reached
  where bridged.id not in (select value from json_each(:offered))
),
placed as (  -- a note reached from several seeds takes its best place: the n-th of a seed as strong as rrf
  select ranked.*, nth / strength.value as place,
    row_number() over (partition by ranked.id order by nth / strength.value, ranked.seed) as best
  from ranked join json_each(:seed_strengths) as strength on strength.key = ranked.seed
)
select arrival, seed, similarity, round(score, 6) as score, nth from placed
where best = 1{floor}
  and (  -- no table of contents: :toc_links links or more, their text :toc_share of its own or more
    select count(*) < cast(:toc_links as integer)
      or sum(length(edges.text)) < :toc_share * (select length(body) from concepts where concepts.id = placed.id)
    from edges where edges.src = placed.id and edges.kind in ('link', 'wikilink'))
order by place, score desc, id
limit :cap"""


def _walk_sql(vectors: bool) -> str:
    """The walk statement; without vectors the walk's own score alone orders the notes."""
    if vectors:
        return WALK_SQL.format(similarity=WALK_SIMILARITY, similarity_value="coalesce(similarity.similarity, 0)",
                               linking_value="coalesce(linking.linking, 0)",
                               join="\n  left join similarity on similarity.id = arrivals.id"
                                    "\n  left join linking on linking.id = arrivals.id",
                               floor=" and similarity >= cast(:floor as real)")
    return WALK_SQL.format(similarity="", similarity_value="0", linking_value="0", join="", floor="")


PROPERTY_FACTS = 6  # frontmatter links of the note the question is most about, shown as facts (docs/design.md §6)
LINKED_FACTS = 20  # frontmatter links to a template the question is about (a party of six and its sessions, §2.6), or
# to the first note when the question asks who or which of them (a faction's sixteen people, §6)
# A vault keeps much of what it knows in frontmatter links ("religion: [[The Pactbound Flame]]", "organization:
# [[The Sable Accord]]"), which the note's text never says: the first note's first few come as fact lines. All of
# every note's cost Thellade's temporal tier 0.949 -> 0.808 (notes 8.6 -> 5.6 within the budget). Not its `sources`:
# they say where the note comes from (OKF §5.1), which each fact line already cites, not what its subject is.
FACTS_SQL = f"""with told(id) as (  -- the first note, and each unfilled template offered: its links are all it says
  select json_extract(:nodes, '$[0]')
  union
  select concepts.id from json_each(:nodes) join concepts on concepts.id = json_each.value and concepts.is_stub
),
first_properties as (  -- each note's first :property_facts: each key's first link before any key's second
  select edges.* from edges join (
    select id, row_number() over (partition by src order by nth, id) as place from (
      select id, src, row_number() over (partition by src, predicate order by id) as nth from edges
      where kind = 'property' and src in (select id from told) and {NOT_A_SOURCE})
  ) as ranked on ranked.id = edges.id and ranked.place <= cast(:property_facts as integer)
),
linked_to(id, is_stub) as (  -- each template offered, and the first note when the question asks who or which
  select id, max(is_stub) from (  -- of many (a template's links all come; a note's, of the types asked for)
    select told.id, 1 as is_stub from told join concepts on concepts.id = told.id where concepts.is_stub
    union all select json_extract(:nodes, '$[0]'), 0 where :list_question)
  group by id
),
kinds(kind) as materialized (select value from json_each(:kinds_asked)),
linked_from as (  -- the first :linked_facts links to each template offered, the same way: a party's members;
  -- and to the first note, from the types the question asks for: a faction's members
  select edges.*, 2 as through, ranked.place from edges join (  -- by the linking note's id: from many files
    select id, row_number() over (partition by dst order by asked desc, nth, src, id) as place from (
      select edges.id, edges.src, edges.dst, linked_to.is_stub,
        row_number() over (partition by edges.dst, edges.predicate order by edges.src, edges.id) as nth,
        row_number() over (partition by edges.dst, edges.src order by edges.id) as once,  -- a place's `location`
        lower(source.type) in (select kind from kinds) as asked  -- "Which places…": places; "Who…": people
      from linked_to join edges on edges.dst = linked_to.id join concepts as source on source.id = edges.src
      where edges.kind = 'property' and edges.src != edges.dst and {NOT_A_SOURCE})
    where (is_stub or asked)  -- a template's links are all it says; a note's, the ones the question asks for
      and once = 1  -- and its `parentsubregion` to the same isles: one line a linking note, room for the next
  ) as ranked on ranked.id = edges.id and ranked.place <= cast(:linked_facts as integer)
)
select src, predicate, dst, kind, object_literal, date, source_id, through = 2 as linked from (
  select edges.*, 0 as through, null as place from edges
  where edges.kind = 'relation' and edges.src in (select value from json_each(:nodes))
  union all
  select *, 0, null from first_properties
  union all  -- an unfilled template's links are all it says: those the question asks for ("worshipped": `worship`)
  select edges.*, 1, null from first_properties  -- cross join: from the few links out, never a scan of every edge
  cross join concepts on concepts.id = first_properties.dst and concepts.is_stub
    and coalesce(concepts.degree, 0) < cast(:hub_degree as integer)  -- a hub's links are everything (§2.6)
  cross join edges on edges.src = concepts.id and edges.kind = 'property'
  where length(edges.predicate) >= 4 and ' ' || :question like '% ' || replace(edges.predicate, '_', ' ') || '%'
  union all  -- the values of `told` that are no link, whose key the question names: "When was Kanda founded?"
  select null, src, null, key, 'field', null, value, null, null, null, null, 0, null from (
    select concepts.id as src, field.key, case when field.type in ('array', 'object') then coalesce((
        select group_concat(item.value, ', ') from json_each(field.value) as item  -- a list's words
        where field.type = 'array' and item.type in ('text', 'integer', 'real') and item.value not like '%[[%'), (
        select group_concat((select group_concat(part.key || ' ' || part.value, ' ') from json_each(item.value) as part
                             where part.type in ('text', 'integer', 'real')), '; ')  -- records: OKF §5.2's verified
        from json_each(iif(field.type = 'object', json_array(json(field.value)), field.value)) as item
        where item.type = 'object'))
      else field.value end as value
    from told join concepts on concepts.id = told.id
    cross join json_each(concepts.frontmatter) as field
    where field.type in ('text', 'integer', 'real', 'array', 'object') and length(field.key) >= 4
      and field.key not in ('type', 'title', 'description', 'aliases', 'tags', 'sources')  -- their own columns
      and ' ' || :question like '% ' || replace(replace(field.key, '_', ' '), '-', ' ') || '%'
  )
  where value not like '%[[%'  -- a link is an edge, above
    and :question not like '%' || value || '%'  -- "Group 4's session": "group Group 4" says nothing
  union all  -- when the question asks when (or compares times: asks_dates), every offered note's dates, whatever
  -- their keys: "When was each founded?" compares notes whose dates only their frontmatter holds (docs/design.md §6)
  select null, concepts.id, null, field.key, 'field', null, field.value, null, null, null, null, 0, null
  from json_each(:nodes) as offered join concepts on concepts.id = offered.value
  cross join json_each(concepts.frontmatter) as field
  where :asks_when and field.type in ('text', 'integer') and okf_date_field(field.key, field.value)
  union all
  select * from linked_from  -- in the order they were picked: the types asked for first
)
order by through, place, src, date, id"""

# "when" asks when only as a question word: before a verb it asks with ("When did…", "when in the battle does
# she…", "when's"), or alone ("Who started the Hollow Saints, when, and why?"). "What happened when Group 3 rioted
# in Boba?" and "When my wizard takes damage, what save…" ask what, and a WHEN intent gave every offered note's
# dates as facts (FACTS_SQL): 44 of the 85 fact lines in the contexts of the 55 development questions that say
# "when" so (docs/design.md §4.1). Nor does "when" before a verb in a clause another question word opened: "What
# happens when a monster is staggered?" and "What do I roll when my turn is over?" ask what (stop 56: 3 development
# questions, no context changed; the page said "Intent WHEN", and a vault's dates would have come as facts).
_AUXILIARY = r"(did|does|do|was|were|is|are|will|would|could|can|has|have|had|should|must|might|may)"
_WHEN_BEFORE_A_VERB = rf"\bwhen(\s+[\w'’-]+){{0,4}}?\s+{_AUXILIARY}\b"
_WHEN_ASKED = (r"\bwhen['’]s\b|\bwhen\b(?=\s*([?,.;:]|$))"
               r"|\b(what (year|date|day|month|time)|how long|since|until|timeline|chronolog\w*|date[sd]?)\b")
_WHEN_IN_ANOTHER_QUESTION = re.compile(r"^\s*(what|who|whom|whose|which|how|where|why)\b[^,;:.?!—–]*?\bwhen\b")
_INTENTS = [
    ("HISTORICAL", r"\b(previous(ly)?|former(ly)?|used to|original(ly)?|first (version|charter)|chang(e|ed|es)|versions|over time|evolv\w*|earlier|prior|superseded|old(er)? (version|charter|rule)|history of|before the (new|current))\b"),
    ("WHY", r"\b(why|reason|reasons|cause[sd]?|motive|motivation|because)\b"),
    ("WHEN", f"{_WHEN_BEFORE_A_VERB}|{_WHEN_ASKED}"),
    ("ENTITY", r"^\s*(who|what|which|where)\b"),
]


# A question that compares or measures times asks for dates without saying "when": "Which starts earlier that day?",
# "Which is older…?", "how much in-game time passed…?", "which begins first in the game calendar, and how far apart?"
# (17 of the development sets' temporal questions). It gets every offered note's dates as facts, as a WHEN question
# does (FACTS_SQL), and keeps its own intent: "earlier" also asks about the past (HISTORICAL). Every set and mode:
# answer quotes shown +3 to +4 in each mode (Thellade-check4's thf30 and thf31, -check7's thi28, thi31, thi32,
# -check8's thj31 and thj34, -check9's thk32), no required note lost. Questions about how a stretch unfolded too
# (_UNFOLDING_QUESTION) lost a required note in hybrid and one in vector:15 for fewer quotes (docs/design.md §6).
_TIME_COMPARED = re.compile(
    r"\b(which|who)\b[^?]*\b(earlier|later|first|older|younger|newer|sooner)\b"
    r"|\b(came|comes|come|happened|began|begins|begin|started|starts|opened|opens|founded) (first|earlier|later)\b"
    r"|\bhow (long|much (in-game )?time|many (days|weeks|months|years)|far apart)\b"
    r"|\bin-game (time|days?|dates?)\b|\b(game|in-game) calendar\b", re.IGNORECASE)


def asks_dates(question: str, intent: str) -> bool:
    """Whether the notes' dates answer the question: it asks when, or compares or measures times."""
    return intent == "WHEN" or bool(_TIME_COMPARED.search(question))


def classify_intent(question: str) -> str:
    """WHY / WHEN / HISTORICAL / ENTITY / GENERAL by keywords (docs/design.md §4)."""
    q = question.casefold()
    for intent, pattern in _INTENTS:
        if re.search(pattern, q) and not (intent == "WHEN" and _when_in_passing(q)):
            return intent
    return "GENERAL"


def _when_in_passing(question: str) -> bool:
    """A "when" that asks what happens then, not when: inside a clause another question word opened."""
    return bool(_WHEN_IN_ANOTHER_QUESTION.search(question)) and not re.search(_WHEN_ASKED, question)


def connection(db: Any) -> Any:
    """A sqlite3 connection with sqlite-vec and our SQL functions, from a path, Database or connection. A path must
    name a file: opening one that is not there would leave an empty database behind, under a mistyped name."""
    if isinstance(db, (str, Path)):
        if not Path(db).is_file():
            raise FileNotFoundError(f"no such database file: {db}")
        conn = sqlite_utils.Database(db).conn
    elif isinstance(db, sqlite_utils.Database):
        conn = db.conn
    else:
        conn = db
    try:
        conn.execute("select okf_fts_query('x')")
    except Exception:  # noqa: BLE001 - "no such function", from pysqlite3 or the standard library's sqlite3 alike
        prepare_connection(conn)
    return conn


# ------------------------------------------------------------------ records


@dataclass(frozen=True)
class ModeRules:
    """What a mode runs: the seed lists it fuses, their length, the seeds it keeps, the walk's hops (None: no walk),
    and the share of the best note's score under which a note the graph or the lists' tail added is left out
    (FAINT_KINDS; 0: none is)."""

    lists: tuple[str, ...]
    list_k: Callable[[ContextOptions], int]
    seed_count: Callable[[ContextOptions], int]
    walk_hops: Callable[[ContextOptions], int] | None
    faint_share: float = 0.0


# A note the walk, the lists' tail or a linked guess added at under a tenth of the best note's score (the best seed's
# fourth walked neighbour, a weaker seed's third) is left out in hybrid: over the development sets' 1,409 hybrid
# contexts that need a note, 338 such notes were packed and none was needed (under 0.125: 676 notes, 5 needed),
# and a context held up to 11 notes. Left out, the mean falls 0.1-0.5 a set, and no note needed or answer quote
# shown is lost. Graph-walk keeps them: its notes past its five seeds are all walked, and it lost 9 needed notes.
FAINT_SHARE = 0.1
FAINT_KINDS = ("hop", "next", "linked")
MODE_RULES = {
    "hybrid": ModeRules(("title", "fts", "vector", "dated"), lambda o: max(o.k, 20), lambda o: o.max_seeds,
                        lambda o: o.hops, FAINT_SHARE),
    "vector": ModeRules(("vector",), lambda o: o.k, lambda o: o.k, None),
    "keyword": ModeRules(("fts",), lambda o: o.k, lambda o: o.k, None),
    "graph-walk": ModeRules(("vector",), lambda o: 5, lambda o: 5, lambda o: 1),
}


@dataclass
class Query:
    """What every stage reads, and what each leaves behind: its SQL, the parameters it ran with, its time."""

    conn: Any
    question: str
    options: ContextOptions
    rules: ModeRules
    model: str
    vectors: str  # "used", "partial: N of M chunks", "none in this database" or "unavailable: why"
    lists: tuple[str, ...]  # the seed lists that run (no vector list without vectors)
    binary: bool  # vector candidates from 1-bit codes
    intent: str
    historical: bool
    vector_threshold: float  # the gate's: the option, else the bundle's calibration, else the model's default
    concepts: dict[str, dict[str, Any]] = field(default_factory=dict)  # what is known of each note met
    sql: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    categories: list[dict[str, Any]] | None = None  # category_notes, once read
    nearest: list[str] = field(default_factory=list)  # what a refusal points to instead of its seeds: the members
    # of the series a question names a missing member of

    @property
    def uses_vectors(self) -> bool:
        """Vector search runs: every vector, or those a build still embedding has written so far."""
        return self.vectors == "used" or self.vectors.startswith("partial")

    def run(self, stage: str, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """A stage's statement, kept with its parameters so that the response can show and rerun it."""
        self.sql[stage], self.params[stage] = sql, params
        return _rows(self.conn, sql, params)

    def know(self, ids: list[str]) -> None:
        """Load what the stages need of these notes, once each."""
        missing = [i for i in dict.fromkeys(ids) if i not in self.concepts]
        if missing:
            self.concepts.update(_concepts(self.conn, missing))


@dataclass
class Seed:
    """A note the fused lists found, resolved to the end of its supersession chain."""

    id: str
    path: str
    title: str
    ranks: dict[str, int | None]
    rrf: float
    resolved_from: str | None = None
    bridged_from: str | None = None  # found by the second round, through this seed's best chunk
    leads: bool = False  # its list's clear first, given a seed place the fusion did not give it (LEADERS)
    in_passing: bool = False  # a template the question names in passing, placed below the notes found (pick_seeds)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Arrival:
    """A note the walk reached: at which hop, from which note, over which edge (graph_expand's row)."""

    id: str
    hop: int
    via: str
    predicate: str
    kind: str
    anchor: str | None
    score: float
    degree: int
    reached_from: list[str]  # the seeds with a path to it, strongest path first
    seed: str  # the one it was walked from: where it ranks best, for that seed's strength
    similarity: float | None = None  # of the note's best chunk to the question
    nth: int = 1  # its place among the notes walked from the same seed
    from_seeds: dict[str, list[Any]] = field(default_factory=dict)  # seed -> [predicate, kind, anchor] of its link

    def __post_init__(self) -> None:
        """Said to come by the seed that placed it, when it links to it: The Silver Chain, placed by The Red Runners
        (its allies), had said "via The Emberheart Traders (rivals)", a seed the budget then left out."""
        if self.seed != self.via and self.seed in self.from_seeds:
            self.via = self.seed
            self.predicate, self.kind, self.anchor = self.from_seeds[self.seed]


@dataclass
class Node:
    """A note offered to the budget: what it is, how strongly it is wanted, and why it is there."""

    concept: dict[str, Any]
    score: float
    why: dict[str, Any]  # {"kind": "seed", "ranks", "resolved_from"} or {"kind": "hop", "hop", "from", ...}
    anchor: str | None = None
    stale: bool = False
    cut: bool = False  # only the start of its chunk fitted the budget

    @property
    def id(self) -> str:
        return self.concept["id"]

    @property
    def is_seed(self) -> bool:
        return self.why["kind"] == "seed"

    @property
    def via(self) -> str:
        """`why` as one line for people (and for the LLM's context); a note also in the set the question asks for
        says so ("seed: fts+vector; category: Kobolds, Mook"): the LLM tells the set's notes from the others."""
        in_set = self.why.get("category")
        return self._found() + (f"; category: {', '.join(in_set)}" if in_set else "")

    def _found(self) -> str:
        why = self.why
        if why["kind"] == "hop":
            return f"hop {why['hop']} via {why['from']} ({why['predicate']})"
        if why["kind"] == "series" and why["role"] in ASKED_ROLES:
            return f"series: {ASKED_ROLES[why['role']]}, in the series of {why['after']}"
        if why["kind"] == "numbered":
            return f"named by the question: {why['name']}"
        if why["kind"] == "category":
            return "category: " + ", ".join(why["named"])
        if why["kind"] == "series":
            return "series: " + ", ".join(f"{side} {why[side]}" for side in ("after", "before") if why[side])
        text = found_in(why)
        text += f", linked with {why['linked_with']}" if why.get("linked_with") else ""
        text += f" (resolved from superseded {why['resolved_from']})" if why.get("resolved_from") else ""
        return text + (f" (second round, through {why['bridged_from']})" if why.get("bridged_from") else "")

    def header_fields(self) -> dict[str, Any]:
        """What render.node_header shows: for an unfilled template its aliases too, which with its links are all the
        vault says of it ("Garrik 'Black-Hand' Voss" for "Who is Black-Hand?")."""
        aliases = json.loads(self.concept.get("aliases") or "[]") if self.concept.get("is_stub") else []
        return {**self.concept, "via": self.via, "stale": self.stale, "also_known_as": aliases}

    def as_json(self) -> dict[str, Any]:
        return {**{key: self.concept.get(key) for key in ("id", "bundle", "path", "title")}, "score": self.score,
                "via": self.via, "why": self.why, "trust": self.concept.get("trust"), "stale": self.stale,
                "superseded_by": self.concept.get("superseded_by"), "cut": self.cut}


# ------------------------------------------------------------------- stages


def context_for(db: Any, question: str, options: ContextOptions | None = None, **overrides: Any) -> dict[str, Any]:
    """The slice of the bundle an LLM needs for `question`: seeds, gate, walk, facts, budget, render.

    `options` (default ContextOptions()) with `overrides` on top; a BadOption names a bad one.
    """
    return context_and_blocks(db, question, options, **overrides)[0]


def context_and_blocks(db: Any, question: str, options: ContextOptions | None = None,
                       **overrides: Any) -> tuple[dict[str, Any], list[list[str]]]:
    """context_for's answer, and the rendered block of each of its `nodes` (same order) in pieces: the note as
    chosen, then each chunk the budget's last quarter added to it. A question across several databases
    (across.py) packs those into one shared budget the same way."""
    options = replace(options or ContextOptions(), **overrides)
    if len(question) > MAX_QUESTION:  # the SQL functions refuse longer text; say so here, where it is asked
        raise BadOption("question", f"the question is {len(question):,} characters; at most {MAX_QUESTION:,}")
    started = time.perf_counter()
    query = open_query(db, question, options)
    fused = _timed(query, "seeds", find_seeds, query)
    confident, reason = _timed(query, "gate", gate, query, fused)
    seeds = pick_seeds(query, fused)
    if query.options.mode == "hybrid" and seeds and confident:
        seeds += _timed(query, "bridge", bridge, query, fused, seeds)
    walked: list[Arrival] = []
    if query.rules.walk_hops is not None and seeds and confident:  # not confident: nothing is returned
        walked = _timed(query, "walk", walk, query, seeds, fused)
        if query.uses_vectors:
            walked += _timed(query, "mentioned", mentioned, query, seeds, fused, walked)
    tick = time.perf_counter()
    nodes = offer(query, seeds, walked)
    if query.options.mode == "hybrid" and query.options.hops and confident and nodes:  # hops 0: no walk, no slots
        nodes += next_in_lists(query, fused, seeds, nodes)
        guesses = _timed(query, "linked", linked_guesses, query, fused, seeds, nodes)
        nodes += guesses
        if guesses:
            nodes += _timed(query, "linked_walk", walk_from_guesses, query, fused, guesses, nodes)
    if confident and nodes:
        nodes += _timed(query, "series", series, query, nodes)
    if confident:  # the notes of a set the question asks for may be all that is found ("Who are the lieutenants?")
        nodes += _timed(query, "categories", categories, query, nodes)
    nodes = without_faint(nodes, query.rules.faint_share)
    facts = find_facts(query, nodes, run=confident)
    if facts:
        nodes += templates_read_through(query, nodes, facts)
    picked, blocks, facts = fill_budget(question, nodes, sections(query, nodes) if nodes else {}, facts,
                                        options.budget)
    query.timings["budget"] = _ms(tick)
    return respond(query, confident, reason, seeds, picked, blocks, facts, started), blocks if confident else []


def without_faint(nodes: list[Node], share: float) -> list[Node]:
    """The nodes but those the graph or the lists' tail added (FAINT_KINDS) scored under `share` of the best."""
    floor = share * max((node.score for node in nodes), default=0.0)
    return [node for node in nodes if node.why["kind"] not in FAINT_KINDS or node.score >= floor]


def open_query(db: Any, question: str, options: ContextOptions) -> Query:
    """The connection, and what the stages need to know of the database before they start."""
    conn = connection(db)
    check_format(conn)
    model = canonical_id(stored_model(conn))
    rules = MODE_RULES[options.mode]
    has_vectors = _has_table(conn, "chunk_vectors")
    vectors = "used" if has_vectors else "none in this database"
    progress = vectors_progress(conn, model) if has_vectors else None
    if progress is not None:
        vectors = f"partial: {progress[0]:,} of {progress[1]:,} chunks"
    if has_vectors and "vector" in rules.lists:
        try:  # embedded here (and cached) so that a failing model degrades the answer, not the request
            embed_query(model, question)
        except EmbeddingError as error:
            has_vectors, vectors = False, f"unavailable: {error}"
    lists = tuple(name for name in rules.lists if name != "vector" or has_vectors) or ("title", "fts")
    intent = classify_intent(question)
    gate = json.loads(read_meta(conn).get("gate") or "{}")
    threshold = options.vector_threshold
    if threshold is None:
        threshold = gate["vector_threshold"] if gate.get("model") == model else VECTOR_THRESHOLDS.get(
            model, DEFAULT_VECTOR_THRESHOLD)
    return Query(
        conn, question, options, rules, model, vectors, lists,
        binary=has_vectors and _chunk_count(conn) >= options.binary_from, intent=intent,
        historical=options.historical if options.historical is not None else intent == "HISTORICAL",
        vector_threshold=threshold,
    )


# What a database's first question makes, once per build and process (per_build.py), and the SQL that makes it: the
# same functions the stages call, so that nothing here can drift from what a question reads. At 10k synthetic notes
# the first question took 0.44-0.82 s and the second new one 0.17-0.30 s, against ~35 ms for any later one; at 100k
# the first took 4.9 s (the title index 1.4 s, the category index 1.7 s).
PREPARE_SQL = {
    "titles": "select okf_title_names('')",
    "categories": "select okf_categories_named('')",
    "dates": "select okf_dated_notes('1')",
    "series": "select okf_series_members('')",
    "model": "select length(okf_embed(''))",
    "codes": "select okf_hamming_candidates(okf_embed(''), 1)",
    "vectors": "select okf_nearest_chunks(okf_embed(''), 1)",
}


def prepare(db: Any, options: ContextOptions | None = None) -> dict[str, float]:
    """Make now, for every connection of this process, what the database's first question would make: its title,
    category and date indexes, the embedded model's session, and the vectors its vector list reads (the 1-bit codes
    from `binary_from` chunks, else the floats; not while a build is still embedding: each batch is a new state).
    Returns each step's milliseconds. A server does this as it starts (the `startup` hook), and after each build when
    it follows its files (web.Follower), so that its first question costs what any new one does. A model other than
    the embedded default is not called: it may be a server that is not there."""
    options = options or ContextOptions()
    conn = connection(db)
    check_format(conn)
    steps = ["titles", "categories", "dates", "series"]
    model = stored_model(conn)
    if _has_table(conn, "chunk_vectors") and is_default(model):
        steps.append("model")
        if vectors_progress(conn, canonical_id(model)) is None:  # not while a build still commits a batch a second
            steps.append("codes" if _chunk_count(conn) >= options.binary_from else "vectors")
    took = {}
    for step in steps:
        tick = time.perf_counter()
        conn.execute(PREPARE_SQL[step]).fetchall()
        took[step] = _ms(tick)
    return took


def find_seeds(query: Query) -> list[dict[str, Any]]:
    """1. Every seed list as a CTE, fused by reciprocal rank fusion: one statement."""
    options = query.options
    params = {"question": query.question, "k": query.rules.list_k(options), "vector_k": options.vector_k,
              "candidates": options.candidates}
    if _leading(query.lists):
        params.update(seats=query.rules.seed_count(options), lead_bm25=LEAD_BM25, lead_similarity=LEAD_SIMILARITY)
    fused = query.run("seeds", _fusion_sql(query.lists, options.fusion_weights, query.binary, query.uses_vectors),
                      params)
    query.know([row["id"] for row in fused])
    return fused


def gate(query: Query, fused: list[dict[str, Any]]) -> tuple[bool, str]:
    """2. Confident when the question names a title or alias, one of the best keyword matches covers most of its words,
    or the nearest chunk is as similar as the bundle's calibrated threshold; otherwise nothing is returned. The
    same evidence in every mode: what a mode's lists did not look at is looked up here (docs/design.md §3)."""
    titled, dated, keyword, best = _evidence(query, fused)
    unknown = [row["name"] for row in query.run("names", UNKNOWN_NAMES_SQL, {"question": query.question})]
    missing = _missing_member(query, fused)  # before the titles: "session 9 in Kanda" names the city's note
    if missing:
        reason, query.nearest = missing
        return False, reason
    if titled and (not unknown or _named(query, titled, unknown)):
        return True, "the question names a concept's title or alias"
    if unknown:
        return False, f"the question names {', '.join(unknown)}, which no note mentions"
    if dated:  # "What happened on 13 March 1347?": the session dated so, as a title would name it (§2.9)
        return True, "the question names a date notes are dated at"
    members = category_set(query)
    if members:  # "Which player characters are in Group 3?": the notes tagged so, as a title names a note (§5.13)
        return True, f"the question names a set of {len(members)} notes: {', '.join(json.loads(members[0]['named']))}"
    options = query.options
    if keyword:
        texts = query.conn.execute(
            "select title || ' ' || coalesce(description, '') || ' ' || coalesce(tags, '') || ' ' || body"
            " || ' ' || coalesce(properties, '')"
            " from concepts where id in (select value from json_each(?))", [json.dumps(keyword)]
        ).fetchall()
        share = max(coverage(query.question, text) for (text,) in texts)
        if share > options.coverage_threshold:
            return True, f"a top keyword match covers {share:.0%} of the question's content words"
    threshold = query.vector_threshold
    if best >= threshold:
        return True, f"the nearest chunk has cosine similarity {best:.2f} (threshold {threshold:.2f})"
    if not fused:
        return False, "no title, keyword or vector match at all"
    if query.vectors.startswith("partial"):  # the nearest chunk may not have its vector yet: not a reason to refuse
        return True, (f"vectors are still being computed ({query.vectors.removeprefix('partial: ')}): "
                      f"answered from the matches so far, best vector similarity {best:.2f}")
    return False, (
        f"no title named, keyword coverage at most {options.coverage_threshold:.0%}, "
        f"best vector similarity {best:.2f} below {threshold:.2f}"
    )


# The series of the notes the lists found, SERIES_REACH notes either way along `next` edges: their paths
SERIES_MEMBERS_SQL = """with recursive valued(id) as (  -- the notes holding a value the question says, a series
  -- or not: "Group 4's third session" is about the notes with `group: Group 4`, whatever the lists found
  select note.value from json_each(okf_categories_named(:question)) as named, json_each(named.value, '$.ids') as note
),
reach(id, steps, direction) as (
  select value, 0, 1 from json_each(:found)
  union all
  select value, 0, -1 from json_each(:found)
  union all
  select edges.dst, reach.steps + 1, 1 from reach join edges on edges.src = reach.id and edges.kind = 'sequence'
  where reach.direction = 1 and reach.steps < cast(:reach as integer)
  union all
  select edges.src, reach.steps + 1, -1 from reach join edges on edges.dst = reach.id and edges.kind = 'sequence'
  where reach.direction = -1 and reach.steps < cast(:reach as integer)
)
select distinct concepts.id, concepts.path from reach cross join concepts on concepts.id = reach.id  -- not every note
where exists (select 1 from edges where edges.src = reach.id and edges.kind = 'sequence')
   or exists (select 1 from edges where edges.dst = reach.id and edges.kind = 'sequence')
union select concepts.id, concepts.path from valued cross join concepts on concepts.id = valued.id"""


def _missing_member(query: Query, fused: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    """Why the question is about a series member no note is, if it is, and the members that series has (the nearest
    notes the refusal lists): "What happened to Campaign Group 6 during their session 9?" — the series whose file
    names carry the question's other number ("Campaign 6 - Session 07 - …") has sessions 6 to 8. Only with two
    numbers, so that one picks the series; like a name no note mentions. Not when one of the members it names is
    there: "Group 1's sessions 6 to 9" of sessions 6 to 8 is about the series (Thellade-check6's thh29, whose answer
    is a calendar note's line for each session), the rest for the LLM to say."""
    pairs = numbered(query.question)
    if len({word for word, _ in pairs}) == 1:  # no other number to pick the series: the bundle's only one may
        return _missing_by_number_alone(query, pairs)
    if len(pairs) < 2:
        return None
    params = {"found": json.dumps([row["id"] for row in fused]), "question": query.question, "reach": SERIES_REACH}
    named_by = {row["id"]: _file_name(row["path"]) for row in query.run("members", SERIES_MEMBERS_SQL, params)}
    for word in dict.fromkeys(w for w, _ in pairs):
        asked = [n for w, n in pairs if w == word]
        others = {n for w, n in pairs if w != word}
        members = {i: number_after(name, word) for i, name in named_by.items() if carries(name, word, others)}
        if members and not set(members.values()) & set(asked):  # "sessions 6 to 9" of 6-8: about the series
            return _lacking(word, asked, members)
    return None


# The members of every series whose file names number `:word` ("session"), read from the build's `sequence` edges
SOLE_SERIES_SQL = """select json_extract(value, '$.id') as id, json_extract(value, '$.path') as path,
  json_extract(value, '$.number') as number
from json_each(okf_series_members(:word))"""


def _missing_by_number_alone(query: Query, pairs: list[list[Any]]) -> tuple[str, list[str]] | None:
    """Why a question that numbers one word only is about a member no note is: when the bundle has one series
    numbered by that word, the number picks its member as another number would pick the series ("What happened in
    session 9?" of the example's sessions 1 to 5). With several series ("session 6" on Thellade's campaigns) the
    number alone says nothing of whose, and is refused only when none of them has it ("What happened in session
    3?": its campaigns' session notes start at 5 and 6)."""
    word, asked = pairs[0][0], [number for _, number in pairs]
    rows = query.run("sole_series", SOLE_SERIES_SQL, {"word": word})
    members = {row["id"]: row["number"] for row in rows}
    if not members or set(members.values()) & set(asked):
        return None
    if len({posixpath.dirname(row["path"]) for row in rows}) == 1:
        return _lacking(word, asked, members)
    return _lacking(word, asked, members, "no series of the bundle has it; they have")


def _lacking(word: str, asked: list[int], members: dict[str, int],
             has: str = "its series has") -> tuple[str, list[str]]:
    """The refusal of numbers `asked` a series' `members` (id: number) lack, and its members nearest them first."""
    named = f"{', '.join(map(str, asked[:-1]))} and {asked[-1]}" if len(asked) > 1 else str(asked[0])
    reason = (f"the question names {word} {named}, and {has} "
              f"{word} {', '.join(map(str, sorted(set(members.values()))))} only")
    return reason, sorted(members, key=lambda i: (min(abs(members[i] - n) for n in asked), members[i], i))


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".md")


UNKNOWN_NAMES_SQL = """
-- the question's proper names that no note contains: it is about something else (docs/design.md §3.2)
select value as name from json_each(okf_names(:question))
where not exists (select 1 from concepts_fts where concepts_fts match okf_name_match(value))
"""


def _named(query: Query, titled: list[str], unknown: list[str]) -> bool:
    """Whether the question writes one of the titles it matched as a name, every word of it capitalised: that
    vouches for it despite a name no note has (a typo, another spelling). A title the question only half writes as a
    name does not: "the Reddit comments table" (the note "Comments"), "the Stack Overflow posts tables" (the note
    "Stack Overflow Posts (Deprecated)")."""
    capitalised = {word for token in query.question.split() if token[:1].isupper() for word in words(token)}
    spoken = capitalised - {name.casefold() for name in unknown}  # the first word of a sentence too: "Nessa Thorne …"
    rows = query.conn.execute("select title, aliases from concepts where id in (select value from json_each(?))",
                              [json.dumps(titled)])
    for title, aliases in rows:
        for name in (spoken_form for written in [title or "", *json.loads(aliases or "[]")]
                     for spoken_form in spoken_names(written)):
            needed = {word for word in words(name) if len(word) >= 3 and word not in STOPWORDS and not word.isdigit()}
            if needed and needed <= spoken:
                return True
    return False


KEYWORD_EVIDENCE = 3  # the best keyword matches whose coverage of the question the gate reads


def _evidence(query: Query, fused: list[dict[str, Any]]) -> tuple[list[str], list[str], list[str], float]:
    """(the notes whose title or alias the question names, the notes dated when it says, the best keyword matches,
    the best chunk's similarity), from the lists that ran, the rest looked up with the same statements."""
    if "title" in query.lists:
        titled = [row["id"] for row in fused if row.get("title_rank")]
    else:
        titled = [row["id"] for row in _rows(query.conn, TITLE_SQL, {"question": query.question})]
    if "dated" in query.lists:
        dated = [row["id"] for row in fused if row.get("dated_rank")]
    else:
        dated = [note["id"] for note in json.loads(
            query.conn.execute("select okf_dated_notes(?)", [query.question]).fetchone()[0])]
    params = {"question": query.question, "k": 1, "vector_k": query.options.vector_k,
              "candidates": query.options.candidates}
    if "fts" in query.lists:
        ranked = sorted((row for row in fused if row.get("fts_rank")), key=lambda r: r["fts_rank"])
        keyword = [row["id"] for row in ranked[:KEYWORD_EVIDENCE]]
    else:
        keyword = [row["id"] for row in _rows(query.conn, FTS_SQL, {**params, "k": KEYWORD_EVIDENCE})]
    if "vector" in query.lists:
        best = max((row.get("similarity") or 0.0 for row in fused), default=0.0)
    elif query.uses_vectors:
        try:
            sql = VECTOR_BINARY_SQL if query.binary else VECTOR_SQL
            best = max((row["similarity"] for row in _rows(query.conn, sql, params)), default=0.0)
        except Exception:  # noqa: BLE001 - the model failed: the gate goes on without vectors
            best = 0.0
    else:
        best = 0.0
    return titled, dated, keyword, best


BRIDGE_SEEDS = 2  # notes a second round may add to the first round's seeds
BRIDGE_WORDS = 60  # of the bridge chunk, after the question (the whole chunk was measured: 13th Age 0.81 -> 0.76)
_PIECE = re.compile(r"(?<=[.!?])\s+|\n")  # a chunk's sentences and lines
# The second round: the notes the question and the top seed's best chunk name by title (a millisecond, where the
# chunk's words through BM25 and KNN cost 100 ms at 10k notes) that the first round did not find, the one whose
# best chunk is nearest the question first: a chunk names several notes ("initiative", "ongoing damage",
# "escalation die"), and the question says which of them it is about.
# A name the chunk writes is its own bundle's (OKF §2: a bundle is self-contained): in one database of four catalogs,
# a Bitcoin block's "miner fee revenue" named Acme's metric "Revenue".
# A field that says when ("**Time:** 04 Dawnmarch, 212 PR"): its month names a calendar note, never what a question
# is about (Thellade's session notes open so, and "Dawnmarch" was a second-round seed for three golden questions).
_WHEN_FIELD = re.compile(r"^[\s>*_-]*(?:date|time|when|day)[*_\s]*:", re.IGNORECASE)
# `named` is materialized: without it the planner reads every note of the bundle first (the bundle's index) and
# asks okf_title_names once a note, 25 ms a question on the Thellade vault without vectors (0.3 ms so).
BRIDGE_SQL = """with named as materialized (
  select json_extract(value, '$.id') as id, json_extract(value, '$.name') as name, key + 1 as title_rank
  from json_each(okf_title_names(:bridge))
  where json_extract(value, '$.id') not in (select value from json_each(:known))
),
ranked as (
  select named.id, named.name, named.title_rank{similarity}
  from named join concepts on concepts.id = named.id and concepts.bundle = :bundle
    and not concepts.is_index and not concepts.is_stub{join}
  group by named.id
  order by {order}
)
select id, title_rank{similarity_column} from ranked
where not okf_common_name(name)  -- asked of the nearest names only, until :n are found
limit :n"""


def _bridge_sql(vectors: bool) -> str:
    """The second round's statement; without vectors the names come in the order the title list finds them."""
    if vectors:
        return BRIDGE_SQL.format(
            similarity=",\n  max(case when chunk_floats.embedding is not null"  # a note not embedded yet: no similarity
                       " then 1 - vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question))) end)"
                       " as similarity",
            join="\nleft join chunks on chunks.concept_id = named.id"
                 "\nleft join chunk_floats on chunk_floats.id = chunks.id",
            order="coalesce(similarity, 0) desc, named.title_rank", similarity_column=", similarity")
    return BRIDGE_SQL.format(similarity="", join="", order="named.title_rank", similarity_column="")


def bridge(query: Query, fused: list[dict[str, Any]], seeds: list[Seed]) -> list[Seed]:
    """2b. Multi-hop without an LLM: the question and the top seed's best chunk (the bridge: it often names the
    entity the question is really about) are read for the names they hold; the notes the first round did not
    find join its seeds, nearest the question first (docs/design.md §2.8; where they stand: _bridged_scores)."""
    said = _nearest_chunk(query, fused, seeds[0])
    if not said.strip():
        return []
    known = {s.id for s in seeds} | {row["id"] for row in fused[: len(seeds)]}
    bridge_text = query.question + "\n" + bridge_words(query.question, said)
    params = {"bridge": bridge_text[:MAX_QUESTION], "question": query.question, "known": json.dumps(sorted(known)),
              "n": BRIDGE_SEEDS, "bundle": query.concepts[seeds[0].id]["bundle"]}
    found = query.run("bridge", _bridge_sql(query.uses_vectors), params)
    query.know([row["id"] for row in found])
    return [Seed(row["id"], query.concepts[row["id"]]["path"], query.concepts[row["id"]]["title"],
                 ranks={"title": row["title_rank"]}, rrf=score, bridged_from=seeds[0].id)
            for row, score in zip(found, _bridged_scores(seeds, len(found)))]


def _nearest_chunk(query: Query, fused: list[dict[str, Any]], seed: Seed) -> str:
    """The seed's chunk nearest the question (its first without vectors), without the lines that say when."""
    top = next(row for row in fused if row["id"] in (seed.id, seed.resolved_from))
    nearest = sorted(json.loads(top.get("chunk_distances") or "[]"), key=lambda pair: pair[1])
    row = query.conn.execute(
        "select text from chunks where id = ?" if nearest else
        "select text from chunks where concept_id = ? order by seq limit 1", [nearest[0][0] if nearest else top["id"]]
    ).fetchone()
    return "\n".join(line for line in (row[0] if row else "").split("\n") if not _WHEN_FIELD.match(line))


# A note a first seed's nearest chunk names by title and no link reaches is walked to as a link's would be (a mention
# is a link its author did not write: 13th Age's stat blocks say "while the skin devil is staggered", never
# [[Staggered]]), when its best chunk is at least MENTION_FLOOR similar to the question: one a seed, after that
# seed's linked neighbours. The second round reads the top seed's chunk's opening and closest line for seeds; this
# reads all of each chunk, for the one name nearest the question (docs/design.md §5.12). Hybrid reads its first three
# seeds' chunks (the second found 13th-Age-check4's and -check5's Escalation Die, the third two hotpotqa-mini notes
# and 13th-Age-check7's Prince of Shadows and Stuck; nothing lost); graph-walk, whose seeds are the vector list's
# alone, its first (its second lost three notes at the budget's edge for nine found).
MENTION_FLOOR = 0.2
MENTION_SEEDS = {"hybrid": 3, "graph-walk": 1}


# One statement for every seed read: the names each chunk holds (in its own bundle, no index or template), each
# named note's best chunk's similarity to the question once however many chunks name it, and each chunk's nearest
# names above the floor; the common-word check (a count in FTS5 the first time a name is seen) is asked of those only.
MENTIONED_SQL = """with read as (
  select key as place, json_extract(value, '$[0]') as seed, json_extract(value, '$[1]') as text,
    json_extract(value, '$[2]') as bundle
  from json_each(:chunks)
),
names as materialized (  -- the function once a chunk, before any join (else once a note of the bundle)
  select read.place, read.seed, read.bundle, json_extract(name.value, '$.id') as id,
    json_extract(name.value, '$.name') as name
  from read join json_each(okf_title_names(read.text)) as name
),
named as materialized (
  select distinct names.place, names.seed, names.id, names.name
  from names cross join concepts on concepts.id = names.id and concepts.bundle = names.bundle
    and not concepts.is_index and not concepts.is_stub
  where names.id not in (select value from json_each(:known))
),
near as materialized (
  select chunks.concept_id as id,
    max(1 - vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question)))) as similarity
  from chunks join chunk_floats on chunk_floats.id = chunks.id  -- a note without vectors yet has none
  where chunks.concept_id in (select id from named)
  group by chunks.concept_id
  having similarity >= cast(:floor as real)  -- cast: Datasette's SQL editor passes every parameter as text
),
ranked as (
  select named.place, named.seed, named.id, near.similarity,
    row_number() over (partition by named.place order by near.similarity desc, named.id) as nth
  from named join near on near.id = named.id
  where not okf_common_name(named.name)
)
select place, seed, id, similarity from ranked where nth <= cast(:places as integer) order by place, nth"""


def mentioned(query: Query, seeds: list[Seed], fused: list[dict[str, Any]], walked: list[Arrival]) -> list[Arrival]:
    """3a. The walk's arrivals by mention: for each of the first seeds, the note its nearest chunk names that nothing
    found yet, nearest the question, one statement for all of them. A note several of those chunks name goes to the
    seed where it stands highest (its strength halved for each note walked from it already): 13th-Age-check7's
    tai29, Escalation Die, named by the void dragon after its two links and by the huge black dragon with none."""
    read = [s for s in seeds if not s.bridged_from][: MENTION_SEEDS.get(query.options.mode, 1)]
    chunks = [[s.id, _nearest_chunk(query, fused, s)[:MAX_QUESTION], query.concepts[s.id]["bundle"]] for s in read]
    known = {s.id for s in seeds} | {w.id for w in walked}
    rows = query.run("mentioned", MENTIONED_SQL, {"chunks": json.dumps(chunks), "question": query.question,
                                                  "known": json.dumps(sorted(known)), "floor": MENTION_FLOOR,
                                                  "places": len(read)})
    strength = _walk_strengths(seeds)
    nth = {s.id: sum(1 for w in walked if w.seed == s.id) + 1 for s in read}
    taken: dict[str, dict[str, Any]] = {}
    for place in range(len(read)):
        row = next((r for r in rows if r["place"] == place and r["id"] not in taken), None)
        if row is not None:  # named by several seeds' chunks: it goes to the seed where it stands highest
            taken[row["id"]] = max((r for r in rows if r["id"] == row["id"]),
                                   key=lambda r: (_walked_score(strength[r["seed"]], nth[r["seed"]]), -r["place"]))
    query.know(list(taken))
    return [Arrival(row["id"], hop=1, via=row["seed"], predicate="mentions", kind="mention", anchor=None, score=0.0,
                    degree=0, reached_from=[row["seed"]], seed=row["seed"], similarity=row["similarity"],
                    nth=nth[row["seed"]])
            for row in taken.values()]


def bridge_words(question: str, chunk: str) -> str:
    """What of the bridge chunk is read for names: its first BRIDGE_WORDS words (what a note opens with names what
    it is about), and its sentence or line that shares most words with the question, wherever it stands: it names
    what the question asks next ("When the escalation die reaches 6, the chaos glorp rolls a normal save", 83 words
    into a stat block whose opening is its layout, size and level)."""
    opening = " ".join(chunk.split()[:BRIDGE_WORDS])
    closest = max(_PIECE.split(chunk), key=lambda piece: coverage(question, piece))  # the first, on a tie
    if not coverage(question, closest):
        return opening
    closest = " ".join(closest.split()[:BRIDGE_WORDS])
    return opening if closest in opening else f"{opening} {closest}"


def _walk_strengths(seeds: list[Seed]) -> dict[str, float]:
    """How much each seed's neighbours are worth to the walk and the budget: its score, but for a second-round note
    the place below every first-round seed whatever its own place (_bridged_scores), halved once more (WALK_SHARE):
    it is a strong lead itself, its neighbours are two steps from the question, the chunk that named it and a link
    (lifting them cost the example's linked-note tier 0.95 -> 0.90; unhalved, 13th Age's Hit Points, named by the
    Full Heal-ups chunk, put Death and Dying before Flee, the link of Full Heal-ups that ta25 needed)."""
    first = [s for s in seeds if not s.bridged_from]
    bridged = [s for s in seeds if s.bridged_from]
    return {**{s.id: s.rrf for s in first},
            **{s.id: score * WALK_SHARE for s, score in zip(bridged, _below_first_round(first, len(bridged)))}}


def _bridged_scores(seeds: list[Seed], count: int) -> list[float]:
    """Where the second round's notes stand. When the question names its top seed by title, right after it and the
    other notes it names: the question is about their neighbour ("where was the director of A born?" — A's chunk
    names the director), and a note it names itself is a surer lead than one a chunk names ("Which icons have a
    positive relationship with the Dwarf King?": the Icons note's list of icons came before the Dwarf King's note).
    Otherwise below every first-round seed: a bridge from a note found only by its words is a weaker lead."""
    named = next((i for i, seed in enumerate(seeds) if not seed.ranks.get("title")), len(seeds))
    if named and named < len(seeds):
        high, low = seeds[named - 1].rrf, seeds[named].rrf
        return [round(low + (high - low) * 0.5 ** (i + 1), 6) for i in range(count)]
    return _below_first_round(seeds, count)


def _below_first_round(first: list[Seed], count: int) -> list[float]:
    """`count` places just below the weakest of these seeds, each below the one before."""
    floor = min((s.rrf for s in first), default=0.0)
    return [round(floor * 0.9 ** (i + 1), 6) for i in range(count)]


# What an unfilled template says (its name, aliases, each frontmatter field as "key value", a link as its target's
# title, a link to it as "predicate source"), and whether a note found with text of its own mentions it (§2.6)
TEMPLATE_SQL = """select concepts.title || ' ' || coalesce(concepts.aliases, '') || ' ' || coalesce((
    select group_concat(replace(field.key, '_', ' ') || ' ' || field.value, ' ') from json_each(concepts.frontmatter)
    as field where field.type in ('text', 'integer', 'real', 'array')), '') || ' ' || coalesce((
    select group_concat(target.title, ' ') from edges join concepts as target on target.id = edges.dst
    where edges.src = concepts.id and edges.kind = 'property'), '') || ' ' || coalesce((
    select group_concat(replace(edges.predicate, '_', ' ') || ' ' || source.title, ' ') from edges
    join concepts as source on source.id = edges.src
    where edges.dst = concepts.id and edges.kind = 'property' and edges.src != concepts.id), ''),
  exists (select 1 from concepts_fts join concepts as found on found.rowid = concepts_fts.rowid
          where concepts_fts match :phrase and found.id in (select value from json_each(:texts)))
from concepts where concepts.id = :id"""


def pick_seeds(query: Query, fused: list[dict[str, Any]], count: int | None = None) -> list[Seed]:
    """The fused notes in order, each superseded one resolved to the end of its chain (unless the question
    asks about the past), each once, as many notes with text of their own as the mode keeps (or `count`), and among
    them the unfilled templates the question is about (_about; docs/design.md §2.6); a template it names in passing
    comes below them: what its links say is what the vault knows of it ("Hans Dane has a friend in Mangagoy…"). Not
    a hub (a region hundreds of notes link to): the walk never returns one either, and its links cost 27 ms."""
    count = query.rules.seed_count(query.options) if count is None else count
    picked: list[Seed] = []
    texts: list[str] = []  # the picked notes with text of their own: the ones counted
    for row in fused:
        target, chain = (row["id"], []) if query.historical else _end_of_chain(query, row["id"])
        if any(seed.id == target for seed in picked):
            continue
        query.know([target])
        concept = query.concepts[target]
        picked.append(Seed(target, concept["path"], concept["title"],
                           ranks={name: row.get(f"{name}_rank") for name in query.lists},
                           rrf=round(row["rrf"], 6), resolved_from=chain[0] if chain else None,
                           leads=bool(row.get("promoted"))))
        if not concept["is_stub"]:
            texts.append(target)
        if len(texts) >= count:
            break
    kept = [s for s in picked if s.id in texts or _about(query, s, texts)]
    kept_ids = {s.id for s in kept}
    passing = [s for s in picked if s.id not in kept_ids and s.ranks.get("title")
               and (query.concepts[s.id]["degree"] or 0) < WalkOptions.hub_degree]
    return kept + [replace(s, rrf=score, in_passing=True)
                   for s, score in zip(passing, _below_first_round(kept, len(passing)))]


def _about(query: Query, template: Seed, texts: list[str]) -> bool:
    """Whether the question is about an unfilled template it names: no note found with text of its own mentions
    it ("Which organization does Bragan Holt work for?": his frontmatter links are all the vault says of him), or
    what it says (TEMPLATE_SQL: name, aliases, values, links either way) holds most of the question's words. A city
    every seed already talks about is not."""
    params = {"id": template.id, "phrase": '"' + template.title.replace('"', '""') + '"', "texts": json.dumps(texts)}
    text, mentioned = query.conn.execute(TEMPLATE_SQL, params).fetchone()
    return not mentioned or coverage(query.question, text or "") > query.options.coverage_threshold


def walk(query: Query, seeds: list[Seed], fused: list[dict[str, Any]], stage: str = "walk", cap: int | None = None,
         offered: Iterable[str] = ()) -> list[Arrival]:
    """3. The intent-weighted, damped, capped walk from the seeds: graph_expand in one statement. `stage` names it
    in the response; `cap` overrides the options' and the seeds' count; `offered` notes are not walked to again."""
    options = query.options
    if cap is None:
        cap = options.cap if options.cap is not None else len(seeds) + WALK_EXTRA
    # a fused note the vector list did not rank still ties before notes no list found
    tie_ranks = {row["id"]: row.get("vector_rank") or 10**6 for row in fused}
    walk_options = {
        "cap": WALK_POOL,
        "intent": query.intent,
        "superseded_multiplier": 1.0 if query.historical else WalkOptions.superseded_multiplier,
        "predicate_weights": options.predicate_weights,
        "tie_ranks": tie_ranks,
    }
    params = {"seeds": json.dumps([s.id for s in seeds]), "hops": query.rules.walk_hops(options),
              "walk_options": json.dumps(walk_options), "rest": _rest_of(query.question, seeds, query),
              "question": query.question,
              **{f"{name}_weight": weight for name, weight in WALK_WEIGHTS.items()},
              "seed_strengths": json.dumps(_walk_strengths(seeds)), "floor": WALK_FLOOR, "cap": cap,
              "toc_links": TOC_LINKS, "toc_share": TOC_SHARE,
              "offered": json.dumps(list(offered))}
    rows = query.run(stage, _walk_sql(query.uses_vectors), params)
    walked = [Arrival(**{**json.loads(row["arrival"]), "seed": row["seed"]}, similarity=row["similarity"],
                      nth=row["nth"]) for row in rows]
    query.know([w.id for w in walked])
    return walked


def _rest_of(question: str, seeds: list[Seed], query: Query) -> str:
    """The question without the names of the seeds it named: what the walk still has to find."""
    names = [query.concepts[s.id]["title"] for s in seeds if s.ranks.get("title")]
    rest = question
    for name in sorted(names, key=len, reverse=True):  # as titles are matched: word for word, whatever between
        name_words = words(name)
        if name_words:
            pattern = r"\W+".join(re.escape(word) for word in name_words)
            rest = re.sub(rf"(?<!\w){pattern}(?!\w)", " ", rest, flags=re.IGNORECASE)
    return rest if rest.strip() else question


def offer(query: Query, seeds: list[Seed], walked: list[Arrival]) -> list[Node]:
    """Seeds with their fused score, and what the walk added with its seed's score halved for each better note
    walked from that seed (WALK_SHARE): the strongest seed's best neighbour comes before a weak seed."""
    nodes = [Node(query.concepts[s.id], s.rrf, {"kind": "seed", "ranks": s.ranks, "resolved_from": s.resolved_from,
                                                 **({"bridged_from": s.bridged_from} if s.bridged_from else {}),
                                                 **{flag: True for flag in SEED_FLAGS if getattr(s, flag)}})
             for s in seeds]
    return _marked_stale(query, nodes) + _walked_nodes(query, seeds, walked)


def _walked_score(seed_strength: float, nth: int) -> float:
    """A walked note's score: its seed's strength, halved for each better note walked from that seed."""
    return seed_strength * WALK_SHARE ** nth


def _walked_nodes(query: Query, seeds: list[Seed], walked: list[Arrival]) -> list[Node]:
    """What the walk from `seeds` added, each at its seed's strength halved for each better note walked from it."""
    strength = _walk_strengths(seeds)
    return _marked_stale(query, [
        Node(query.concepts[w.id], round(_walked_score(strength[w.seed], w.nth), 6),
             {"kind": "hop", "hop": w.hop, "from": w.via, "predicate": w.predicate, "edge_kind": w.kind,
              "seed": w.seed, "similarity": None if w.similarity is None else round(w.similarity, 4)},
             anchor=w.anchor)
        for w in walked])


# A note among the vector list's first LINKED_GUESS_RANK that no other list ranks well has one vote in the fusion, and
# falls below notes two lists found halfway down: a question that describes a rule in other words than its note ("the
# weak, disposable kind that come in crowds": 13th Age's Mooks, the vector list's 3rd, fused 7th) never had it
# offered. A link between it and a note already offered is a second, independent vote: it comes just below the
# weakest seed (docs/design.md §5.11). Every development set: Mooks and 13th-Age-check's Other Damage Types found,
# no required note lost; the vector list's first 3 or 5 found the same, 6 one more, 7 lost ta25's Flee.
LINKED_GUESS_RANK = 4
LINKED_GUESS_SQL = """select id, linked_with from (
  select guess.key as place, guess.value as id, (
      select offered.value from json_each(:offered) as offered
      where exists (select 1 from edges where edges.src = guess.value and edges.dst = offered.value)
         or exists (select 1 from edges where edges.dst = guess.value and edges.src = offered.value)
      order by offered.key limit 1) as linked_with
  from json_each(:guesses) as guess
)
where linked_with is not null
order by place"""


def linked_guesses(query: Query, fused: list[dict[str, Any]], seeds: list[Seed], nodes: list[Node]) -> list[Node]:
    """3b. The vector list's first notes that nothing offered yet, each linked with a note that is: just below the
    weakest seed, in the vector list's order. A superseded note stands for the end of its chain, as a seed does,
    unless the question asks about the past."""
    offered = {n.id for n in nodes}
    guesses: dict[str, tuple[dict[str, Any], str | None]] = {}  # id -> (its row in the lists, resolved from)
    for row in fused:
        if (row.get("vector_rank") or LINKED_GUESS_RANK + 1) <= LINKED_GUESS_RANK:
            target, chain = (row["id"], []) if query.historical else _end_of_chain(query, row["id"])
            if target not in offered and target not in guesses:
                guesses[target] = (row, chain[0] if chain else None)
    if not guesses:
        return []
    rows = query.run("linked", LINKED_GUESS_SQL, {"guesses": json.dumps(list(guesses)),
                                                 "offered": json.dumps([n.id for n in nodes])})
    query.know([row["id"] for row in rows])
    return _marked_stale(query, [
        Node(query.concepts[row["id"]], score, {
            "kind": "linked", "ranks": {name: guesses[row["id"]][0].get(f"{name}_rank") for name in query.lists},
            "linked_with": row["linked_with"], "resolved_from": guesses[row["id"]][1]})
        for row, score in zip(rows, _below_first_round(seeds, len(rows)))])


def walk_from_guesses(query: Query, fused: list[dict[str, Any]], guesses: list[Node], nodes: list[Node]) -> list[Node]:
    """3c. The linked guesses walked as seeds are: as many slots as guesses, going round them by strength, each a
    neighbour not offered yet, placed as a walked note is (its guess's score halved, WALK_SHARE). A guess stands where
    a seed would; its rule's note is often the one it links to (13th Age's Fumbles, to Shooting into Melee)."""
    as_seeds = [Seed(g.id, g.concept["path"], g.concept["title"], g.why["ranks"], g.score) for g in guesses]
    walked = walk(query, as_seeds, fused, stage="linked_walk", cap=len(as_seeds), offered=[n.id for n in nodes])
    return _walked_nodes(query, as_seeds, walked)


# When the walk has fewer notes to add than it has slots (a bundle with few links: hotpotqa-mini's paragraphs have
# none, and its contexts held 5.4 notes of a budget they did not fill), the fused lists' next notes take the slots
# left, below every note offered, until the context offers FILL_TO notes (docs/design.md §5.10). Up to 10 took
# hotpotqa-mini with mentions to a mean of 10.2 notes a context.
FILL_TO = 9


def next_in_lists(query: Query, fused: list[dict[str, Any]], seeds: list[Seed], nodes: list[Node]) -> list[Node]:
    """3b. The walk's unused slots, filled with the fused lists' next notes in their order."""
    walked = sum(1 for n in nodes if not n.is_seed)
    room = min(len(seeds) + WALK_EXTRA - walked, FILL_TO - len(nodes))
    if room <= 0:
        return []
    offered = {n.id for n in nodes}
    more = pick_seeds(query, fused, count=query.rules.seed_count(query.options) + room)
    extra = [s for s in more if s.id not in offered][:room]
    floor = min(n.score for n in nodes)
    return _marked_stale(query, [
        Node(query.concepts[s.id], round(floor * 0.9 ** (i + 1), 6),
             {"kind": "next", "ranks": s.ranks, "resolved_from": s.resolved_from})
        for i, s in enumerate(extra)])


def _marked_stale(query: Query, nodes: list[Node]) -> list[Node]:
    """Each node flagged when its `stale_after` has passed (at `today`, default now)."""
    for node in nodes:
        node.stale = _is_stale(query, node.concept)
    return nodes


def _is_stale(query: Query, concept: dict[str, Any]) -> bool:
    stale_after = concept.get("stale_after")
    return bool(stale_after) and (query.options.today or datetime.now(UTC).isoformat()) >= stale_after


_SERIES_SQL = """with recursive members(id) as (select value from json_each(:nodes)),
forward(start, id, steps, path) as (
  select members.id, edges.dst, 1, json_array(edges.dst)
  from members join edges on edges.src = members.id and edges.kind = 'sequence'
  union all
  select forward.start, edges.dst, forward.steps + 1, json_insert(forward.path, '$[#]', edges.dst)
  from forward join edges on edges.src = forward.id and edges.kind = 'sequence'
  where forward.steps < cast(:max_gap as integer) and forward.id not in (select id from members)
),
gaps as (
  select distinct path.value as id, forward.start as after, forward.id as before
  from forward join json_each(forward.path) as path
  where forward.id in (select id from members) and path.value not in (select id from members)
),
ends as (
  select edges.src as id, null as after, edges.dst as before from edges
  where edges.kind = 'sequence' and edges.dst in (select id from members)
    and edges.src not in (select id from members) and edges.src not in (select id from gaps)
  union
  select edges.dst, edges.src, null from edges
  where edges.kind = 'sequence' and edges.src in (select id from members)
    and edges.dst not in (select id from members) and edges.dst not in (select id from gaps)
),
linked as (  -- members already found next to each other: for a question about a stretch, each follows the other
  select src, dst from edges
  where kind = 'sequence' and src in (select id from members) and dst in (select id from members)
),
adjacent as (
  select dst as id, src as after, null as before from linked
  union
  select src, null, dst from linked
){named_ctes}
select id, after, before, 'gap' as role, null as pair from gaps
union all
select id, after, before, 'end', null from ends where :ends
union all
select id, after, before, 'adjacent', null from adjacent where :ends
{named_rows}order by role desc, id"""
_NAMED_CTES = """,
pairs as (  -- the [word, number] pairs the question names (titles.numbered): "session 9", and the question's
  -- numbers after its other words: "Group 1's session 8" is group 1's
  select value as pair, json_extract(value, '$[0]') as word, json_extract(value, '$[1]') as number,
    json_extract(:others, '$."' || json_extract(value, '$[0]') || '"') as others
  from json_each(:named)
),
found_numbers as materialized (  -- the numbers the notes found carry after each of those words
  select members.id, words.word, okf_number_after(concepts.title, words.word) as in_title,
    okf_number_after(concepts.path, words.word) as in_path,
    words.others is null or okf_carries(concepts.path, words.word, words.others) as theirs
  from members join concepts on concepts.id = members.id join (select distinct word, others from pairs) as words
),
unmet as (  -- the pairs no note found answers: another group's session 8 does not
  select pairs.* from pairs
  where not exists (select 1 from found_numbers
                    where found_numbers.word = pairs.word and pairs.number in (in_title, in_path) and theirs)
),
reach(start, id, steps, direction) as (  -- each found note's series, SERIES_REACH notes either way, when named
  select id, id, 0, 1 from members where exists (select 1 from unmet)
  union all
  select id, id, 0, -1 from members where exists (select 1 from unmet)
  union all
  select reach.start, edges.dst, reach.steps + 1, 1 from reach
  join edges on edges.src = reach.id and edges.kind = 'sequence'
  where reach.direction = 1 and reach.steps < cast(:reach as integer)
  union all
  select reach.start, edges.src, reach.steps + 1, -1 from reach
  join edges on edges.dst = reach.id and edges.kind = 'sequence'
  where reach.direction = -1 and reach.steps < cast(:reach as integer)
),
reached_numbers as materialized (  -- "Campaign 3 - Session 09 - ..." carries 9 after "session", whatever its zeros
  select concepts.id, words.word, okf_number_after(concepts.title, words.word) as in_title,
    okf_number_after(concepts.path, words.word) as in_path
  from (select distinct id from reach where id not in (select id from members)) as reached
  join concepts on concepts.id = reached.id
  join (select distinct word from unmet) as words on instr(lower(concepts.title || ' ' || concepts.path), words.word)
),
named as (
  select distinct reach.id, reach.start as after, unmet.pair
  from reach join reached_numbers on reached_numbers.id = reach.id
  join unmet on unmet.word = reached_numbers.word and unmet.number in (in_title, in_path)
),
found as (  -- a found note the question names with both its numbers ("Group 6's session 8": Campaign 6 - Session 08)
  select distinct found_numbers.id, pairs.pair from found_numbers join pairs on pairs.word = found_numbers.word
  where pairs.others is not null and pairs.number in (in_title, in_path) and theirs
),
answered as (  -- a found note the question names ("session 7", come over a `next` edge), next to a found member
  select distinct adjacent.id, coalesce(adjacent.after, adjacent.before) as after, pairs.pair
  from adjacent join concepts on concepts.id = adjacent.id
  join pairs on pairs.number in (okf_number_after(concepts.title, pairs.word), okf_number_after(concepts.path, pairs.word))
)"""
_NAMED_ROWS = """union all
select id, after, null, 'named', pair from named
union all
select id, after, null, 'answered', pair from answered
union all
select id, null, null, 'found', pair from found
"""
# The whole statement; a question that names no member by number runs it without the named part (0.2 ms less).
SERIES_SQL = _SERIES_SQL.format(named_ctes=_NAMED_CTES, named_rows=_NAMED_ROWS)
SERIES_UNNAMED_SQL = _SERIES_SQL.format(named_ctes="", named_rows="")
SERIES_GAP = 3  # at most this many notes filled in between two members of one series
SERIES_REACH = 20  # notes either way of a found one where a member the question names by number is looked for
# A question about how a stretch went (_UNFOLDING_QUESTION): a series' note next to a found one comes right after it
# (its score nearly the found one's), not with the walked notes at half of it: "sessions 6 to 8" needs 7 and 8.
SERIES_SHARE = 0.99
SERIES_MOST = 1000  # steps along a series to its end: a bound, never reached by a real one
FOUND_IN = {"next": "next in the lists: ", "linked": "linked guess: "}  # how a why line opens; a seed's: "seed: "
# A seed's flags (Seed fields, set in its why only when true) and what its why line adds for each
SEED_FLAGS = {"leads": ", its list's clear first", "in_passing": ", a template named in passing, below the notes found"}


def found_in(why: dict[str, Any]) -> str:
    """The lists that found a seed, the lists' next note or a linked guess: "seed: title+fts", "next in the lists:
    vector", "linked guess: vector"."""
    return FOUND_IN.get(why["kind"], "seed: ") + "+".join(
        name for name, rank in why["ranks"].items() if rank) + "".join(
        said for flag, said in SEED_FLAGS.items() if why.get(flag))


# A series member the question asks for, and how the why line says so (web.why_parts too)
ASKED_ROLES = {"named": "named by the question", "last": "the last, as the question asks",
               "first": "the first, as the question asks"}
# "What happened in the last session of Campaign 6?": from a member found, along `sequence` edges to that end
SERIES_END_SQL = """with recursive chain(id, steps) as (
  select :start, 0
  union
  select edges.dst, chain.steps + 1 from chain join edges on edges.src = chain.id and edges.kind = 'sequence'
  where :towards = 'last' and chain.steps < cast(:most as integer)
  union
  select edges.src, chain.steps + 1 from chain join edges on edges.dst = chain.id and edges.kind = 'sequence'
  where :towards = 'first' and chain.steps < cast(:most as integer)
)
select id from chain order by steps desc limit 1"""
# A question about how things went, in what order: then the notes just before and after a series' stretch come too.
_SEQUENCE_QUESTION = re.compile(
    r"\b(how did|how has|how have|unfold\w*|play(ed)? out|develop\w*|progress\w*|evolv\w*|across|over sessions|"
    r"from .{1,60}? to|next|afterwards?|then|later|earlier|before|timeline|chronolog\w*|in what order|sequence)\b",
    re.IGNORECASE)
# A question about a stretch of the series itself, not only one moment before or after something.
_UNFOLDING_QUESTION = re.compile(
    r"\b(unfold\w*|play(ed)? out|across|over (the )?sessions|from .{1,60}? to|in what order|timeline|chronolog\w*)\b",
    re.IGNORECASE)


def series(query: Query, nodes: list[Node]) -> list[Node]:
    """3b. Time-aware series: the notes between two members of a series (session 6 and 9 found: 7 and 8 too), and,
    when the question asks how things unfolded, the notes just before and after; and the members the question
    names by number ("session 9"), right after the found member of their series. One recursive statement over
    the build's `sequence` edges."""
    ordered = bool(_UNFOLDING_QUESTION.search(query.question))
    pairs = numbered(query.question)
    params = {"nodes": json.dumps([n.id for n in nodes]), "max_gap": SERIES_GAP + 1,
              "ends": int(bool(_SEQUENCE_QUESTION.search(query.question))),
              "named": json.dumps(pairs), "others": json.dumps(_other_numbers(query.question)),
              "reach": SERIES_REACH}
    rows = query.run("series", SERIES_SQL if pairs else SERIES_UNNAMED_SQL, params)
    query.know([row["id"] for row in rows])
    adjacent = [(row["after"] or row["before"], row["id"]) for row in rows if row["role"] == "adjacent"]
    if ordered:  # sessions found next to each other, however they came, follow each other: 6, then 7, then 8
        _in_order(nodes, adjacent)  # first: an end follows the member it continues where that member now stands
    elif params["ends"]:  # "what happened next": a neighbour the walk brought stands at least where an end would
        _at_least(nodes, adjacent, WALK_SHARE)
    score = {n.id: n.score for n in nodes}
    best = _best_per_pair([row for row in rows if row["role"] == "named"], score, query)
    added: dict[str, Node] = {}
    for row in rows:
        if row["role"] in ("adjacent", "answered", "found") or row["role"] == "named" and row is not best[row["pair"]]:
            continue
        if row["role"] == "end" and of_another(query.concepts[row["id"]]["path"],
                                               query.concepts[row["after"] or row["before"]]["path"], pairs):
            continue  # "How did Group 4 get from … to …": not the ends of Campaign 2's sessions a walk brought
        if row["role"] == "named":  # the question names it ("Group 3's session 9"): right after the best note found
            wanted = round(max(score.values()) * SERIES_SHARE, 6)
        else:
            wanted = _stretch_score(row, score, ordered, bool(params["ends"]))
        _add_series(query, added, row, wanted)
    end = _asked_end(query, nodes)
    if end is not None:  # right after the strongest note found, as a member named by number is
        end_id, towards, start = end
        wanted = round(max(score.values()) * SERIES_SHARE, 6)
        if end_id in score:
            node = next(n for n in nodes if n.id == end_id)
            node.score = max(node.score, wanted)
        else:
            added[end_id] = Node(query.concepts[end_id], wanted,
                                 {"kind": "series", "role": towards, "after": start, "before": None})
    _around_asked(query, nodes, added, bool(params["ends"]))
    # "Group 2's session 7": the walk brought session 7 from session 6, a seed, at half its score; it follows it
    answered = _best_per_pair([row for row in rows if row["role"] == "answered"], score, query)
    _in_order(nodes, [(row["after"], row["id"]) for row in answered.values()])
    _lift_named(nodes, [row for row in rows if row["role"] == "found"])
    for node in named_by_number(query, nodes):
        if node.id not in added or added[node.id].score < node.score:
            added[node.id] = node
    return _marked_stale(query, list(added.values()))


def _stretch_score(row: dict[str, Any], score: dict[str, float], ordered: bool, ends: bool) -> float:
    """Where a gap or an end of a series stretch stands: right after the member before it (a gap between session 3,
    a seed, and session 5, walked: 4 follows 3, not 5). One moment: the lower of its two neighbours, halved; but when
    the question asks what came next or before, the higher, as an end next to it would stand (a mention of session 5
    by a weaker seed made session 4 a gap, and it fell behind the walked notes)."""
    share = SERIES_SHARE if ordered else WALK_SHARE
    around = [score[i] for i in (row["after"], row["before"]) if i in score]
    nearest = max(around) if ends else min(around)
    return round((score[row["after"]] if ordered and row["after"] in score else nearest) * share, 6)


def _add_series(query: Query, added: dict[str, Node], row: dict[str, Any], wanted: float) -> None:
    """A series row's note, at `wanted`, unless it is added already as high."""
    if row["id"] not in added or added[row["id"]].score < wanted:
        added[row["id"]] = Node(query.concepts[row["id"]], wanted,
                                {"kind": "series", "role": row["role"], "after": row["after"], "before": row["before"]})


def _around_asked(query: Query, nodes: list[Node], added: dict[str, Node], ends: bool) -> None:
    """The stretch around a member the question asks for (by number, or as the last or first), which the series
    statement could not see among the notes found: "Group 3's tenth session opens on … Which bonuses the party picked
    up in the two sessions before…" found session 8 and asked for 10; 9, between them, came only as a walk's
    neighbour, behind the budget (Thellade-check5's thg34): it rises. Another run of the statement, with the asked
    members among the notes found."""
    asked = [i for i, node in added.items() if node.why["role"] in ("named", "last", "first")]
    if not asked:
        return
    found = [n.id for n in nodes if n.why["kind"] != "hop"]  # a walked note between them is the gap, to rise
    rows = query.run("series_asked", SERIES_UNNAMED_SQL, {
        "nodes": json.dumps(found + asked), "max_gap": SERIES_GAP + 1, "ends": int(ends)})
    query.know([row["id"] for row in rows])
    score = {n.id: n.score for n in nodes} | {i: added[i].score for i in asked}
    offered = {n.id: n for n in nodes}
    for row in rows:
        if row["role"] not in ("gap", "end") or not {row["after"], row["before"]} & set(asked) or row["id"] in asked:
            continue
        wanted = _stretch_score(row, score, True, ends)  # the stretch the question spans, as "from … to …" does
        if row["id"] in offered:  # walked from session 8 at half its score: it rises to where the stretch puts it
            offered[row["id"]].score = max(offered[row["id"]].score, wanted)
        else:
            _add_series(query, added, row, wanted)


# A member the question names with whose it is ("Group 1's session 8": titles.qualified), wherever it is in the
# bundle: its file name carries both numbers ("Campaign 1 - Session 08 - …"). The series statement looks for a named
# member only near the notes found; "Group 6's session 8 and Group 1's session 8" found Campaign 6's and no note of
# Campaign 1.
NUMBERED_SQL = """with words as (select distinct json_extract(value, '$[0]') as word from json_each(:names)),
candidates as materialized (  -- a note's id holds its file name: the primary key's index is read, not the notes
  select concepts.id, words.word from words cross join concepts where concepts.id like '%' || words.word || '%'
)
select concepts.id, name.value as name
from candidates join json_each(:names) as name on json_extract(name.value, '$[0]') = candidates.word
cross join concepts on concepts.id = candidates.id
where concepts.bundle = :bundle and not concepts.is_index and not concepts.is_stub
  and okf_number_after(concepts.path, candidates.word) = json_extract(name.value, '$[1]')
  and okf_carries(concepts.path, candidates.word, json_array(json_extract(name.value, '$[2]')))
order by name.key, concepts.id"""
NUMBERED_MOST = 2  # notes one name brings: a name that fits more says little about which


def named_by_number(query: Query, nodes: list[Node]) -> list[Node]:
    """3b. The notes the question names by number and whose they are, anywhere in the top note's bundle: one already
    offered rises to just below the strongest note, as a member named from its series does; one not offered comes
    there (a name the question writes is a surer lead than the lists' guesses)."""
    names = qualified(query.question)
    if not names:
        return []
    top = max(nodes, key=lambda n: n.score)
    rows = query.run("numbered", NUMBERED_SQL, {"names": json.dumps(names), "bundle": top.concept["bundle"]})
    by_name: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_name[row["name"]].append(row["id"])
    named = {name: found for name, found in by_name.items() if len(found) <= NUMBERED_MOST}
    query.know([concept_id for found in named.values() for concept_id in found])
    wanted = round(top.score * SERIES_SHARE, 6)
    offered = {n.id: n for n in nodes}
    added: dict[str, Node] = {}
    for name, found in named.items():
        word, number, whose = json.loads(name)
        for concept_id in found:
            if concept_id in offered:
                offered[concept_id].score = max(offered[concept_id].score, wanted)
            elif concept_id not in added:
                added[concept_id] = Node(query.concepts[concept_id], wanted,
                                         {"kind": "numbered", "name": f"{word} {number} (with {whose} in its name)"})
    return list(added.values())


# A question that asks who or which of many names the categories its answer is (categories.py): the notes holding one
# of each named category's tags (or a tag nested below it: `13A/Bestiary` holds `13A/Bestiary/Humanoid`, as Obsidian
# nests them) or lying under one of its folders. "Who are the player characters in Group 6?" is Thellade's six notes
# tagged Character, Player and Group6; "Who are Orcus' lieutenants?" the six in `02c Orcus' Lieutenants`; no title,
# chunk or link of the notes found names them (docs/design.md §5.13). A set is asked for by a list question, or by
# "which" of a category written in the plural ("Which red dragons…"). The category asked which of
# (else the one of fewest notes) is read, its folders by id range and its tags through FTS5's tags column; of its
# notes, those holding the most of the named categories are the set, since a question names the set's own categories
# and others it is about ("What eras make up Thellade's calendar history?": the eras are in the calendar, not in
# Thellade's folders). A set of more than CATEGORY_MOST notes says little about which: none is added.
CATEGORY_SQL = """with named as materialized (
  select key, value as category, json_extract(value, '$.asked') as asked
  from json_each(okf_categories_named(:question))
),
driving as materialized (  -- when a set is asked for: the category asked which of, else the one of fewest notes
  select category from named
  where (:list_question or exists (select 1 from named where asked))
    -- but no lone category of more notes than a listing names: its every note would be in the set; unless the
    -- question asks for a kind its notes may narrow it to (people, for "Who is in Group 3?"), and it is small
    and not ((select count(*) from named) = 1 and json_extract(category, '$.least') > cast(:list_most as integer)
             and (:kinds = '[]' or json_extract(category, '$.least') > cast(:kinds_most as integer)))
  order by asked desc, json_extract(category, '$.notes') limit 1
),
candidates as (  -- its notes: under its folders (an id range), holding its tags (FTS5's tags column) or values
  select concepts.id from driving, json_each(driving.category, '$.folders') as folder
  join concepts on concepts.id > folder.value || '/' and concepts.id < folder.value || '0'
  union
  select value from driving, json_each(driving.category, '$.ids')
  union
  select concepts.id from concepts_fts join concepts on concepts.rowid = concepts_fts.rowid
  where concepts_fts match coalesce((select 'tags : (' || (
      select group_concat('"' || replace(tag.value, '"', '""') || '"', ' OR ')
      from json_each(driving.category, '$.tags') as tag) || ')' from driving), '""')
),
""" + _holding("candidates") + """,
counted as materialized (
  select id, count(*) as holds from holding group by id
  having sum(asked) = (select count(*) from named where asked)  -- every category asked which of
),
held as materialized (  -- those holding the most named categories: two at least, when two are named and none
  select id from counted  -- is asked which of (an unasked one may only be what the question is about)
  where holds = (select max(holds) from counted)
    and (holds >= min(2, (select count(*) from named)) or exists (select 1 from named where asked))
),
typed as materialized (  -- of those, the ones of the kinds a list question asks for, by type or tag
  select held.id from held cross join concepts on concepts.id = held.id
  where lower(concepts.type) in (select value from json_each(:kinds))
     or exists (select 1 from json_each(concepts.tags) as tag where lower(tag.value) in (select value from json_each(:kinds)))
),
members as materialized (  -- more than a set lists: those of the kinds asked for, when there are any
  select id from held
  where (select count(*) from held) <= cast(:most as integer) or not exists (select 1 from typed)
  union all
  select id from typed where (select count(*) from held) > cast(:most as integer)
  order by id limit cast(:list_most as integer) + 1
)
select id, (select json_group_array(json_extract(category, '$.label')) from named
            where key in (select key from holding where holding.id = members.id)) as named
from members
where (select count(*) from members) between 2 and cast(:list_most as integer)
order by id"""
CATEGORY_MOST = 8  # notes in a set the context lists: more, and the rest of the question finds no room
CATEGORY_KINDS_MOST = 200  # notes of a lone category a list question's kinds may narrow to a set (VALUE_MOST's)
CATEGORY_LIST_MOST = 50  # a set of more than CATEGORY_MOST, up to this, comes as fact lines naming its notes
#                           (30 until stop 58: Thellade's 32 player characters were not listed, ~600 tokens now)


def category_notes(query: Query) -> list[dict[str, Any]]:
    """The notes of the categories a question that asks who or which of many names (CATEGORY_SQL), read once:
    evidence for the gate, and the category stage's notes."""
    if query.categories is None:
        listing = asks_for_list(query.question)
        query.categories = query.run("categories", CATEGORY_SQL, {
            "question": query.question, "most": CATEGORY_MOST, "list_most": CATEGORY_LIST_MOST,
            "list_question": int(listing),
            "kinds": json.dumps(kinds_asked(query.question) if listing else []), "kinds_most": CATEGORY_KINDS_MOST,
        }) if asks_which(query.question) else []
        query.know([row["id"] for row in query.categories])
    return query.categories


def category_set(query: Query) -> list[dict[str, Any]]:
    """The category statement's notes when they are few enough to come as notes: two to CATEGORY_MOST."""
    rows = category_notes(query)
    return rows if len(rows) <= CATEGORY_MOST else []


def category_listing(query: Query, about: str) -> list[dict[str, Any]]:
    """A set of more than CATEGORY_MOST notes (up to CATEGORY_LIST_MOST) as fact lines naming them, counted in the
    budget of the note `about`, when the question asks for the whole of it: "Who are the deities?" on Thellade, 23
    notes of type Deity, too many to offer as notes, and no note lists them all."""
    rows = category_notes(query)
    if len(rows) <= CATEGORY_MOST:
        return []
    named = json.loads(query.conn.execute("select okf_categories_named(?)", [query.question]).fetchone()[0])
    if not asks_whole(query.question, [category["words"] for category in named]) or any(
            len(json.loads(row["named"])) < len(named) for row in rows):  # holding fewer: a narrower set is asked
        return []
    facts = []
    for row in rows:
        member = query.concepts[row["id"]]
        fact = {"subject": member["title"], "subject_id": row["id"], "predicate": "category",
                "object": ", ".join(json.loads(row["named"])), "object_id": None, "date": None, "source": None,
                "trust": member["trust"], "superseded_by": member.get("superseded_by"),
                "stale": _is_stale(query, member), "stale_after": member.get("stale_after"), "with_id": about}
        fact["text"] = fact_line(fact)
        facts.append(fact)
    return facts


# A set a link defines: "Which characters belong to the Gilded Hammer Union?" asks for the notes whose frontmatter
# links to the note it names (`organization: [[The Gilded Hammer Union]]`), of the types it asks for (people, for
# "characters": titles.kinds_asked; or tagged so: Thellade's years are typed Lore by their folder, tagged Year; its
# subregions tagged Location/Subregion, a nested tag by its last part: "What subregions make up…"). §6
# gives up to 20 of those links as fact lines; two to CATEGORY_MOST of them come as notes too, as a category's do: a
# written note says more than its link (docs/design.md §5.13).
LINKING_SQL = f"""with kinds(kind) as materialized (select value from json_each(:kinds_asked))
select edges.src as id, min(edges.predicate) as predicate from edges
join concepts as source on source.id = edges.src
where edges.dst = :first and edges.kind = 'property' and edges.src != edges.dst and {NOT_A_SOURCE}
  and not source.is_index and (lower(source.type) in (select kind from kinds)  -- its type, or a tag, is the kind
    or exists (select 1 from json_each(source.tags) as tag join kinds  -- a nested tag by its last part too
               on lower(tag.value) = kinds.kind or lower(tag.value) like '%/' || kinds.kind))  -- Location/Subregion
group by edges.src order by edges.src limit cast(:most as integer) + 1"""


# A set a section defines: "Which chaos mage spells belong to the Light of the High Ones group?" asks for the notes
# the Chaos Mage's section of that name links (the class note lists each group's spells under a heading, as embeds;
# no tag, folder or property says which group a spell is in). The section: from a heading of a note found that the
# question says whole (two words or more: "Stats" or "Gear" is said in passing; not the note's own title, which is
# the whole note), to the next heading of its level or above. Two to CATEGORY_MOST of its links come as a category's
# notes do.
SECTION_SQL = """with named as materialized (
  select headings.concept_id, headings.text, headings.line as start,
    coalesce((select min(next.line) from headings as next where next.concept_id = headings.concept_id
              and next.line > headings.line and next.level <= headings.level), 1e9) as stop
  from json_each(:found) as found
  join concepts on concepts.id = found.value
  join headings on headings.concept_id = concepts.id
  where instr(okf_slug(headings.text), '-') and okf_slug(headings.text) != okf_slug(concepts.title)
    and instr('-' || okf_slug(:question) || '-', '-' || okf_slug(headings.text) || '-')
)
select edges.dst as id, min(named.text) as heading from named
join edges on edges.src = named.concept_id and edges.line > named.start and edges.line < named.stop
join concepts on concepts.id = edges.dst and not concepts.is_index
where edges.dst != edges.src
group by edges.dst order by min(edges.line) limit cast(:most as integer) + 1"""


def categories(query: Query, nodes: list[Node]) -> list[Node]:
    """3c. The notes of the categories a question that asks who or which of many names, and of a list question the
    notes of the types it asks for linking to the strongest note found (said so first: "organization: The Red
    Runners" says more than "type: Place"): right after that note (as a note named by number comes); one already
    offered rises there and says so."""
    rows = [{"id": row["id"], "named": json.loads(row["named"])} for row in category_set(query)]
    top = max(nodes, key=lambda n: n.score, default=None)
    if top is not None and asks_for_list(query.question):
        top = _within_name(query, nodes, top)
        linking = _a_set(query, "linking", LINKING_SQL,
                         {"first": top.id, "kinds_asked": json.dumps(kinds_asked(query.question))})
        rows[:0] = [{"id": row["id"], "named": [f"{row['predicate']}: {top.concept['title']}"]} for row in linking]
        listed = _a_set(query, "section", SECTION_SQL,
                        {"found": json.dumps([n.id for n in nodes]), "question": query.question})
        rows[:0] = [{"id": row["id"], "named": [f"section {row['heading']}"]} for row in listed]
    wanted = round((top.score if top else 1 / (RRF_K + 1)) * SERIES_SHARE, 6)
    offered, added = {n.id: n for n in nodes}, {}
    for row in rows:
        if row["id"] in offered:
            node = offered[row["id"]]
            node.score, node.why = max(node.score, wanted), {**node.why, "category": row["named"]}
        elif row["id"] not in added:
            added[row["id"]] = Node(query.concepts[row["id"]], wanted, {"kind": "category", "named": row["named"]})
    return _marked_stale(query, list(added.values()))


def _a_set(query: Query, stage: str, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a set one statement defines (a link's, a section's), when it holds two to CATEGORY_MOST notes."""
    rows = query.run(stage, sql, {**params, "most": CATEGORY_MOST})
    if not 2 <= len(rows) <= CATEGORY_MOST:
        return []
    query.know([row["id"] for row in rows])
    return rows


def _within_name(query: Query, nodes: list[Node], top: Node) -> Node:
    """The note a list question is about: the strongest found, unless the question names it only inside a longer
    name of another note found ("Which NPCs can be found at the Mangagoy Healing Sanctuary?" names the city Mangagoy
    only so: the sanctuary's people link the sanctuary). Names are compared as whole words."""
    names = json.loads(query.conn.execute("select okf_title_names(?)", [query.question]).fetchone()[0])
    said = [f" {n['name']} " for n in names if n["id"] == top.id]
    found = {n.id: n for n in nodes}
    longer = [found[n["id"]] for n in names if n["id"] in found and n["id"] != top.id and said
              and all(name in f" {n['name']} " and name != f" {n['name']} " for name in said)]
    return max(longer, key=lambda n: n.score) if longer else top


def _lift_named(nodes: list[Node], found: list[dict[str, Any]]) -> None:
    """A note found anywhere that the question names with both its numbers (the statement's `found` rows: "When
    Group 6 made port in session 8": "Campaign 6 - Session 08 - …") comes right after the strongest note found, as a
    member named from its series would: the lists had found it below the seeds, the budget's last note, and cut it
    for the notes of two other groups' session 8. Of several notes that answer one name, the strongest."""
    by_id = {n.id: n for n in nodes}
    wanted = round(max(n.score for n in nodes) * SERIES_SHARE, 6)
    for pair in {row["pair"] for row in found}:
        best = max((by_id[row["id"]] for row in found if row["pair"] == pair), key=lambda n: n.score)
        best.score = max(best.score, wanted)


def _other_numbers(question: str) -> dict[str, list[int]]:
    """For each word the question numbers, the numbers it puts after its other words: "Group 1's session 8" ->
    {"session": [1], "group": [8]}; a word alone has none, and is left out."""
    pairs = numbered(question)
    others = {word: sorted({n for w, n in pairs if w != word}) for word, _ in pairs}
    return {word: numbers for word, numbers in others.items() if numbers}


def _asked_end(query: Query, nodes: list[Node]) -> tuple[str, str, str] | None:
    """(the member at the end of a series the question asks for, "last" or "first", the member it was reached from),
    from the found member whose file name carries the question's other number ("the last session of Campaign 6":
    "Campaign 6 - Session 07 - …"), else the strongest found member numbered by the question's word."""
    asked = end_asked(query.question)
    if asked is None:
        return None
    towards, word = asked
    others = {number for _, number in numbered(query.question)}
    members = [n for n in nodes if number_after(n.concept["path"], word) is not None]
    if not members:
        return None
    start = max(members, key=lambda n: (carries(n.concept["path"], word, others), n.score))
    rows = query.run("series_end", SERIES_END_SQL, {"start": start.id, "towards": towards, "most": SERIES_MOST})
    query.know([row["id"] for row in rows])
    return rows[0]["id"], towards, start.id


def _best_per_pair(rows: list[dict[str, Any]], score: dict[str, float], query: Query) -> dict[str, dict[str, Any]]:
    """For each name the rows answer, the row _best_named keeps."""
    pairs = numbered(query.question)
    return {pair: _best_named(rows, pair, score, query, pairs) for pair in {row["pair"] for row in rows}}


def _best_named(rows: list[dict[str, Any]], pair: str, score: dict[str, float], query: Query,
                pairs: list[list[Any]]) -> dict[str, Any]:
    """Of the notes that answer one name ("session 9" in Campaign 1 and in Campaign 3), the one whose file name
    carries the question's other number ("Group 3's session 9": "Campaign 3 - Session 09 - …"), else the one in the
    series of the strongest note found: the other series' is another group's session. `pairs`: the question's."""
    word = json.loads(pair)[0]
    others = {number for other, number in pairs if other != word}
    return max((row for row in rows if row["pair"] == pair),
               key=lambda row: (carries(query.concepts[row["id"]]["path"], word, others),
                                score[row["after"]]))


def _at_least(nodes: list[Node], pairs: list[tuple[str, str]], share: float) -> None:
    """Each (neighbour, note) pair of one series: a walked note rises to `share` of its neighbour's score, as the
    series' end would have come had the walk not brought it (at its own place among the seed's neighbours)."""
    score = {n.id: n.score for n in nodes}
    for node in nodes:
        lift = [round(score[neighbour] * share, 6) for neighbour, note in pairs if note == node.id]
        if lift and not node.is_seed:
            node.score = max(node.score, *lift)


def _in_order(nodes: list[Node], pairs: list[tuple[str, str]]) -> None:
    """Each (neighbour, note) pair of one series: the note's score rises to just below its neighbour's, along the
    whole stretch found (a chain of n notes settles in n rounds)."""
    score = {n.id: n.score for n in nodes}
    for _ in pairs:
        changed = False
        for neighbour, note in pairs:
            if round(score[neighbour] * SERIES_SHARE, 6) > score[note]:
                score[note], changed = round(score[neighbour] * SERIES_SHARE, 6), True
        if not changed:
            break
    for node in nodes:
        node.score = score[node.id]


def find_facts(query: Query, nodes: list[Node], run: bool) -> list[dict[str, Any]]:
    """4. The typed relations of every offered note; the first note's and each template's first frontmatter links,
    and the values the question asks for; the links to each template offered: as fact lines (only when the answer is
    confident). Each counts in the budget of the note it is about (`with_id`)."""
    by_id = {n.id: n for n in nodes}
    params = {"nodes": json.dumps(list(by_id)), "property_facts": PROPERTY_FACTS, "linked_facts": LINKED_FACTS,
              "hub_degree": WalkOptions.hub_degree,
              "question": query.question, "list_question": int(asks_for_list(query.question)),
              "kinds_asked": json.dumps(kinds_asked(query.question)), "asks_when": int(asks_dates(query.question, query.intent))}
    if not run:
        query.sql["facts"], query.params["facts"] = FACTS_SQL, params
        return []
    rows = query.run("facts", FACTS_SQL, params)
    query.know([row[end] for row in rows for end in ("src", "dst") if row[end]])
    listing = category_listing(query, max(nodes, key=lambda n: n.score).id) if nodes else []
    facts = []
    for row in _without_repeats(rows):
        if listing and row["linked"]:  # the set listed answers who: not the first note's own people
            continue
        subject = query.concepts[row["src"]]  # an offered note, or an unfilled template one of its links names
        target = query.concepts.get(row["dst"]) if row["dst"] else None
        fact = {
            "subject": subject["title"], "subject_id": row["src"], "predicate": row["predicate"],
            "object": target["title"] if target else row["object_literal"], "object_id": row["dst"],
            "date": row["date"], "source": row["source_id"], "trust": subject["trust"],
            "superseded_by": subject.get("superseded_by"), "stale": _is_stale(query, subject),
            "stale_after": subject.get("stale_after"),
            "with_id": row["dst"] if row["linked"] else row["src"],  # the note whose budget it counts in
        }
        fact["text"] = fact_line(fact)
        facts.append(fact)
    return facts + listing


def _without_repeats(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fact rows but a field whose value a longer field of the same note holds (Thellade's `yearnumeric` 212
    beside `startdate` "15 Sunreach 212 PR", in 16 notes; its `startdateshort` "0212.03.15 PR", the same date
    written otherwise, still comes), and any line a second time: a date field whose key the question names comes by
    both of FACTS_SQL's field branches, and the first note's link to a template the question is about by its own
    links and the template's ("Bren Dault location The Velvet Lantern", twice in "Which NPCs work at the Velvet
    Lantern?": 21 repeated lines in 18 development contexts)."""
    said: dict[str, list[str]] = {}
    for row in rows:
        if row["kind"] == "field":
            said.setdefault(row["src"], []).append(str(row["object_literal"]))
    kept, seen = [], set()
    for row in rows:
        line = (row["src"], row["predicate"], row["dst"] or str(row["object_literal"]), row["date"])  # as it reads
        if line in seen:
            continue
        if row["kind"] == "field":
            value = str(row["object_literal"])
            if any(value in other and value != other for other in said[row["src"]]):
                continue
        seen.add(line)
        kept.append(row)
    return kept


def templates_read_through(query: Query, nodes: list[Node], facts: list[dict[str, Any]]) -> list[Node]:
    """4b. Each unfilled template whose links the facts read through a link to it (§6: "The Pactbound Flame worship
    Asmodeus", through the first note's `religion`) is listed as a note, as the best neighbour of the strongest note
    that links to it: the LLM can cite where those lines come from, and the page draws the link. A fact about a note
    not offered is such a line (counted in the template's budget) or a link to an offered template (`with_id`)."""
    offered = {n.id: n for n in nodes}
    templates = []
    for template in dict.fromkeys(f["subject_id"] for f in facts if f["with_id"] == f["subject_id"] not in offered):
        link = max((f for f in facts if f["object_id"] == template and f["subject_id"] in offered),
                   key=lambda f: offered[f["subject_id"]].score)
        templates.append(Node(query.concepts[template], round(offered[link["subject_id"]].score * WALK_SHARE, 6),
                              {"kind": "hop", "hop": 1, "from": link["subject_id"], "predicate": link["predicate"],
                               "edge_kind": "property", "seed": link["subject_id"], "similarity": None}))
    return _marked_stale(query, templates)


def respond(query: Query, confident: bool, reason: str, seeds: list[Seed], picked: list[Node], blocks: list[list[str]],
            facts: list[dict[str, Any]], started: float) -> dict[str, Any]:
    """6. The context text and the JSON contract around it."""
    if confident:
        text = context_text(query.question, [f["text"] for f in facts], ["\n".join(block) for block in blocks])
    else:
        text = no_confident_match(query.question, reason)
    query.timings["total"] = _ms(started)
    return {
        "question": query.question,
        "mode": query.options.mode,
        "vectors": query.vectors,
        "intent": query.intent,
        "confident": confident,
        "reason": reason,
        "seeds": [s.as_json() for s in seeds],
        "nodes": [n.as_json() for n in picked] if confident else [],
        "nearest": [] if confident else refused_nearest(query, seeds),
        "facts": facts,
        "context": text,
        "sql": query.sql,
        "params": query.params,
        "timings_ms": query.timings,
    }


NEAREST = 3  # notes listed when there is no confident match


def refused_nearest(query: Query, seeds: list[Seed]) -> list[dict[str, Any]]:
    """The notes a refusal lists as nearest: its best seeds, or, when the question names a member its series lacks,
    that series' members nearest the number asked ("Group 4's third session": Group 4's sessions 5 and 6, which the
    seeds, other groups' third sessions, are not)."""
    if not query.nearest:
        return [s.as_json() for s in seeds[:NEAREST]]
    query.know(query.nearest)
    return [{"id": i, "path": query.concepts[i]["path"], "title": query.concepts[i]["title"], "ranks": {},
             "why": "a series member nearest the one asked"} for i in query.nearest[:NEAREST]]


def nearest_notes(result: dict[str, Any], count: int = NEAREST) -> list[dict[str, Any]]:
    """The notes that came closest when `result` (context_for's JSON, local or remote) is not confident, which `llm
    okf` and the question page list as "may not be relevant"; a server before stop 55 sent only its seeds."""
    return result.get("nearest", result["seeds"])[:count]


def _timed(query: Query, stage: str, function: Callable[..., T], *args: Any) -> T:
    tick = time.perf_counter()
    result = function(*args)
    query.timings[stage] = _ms(tick)
    return result


def _fusion_sql(names: tuple[str, ...], weights: dict[str, float], binary: bool = False, vectors: bool = True) -> str:
    """The seeds statement: each list as a CTE, then rrf() over their union (weights: title 2, fts 1, vector 1, dated
    2); when BM25 or vectors are fused with another list, a list's clear leader (LEADERS) takes the last of the :seats
    seed places if it is not in them."""
    sql_of = {name: LISTS[name][0] for name in names}
    if "vector" in names and binary:
        sql_of["vector"] = VECTOR_BINARY_SQL
    if "dated" in names and not vectors:  # notes dated alike in the order of their names
        sql_of["dated"] = DATED_SQL.format(nearest="", similarity="")
    ctes = ",\n".join(f"{name} as (\n{sql_of[name]}\n)" for name in names)
    union = "\n  union all ".join(
        f"select id, rank, {float(weights.get(name, LISTS[name][1]))} as weight, '{name}' as list from {name}"
        for name in names
    )
    ranks = ",\n  ".join(f"min(case when list = '{name}' then rank end) as {name}_rank" for name in names)
    similarity = (",\n  (select similarity from vector where vector.id = lists.id) as similarity"
                  ",\n  (select chunk_distances from vector where vector.id = lists.id) as chunk_distances"
                  if "vector" in names else "")
    fused = f"select id,\n  {ranks},\n  rrf(rank, weight, {RRF_K}) as rrf{similarity}"
    lists = f"with {ctes},\nlists as (\n  {union}\n)"
    if not _leading(names):
        return f"{lists}\n{fused}\nfrom lists group by id order by rrf desc, id"
    leaders = "\n  union\n  ".join(LEADERS[name] for name in names if name in LEADERS)
    columns = ", ".join(["id", *(f"{name}_rank" for name in names), "rrf",
                         *(["similarity", "chunk_distances"] if "vector" in names else []), "leads",
                         "leads and place > :seats as promoted"])
    return (f"{lists},\nleaders as (  -- a list's first note far ahead of its second\n  {leaders}\n),\n"
            f"fused as (\n{fused},\n  id in (select id from leaders) as leads\nfrom lists group by id\n),\n"
            "placed as (select *, row_number() over (order by rrf desc, id) as place from fused)\n"
            f"select {columns} from placed\n"
            "order by case when leads and place > :seats then :seats - 0.5 else place end, rrf desc, id")


def _leading(names: tuple[str, ...]) -> bool:
    """Whether a list's clear leader can be passed over by the fusion: BM25 or vectors fused with another list."""
    return len(names) > 1 and bool(set(LEADERS) & set(names))


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


_CONCEPT_COLUMNS = ("id", "bundle", "path", "title", "description", "trust_tier", "status", "stale_after", "superseded_by",
                    "is_index", "is_stub", "aliases", "degree")


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


def _end_of_chain(query: Query, concept_id: str) -> tuple[str, list[str]]:
    """Follow superseded_by at most SUPERSESSION_HOPS times, cycle-safe: (the newest note, the notes passed)."""
    chain: list[str] = []
    current = concept_id
    for _ in range(SUPERSESSION_HOPS):
        query.know([current])
        info = query.concepts.get(current)
        if not info or not info.get("superseded_by") or info["superseded_by"] in chain + [concept_id]:
            break
        chain.append(current)
        current = info["superseded_by"]
    return current, chain


# 5a. Every section of the notes offered, nearest the question first: the budget packs a note's best section,
# not its first (a note's "Description" before the "Overview" that answers). The first note's best is chosen with
# the question's words too, its own name's left out (:asked, titles.besides): a section is nearer by COVERAGE_WEIGHT
# × the share of them it holds ("Which cleric was entrusted with the infant Kothar?" gets his Divine Heritage, not
# his prophecy, which was nearer in cosine). The rest follow by nearness. Without vectors: by the share alone.
# A note's frontmatter values (`properties`, docs/design.md §2.2) as one more section, after its chunks, when they hold
# more of the question's words than its title and text do: Ygra Brambleward, found by "cleans her armor only with ash
# and holy oil" (her `mannerisms`), reached the LLM without that line (Thellade-check8's thj24, stop 57). Its id is
# the note's rowid negated: no chunk's. Each value under its key, as the note's file writes it ("mannerisms: - …"),
# only the values that hold a question word or whose key holds one's start (:starts, titles.word_starts: "what kind
# of government" reads `governmenttype`): her template's `party1relation: Unmet`, six times, said nothing. Over the
# development contexts the 27 such sections' field lines went from 99 to 43; no answer quote in any mode was lost.
PROPERTIES_SECTION = """select -concepts.rowid as id, concepts.id as concept_id, 1000000 as seq, 'Properties' as heading,
    (select group_concat(field.key || ': ' || coalesce(
        (select group_concat(item.value, '; ') from json_each(field.value) as item
         where field.type = 'array' and item.type = 'text' and instr(concepts.properties, item.value)),
        iif(field.type = 'text' and instr(concepts.properties, field.value), field.value, null)), char(10))
     from json_each(concepts.frontmatter) as field
     where exists (select 1 from json_each(:starts) as start where instr(lower(field.key), start.value))
       or okf_coverage(:question, field.value) > 0) as text,
    null as distance, 0 as template_share
  from concepts where concepts.id in (select value from json_each(:ids)) and concepts.properties != ''
    and okf_coverage(:question, concepts.properties) > 0  -- then the note's text, only then: it may be long
    and okf_coverage(:question, concepts.properties) > okf_coverage(:question, concepts.title || ' ' || concepts.body)"""
SECTIONS_SQL = """with sections as (
  select chunks.id, chunks.concept_id, chunks.seq, chunks.heading, chunks.text,
    case when chunk_floats.embedding is not null  -- a chunk a build is still embedding has none yet
      then vec_distance_cosine(chunk_floats.embedding, (select okf_embed(:question))) end as distance,
    chunks.template_share
  from chunks left join chunk_floats on chunk_floats.id = chunks.id
  where chunks.concept_id in (select value from json_each(:ids))
    and chunks.text not in (select text from template_texts)  -- a template's words, not the note's (store.py)
  union all
  """ + PROPERTIES_SECTION + """
), near as (
  select *, distance + :template_penalty * template_share as nearness from sections
)
select id, concept_id, seq, heading, text, distance from near
order by concept_id, distance is null,
  id != (select id from near where concept_id = :first and distance is not null  -- the first note's best
         order by nearness - :coverage_weight * okf_coverage(:asked, coalesce(heading, '') || ' ' || text), seq
         limit 1),
  nearness, seq"""
SECTIONS_NO_VECTORS_SQL = """select id, concept_id, seq, heading, text, distance from (
  select id, concept_id, seq, heading, text, null as distance, template_share from chunks
  where concept_id in (select value from json_each(:ids))
    and text not in (select text from template_texts)
  union all
  """ + PROPERTIES_SECTION + """
)
order by concept_id, okf_coverage(:question, coalesce(heading, '') || ' ' || text) desc, template_share, seq"""
# A chunk's cosine distance counts this much more when all its words are in lines its note has from a template (in
# more than 3 notes with other text, bundle.describe_and_find_stubs): a nudge, not a rule. Thellade's session 7 had
# its prep checklist ("- [x] Intro → Exploration → …", share 1.0) 0.005 nearer "What happened in Group 2's session
# 7?" than its transcript notes. Sorting such chunks last instead would put 13th Age's "Basic Attacks > Melee
# Attack", which four classes share word for word, behind every other chunk of a class whatever the question.
TEMPLATE_PENALTY = 0.02
# How much nearer the first note's section is for holding all of the question's words (one more of eight: 0.05,
# about the spread of a note's sections in cosine distance). Measured with benchmarks/evidence.py (docs/design.md
# §7.3).
COVERAGE_WEIGHT = 0.4


def sections(query: Query, nodes: list[Node]) -> dict[str, list[dict[str, Any]]]:
    """Each node's chunks, the one nearest the question first (a template's lines a little farther; for the first
    note, the question's words a little nearer)."""
    first = packing_order(nodes)[0]
    rows = query.run("sections", SECTIONS_SQL if query.uses_vectors else SECTIONS_NO_VECTORS_SQL,
                     {"question": query.question, "ids": json.dumps([n.id for n in nodes]), "first": first.id,
                      "asked": besides(query.question, first.concept["title"] or ""),
                      "template_penalty": TEMPLATE_PENALTY, "coverage_weight": COVERAGE_WEIGHT,
                      "starts": json.dumps(word_starts(query.question))})
    by_concept: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_concept.setdefault(row["concept_id"], []).append(row)
    return by_concept


TRUST_ORDER = {"human-reviewed": 0, "machine-confirmed": 1, "unverified": 2}
MAX_NOTES = 11  # notes in one context, whatever the budget (the mean is 7.6-10.0 over the development sets' contexts,
#                 10.6 on a set set, hybrid; at 10, 17 required notes fewer in hybrid and 14 in graph-walk: stop 56)
CUT_ROOM = 40  # tokens: the least room left (after its header) for which the first note that did not fit comes cut
# The note two lists agree is the best comes with its two nearest chunks before any other note gets one: one chunk
# a note is breadth, and the answer is often the top note's second section ("Notes: There are nine exits" in a
# tavern whose services table was nearer the question). Measured with benchmarks/evidence.py (docs/design.md §7.1).
AGREED_CHUNKS = 2
# Notes are chosen within this share of the budget; the rest shows more of the notes found (fill_budget). A real
# vault's note is long (those Thellade-check needs: 1,100 tokens in 9 sections) and a question asks two or three
# things of it: at one section a note the LLM got the right notes and not the lines that answer (Thellade-check: 30
# of 62 answer quotes shown, 30 of the others in a note shown but a section not). Measured with benchmarks/evidence.py
# (docs/retrieval-history.md, stop 37): at a 3,000-token budget, notes within 2,250 of it: 239 -> 287 of 343 quotes
# and four more required notes found, mean notes <= 9.8 a context; all 3,000 to notes: 260, and 10.5 notes.
NOTES_SHARE = 0.75
# The first note the graph added (walked, a series' member, a linked guess…) that does not fit in the notes' share
# is set aside, and comes at its place from the last quarter, after the chunks showing the rest of the question (5b):
# whole if it fits, else cut. A seed's link the walk ranked high is often the very note the question needs, and the
# small notes ranked below it took its room (13th-Age-check6's tah16: the Bearded Devil's "devil abilities" table,
# 273 tokens, 9th in order, lost to a 31-token multiclass note and a 13-token condition). A context that takes one
# holds at most MAX_NOTES - 1 notes, so the mean stays near ten. A seed or the lists' next note is never set aside:
# a seed's further sections are what the last quarter is for (docs/design.md §7.1; docs/retrieval-history.md, stop 45).
# A template named in passing is: it has no further sections, and its facts are what the vault says of it
# (Thellade-check9's thk25: Lysara Dawnstar's six links, 168 tokens, missed the notes' share by 30; stop 53).
SET_ASIDE_NEVER = ("seed", "next")
# The notes whose further sections the last quarter shows, in turns: the seeds, and the walked notes, often the note
# the question is about ("The Sable Accord lists as a rival an academic body in Kanda… Who led that body…?": the
# walked Rift Scholars Collective's leader is not in its nearest section). Until stop 56 the seeds alone: of the 192
# development answers hybrid left unshown in a note it held, 38 were in a walked note's. Walked notes too: answer
# quotes shown +2.2 in hybrid and +4.2 in graph-walk (the sum of each question's share; in hybrid 9 questions gained,
# most of them linked-note ones, and 9 lost some to the walked notes' sections), no required note and no other mode
# moved; every note picked (series members, the lists' next notes, linked guesses) too: vector:10 -0.4 and keyword:10
# -1.0 (docs/design.md §7.1).
FURTHER_KINDS = ("seed", "hop")


def _agreed(node: Node) -> bool:
    """A seed that two lists found (title and keyword, keyword and vector…): no single list's guess."""
    return node.is_seed and sum(rank is not None for rank in node.why["ranks"].values()) >= 2


def packing_order(nodes: list[Node]) -> list[Node]:
    """The order the budget packs nodes in: by score; at equal score a seed, then a non-stale node, then the more
    trusted one, then the walked note nearer the question (walked scores tie exactly across seeds: 1/61 halved once
    is 2/61 halved twice; docs/design.md §7.2)."""
    return sorted(nodes, key=lambda n: (-n.score, not n.is_seed, n.stale, TRUST_ORDER.get(n.concept["trust"], 3),
                                        -(n.why.get("similarity") or 0)))


def fill_budget(question: str, nodes: list[Node], chunks: dict[str, list[dict[str, Any]]],
                facts: list[dict[str, Any]], budget: int) -> tuple[list[Node], list[list[str]], list[dict[str, Any]]]:
    """5. Nodes in order while `NOTES_SHARE` of the budget lasts, each with its facts and its best chunk (the first,
    when two lists agree on it, with its best two: AGREED_CHUNKS); the first node that did not fit whole then comes
    with the start of its chunk, if `CUT_ROOM` tokens are left for it (its title and first sentence say what it is);
    then, to the whole budget, the chunks holding the question's words nothing shown holds (5b); the first note the
    graph added that did not fit, set aside (SET_ASIDE_NEVER), at its place, whole if it fits; and more of the
    seeds' and walked notes' chunks (FURTHER_KINDS): each one's next nearest, in turn (one seed's every section before
    the next seed's second held 7 fewer answer quotes of the 343). Everything rendered counts.
    At equal walk score a non-stale node goes first, then the more trusted one. Each node's block comes in pieces:
    as chosen, then each chunk added after."""
    for_notes = int(budget * NOTES_SHARE)
    ordered = packing_order(nodes)
    titles = {n.id: n.concept["title"] for n in nodes}
    facts_of: dict[str, list[dict[str, Any]]] = {}
    for fact in facts:  # one read through the first note's link to a template comes with the first note
        facts_of.setdefault(fact["with_id"] if fact["with_id"] in titles else nodes[0].id, []).append(fact)
    used = estimate_tokens(context_text(question, ["-"], ["-"]))
    most = max(MAX_NOTES, sum(n.is_seed for n in nodes))  # vector:15 still gets its 15 notes
    picked, parts, kept_facts, rest = [], {}, [], {}
    cut = None  # the first node that did not fit whole: (node, header, its chunk, its facts, their cost)
    aside = None  # the first note the graph added that did not fit, as `cut`
    said: set[str] = set()  # the texts of the chunks shown: none comes twice (_said)

    def take(node: Node, header: str, shown: str, own_facts: list[dict[str, Any]], later: list[dict[str, Any]],
             at: int | None = None) -> None:
        """`node` picked (at `at`, else last) with its header, what of its chunks is shown, and its facts."""
        picked.insert(len(picked) if at is None else at, node)
        kept_facts.extend(own_facts)
        parts[node.id], rest[node.id] = ["\n".join([header] + ([shown] if shown else []))], later
        note_said(node.id)

    def note_said(node_id: str) -> None:
        """The texts of `node_id`'s chunks its block shows now, whole: said."""
        shown = "\n".join(parts[node_id])
        said.update(text for piece in chunks.get(node_id, []) if (text := _said(piece)) and text in shown)

    for node in ordered:
        if len(picked) >= most:
            break
        pieces = [piece for piece in chunks.get(node.id, []) if _said(piece) not in said]
        if node.anchor:  # an anchored link arrives at its section
            pieces = sorted(pieces, key=lambda c: slug(own_heading(c.get("heading"))) != slug(node.anchor))
        own_facts = facts_of.get(node.id, [])
        facts_cost = sum(estimate_tokens(f["text"]) + 1 for f in own_facts)
        for shown in ((AGREED_CHUNKS, 1) if not picked and _agreed(node) else (1,)):  # the second only if it fits
            first = "\n".join(chunk_block(piece) for piece in pieces[:shown] if piece["text"])
            fields = node.header_fields()
            if fields.get("description") and fields["description"].removesuffix("...") in first:
                fields = {**fields, "description": None}  # a vault note's first sentence, already in its chunk
            header = node_header(fields, titles)
            cost = estimate_tokens(header + "\n" + first) + facts_cost
            if used + cost <= for_notes:
                break
        if used + cost > for_notes:
            never = node.why["kind"] in SET_ASIDE_NEVER and not node.why.get("in_passing")
            if aside or never or cost > budget - for_notes or len(picked) >= most - 1:
                cut = cut or (node, header, first, own_facts, facts_cost)
            else:  # a place kept for it: it comes after 5b
                aside, most = (node, header, first, own_facts, facts_cost), most - 2
            continue
        used += cost
        take(node, header, first, own_facts, pieces[shown:])
    if cut and len(picked) < most:
        node, header, first, own_facts, facts_cost = cut
        start = cut_to_fit(header, first, for_notes - used - facts_cost, CUT_ROOM)
        if start is not None:
            used += estimate_tokens(header + "\n") + facts_cost + estimate_tokens(start)
            take(replace(node, cut=True), header, start, own_facts, [])
    used = show_the_rest_of_the_question(question, picked, rest, parts, used, budget)
    for node in picked:
        note_said(node.id)
    if aside:  # at its place in the order: whole if it still fits, else cut
        node, header, first, own_facts, facts_cost = aside
        whole = used + estimate_tokens(header + "\n" + first) + facts_cost <= budget
        start = first if whole else cut_to_fit(header, first, budget - used - facts_cost, CUT_ROOM)
        if start is not None:
            place = {n.id: i for i, n in enumerate(ordered)}
            used += estimate_tokens(header + "\n" + start) + facts_cost
            take(replace(node, cut=not whole), header, start, own_facts, [],
                 at=sum(place[p.id] < place[node.id] for p in picked))
    further = [node for node in picked if node.why["kind"] in FURTHER_KINDS]  # each one's next nearest, in turn
    add_in_turns([parts[node.id] for node in further],
                 [[chunk_block(piece) if piece else None for piece in queue]
                  for queue in _first_sayings([rest[node.id] for node in further], said)],
                 used, budget)
    return picked, [parts[n.id] for n in picked], kept_facts


# A context says each chunk's text once: 13th Age's feat lists hold each feat's tiers word for word, as the feat's
# own note does ("Adventurer Tier: You get additional hit points equal to…" under Toughness in both), and Thellade's
# session notes share a prep checklist. A chunk whose text the context shows already, under any heading, is passed
# over and the note's next nearest comes instead: 39 of the 1,424 development contexts showed one twice (~3,300
# tokens in all; docs/design.md §7.1).
def _said(chunk: dict[str, Any]) -> str:
    """What a chunk says, headings aside: the same text under two headings says it twice."""
    return chunk["text"].strip()


def _first_sayings(queues: list[list[dict[str, Any]]], said: set[str]) -> list[list[dict[str, Any] | None]]:
    """The seeds' queues of further chunks, taken in turns (render.add_in_turns), with None for each chunk empty,
    said already, or said by a queue earlier in the turns."""
    out: list[list[dict[str, Any] | None]] = [list(queue) for queue in queues]
    for turn in range(max(map(len, out), default=0)):
        for queue in out:
            piece = queue[turn] if turn < len(queue) else None
            if piece is not None:
                if not piece["text"] or _said(piece) in said:
                    queue[turn] = None
                else:
                    said.add(_said(piece))
    return out


def show_the_rest_of_the_question(question: str, picked: list[Node], rest: dict[str, list[dict[str, Any]]],
                                  parts: dict[str, list[str]], used: int, budget: int) -> int:
    """5b. The last quarter's first chunks: of any note picked, walked ones too, the chunk that holds the most of
    the question's words that nothing shown holds, while one holds any and fits ("Another faction was rumoured to
    be stoking the merchant tensions… What oath do its members swear?": the walked Silver Chain's Oaths, a section
    the cosine to the whole question did not choose). Each is taken out of `rest`; the tokens used so far come
    back."""
    shown = held(question, "\n".join(line for node in picked for line in parts[node.id]))
    missing = asked(question) - shown
    if not missing:  # the question's every word is shown already: no chunk to render and read
        return used
    blocks = [(node, piece, chunk_block(piece)) for node in picked for piece in rest[node.id] if piece["text"]]
    offered = [(node, piece, block, held(question, block, missing), estimate_tokens(block) + 1)
               for node, piece, block in blocks]
    while True:  # the first of the best: the earlier note, then its nearer chunk
        fitting = [item for item in offered if used + item[4] <= budget and item[3] - shown]
        if not fitting:
            return used
        node, piece, block, words, cost = max(fitting, key=lambda item: len(item[3] - shown))
        used += cost
        parts[node.id].append(block)
        rest[node.id].remove(piece)
        shown |= words
        offered = [item for item in offered if item[1] is not piece]
