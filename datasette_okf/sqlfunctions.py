"""SQL functions and the sqlite-vec extension, for any connection to a built database.

Datasette calls `prepare_connection` for every connection it opens; the build
and the tests call the same function, so SQL written in one place runs
unchanged in the others.

Datasette's SQL time limit is a progress handler: it runs between SQLite's
steps and cannot interrupt one call of a Python function. So every function
checks the length of its arguments before it does any work: those limits, not
the time limit, bound what one call can cost a public server.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from .categories import CategoryIndex, category_words
from .dates import DatedNotes, dated_notes, is_date_field, notes_dated
from .embed import EmbeddingError, canonical_id, embed_query
from .graph import graph_expand, walk_arguments
from .hamming import hamming_candidates
from .markdown import slug
from .nearest import nearest_chunks
from .per_build import PerBuild, build_of
from .schema import IS_LOG, MAX_FILE_BYTES, NOT_A_SOURCE, folder_of, load_sqlite_vec, stored_model
from .titles import (
    MAX_QUESTION,
    TitleIndex,
    carries,
    coverage,
    fts_query,
    name_match,
    name_runs,
    names,
    nicknamed,
    number_after,
)

MAX_NOTE = MAX_FILE_BYTES  # characters: the largest text a build stores (okf_slug and okf_coverage read them)
MAX_WALK_ARGUMENT = 1024 * 1024  # characters of graph_expand's seeds or options JSON: 100 ids, or the tie_ranks
# of a whole fusion, fit many times over
MAX_NUMBER = 32  # characters: a number given as text is refused with its value quoted, so keep that short


class TooLong(ValueError, OverflowError):
    """An argument over its function's limit. An OverflowError too, so that the standard sqlite3 module
    reports "string or blob too big" instead of "user-defined function raised exception"."""


def capped(name: str, function: Callable[..., Any], *limits: tuple[str, int]) -> Callable[..., Any]:
    """`function`, refusing a text or blob longer than its argument's limit before any work is done."""

    def call(*args: Any) -> Any:
        for value, (argument, limit) in zip(args, limits):
            if isinstance(value, (str, bytes)) and len(value) > limit:
                unit = "bytes" if isinstance(value, bytes) else "characters"
                raise TooLong(f"{name}: {argument} is {len(value):,} {unit}; at most {limit:,}")
        return function(*args)

    return call


def as_text(value: Any) -> str:
    """An argument as SQLite's own text functions read it: NULL as "", a blob as UTF-8, a number as digits."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class RRF:
    """`rrf(rank [, weight [, k]])`: Σ weight / (k + rank), reciprocal rank fusion as an aggregate.

    Its arguments are numbers: a text one fails the addition at once, however long it is."""

    def __init__(self) -> None:
        self.total = 0.0

    def step(self, rank: float | None, weight: float = 1.0, k: float = 60.0) -> None:
        if rank is not None:
            self.total += (1.0 if weight is None else weight) / (k + rank)

    def finalize(self) -> float:
        return self.total


# An unfilled template is named too when a frontmatter link (not a source) leads from it or to it: a vault keeps
# much of what it knows there ("organization: [[The Red Runners]]", a character's "whichparty: [[Campaign Group
# 6]]"), and for a template it is all the vault says of it (docs/design.md §2.6).
SAYS_SOMETHING = f"""(exists (select 1 from edges where edges.src = concepts.id and edges.kind = 'property'
    and edges.dst is not concepts.id and {NOT_A_SOURCE})
  or exists (select 1 from edges where edges.dst = concepts.id and edges.kind = 'property'
    and edges.src != concepts.id and {NOT_A_SOURCE}))"""


def title_index(conn: Any) -> TitleIndex:
    """Titles and aliases (and their nicknames in quotes) of every concept that can be a seed: not an index node or
    the log, and no unfilled template unless a frontmatter link leads from it or to it."""
    names = []
    for concept_id, title, aliases in conn.execute(
        f"select id, title, aliases from concepts where not is_index and not {IS_LOG}"
        f" and (not is_stub or {SAYS_SOMETHING})"
    ):
        for name in [title or "", *json.loads(aliases or "[]")]:
            names.extend((concept_id, spoken) for spoken in [name, *nicknamed(name)])
    return TitleIndex(names)


# At 100k notes a title index is 70 MB and 1.3 s to make (benchmarks/per_build.py), and Datasette made one per
# reading thread: three copies took its peak RSS to the edge of the 500 MB target (README, "Scale").
TITLE_INDEXES = PerBuild(build_of, title_index)  # a database in memory: its connection's own


def dated_index(conn: Any) -> DatedNotes:
    """Every note that can be a seed with a date in its frontmatter, by year (dates.py)."""
    return dated_notes(conn.execute(  # GLOB passes over the notes whose frontmatter has no digit unparsed
        "select id, frontmatter, title from concepts where not is_index and not is_stub"
        " and (frontmatter glob '*[0-9]*' or title glob '[0-9][0-9][0-9][0-9]-*')"))


DATED_INDEXES = PerBuild(build_of, dated_index)


def category_index(conn: Any) -> CategoryIndex:
    """Every tag, folder and short frontmatter value of the notes, index nodes aside (categories.py): a list question
    may name them."""
    tags = (tag for _, tag in conn.execute(
        "select distinct concepts.id, tag.value from concepts, json_each(concepts.tags) as tag"
        " where not concepts.is_index and tag.type = 'text'"))
    folders = (concept_id.rsplit("/", 1)[0] for (concept_id,) in conn.execute(
        "select id from concepts where not is_index"))
    values = conn.execute(  # short frontmatter values that are no link and no date: "strength: elite"
        "select field.key, coalesce(item.value, field.value), concepts.id from concepts"
        " cross join json_each(concepts.frontmatter) as field"
        " left join json_each(iif(field.type = 'array', field.value, '[]')) as item"
        " where not concepts.is_index and field.key not in ('title', 'aliases', 'tags', 'description', 'sources')"
        " and coalesce(item.type, field.type) in ('text', 'integer') and length(coalesce(item.value, field.value)) <= 40"
        " and coalesce(item.value, field.value) not like '%[[%' and coalesce(item.value, field.value) not like '%://%'")
    return CategoryIndex(tags, folders, values)


CATEGORY_INDEXES = PerBuild(build_of, category_index)


def series_members(conn: Any) -> list[tuple[str, str]]:
    """Every note of a series, (id, path): an end of a `sequence` edge. No index reads edges by kind: at 100k notes
    the scan is 58 ms, made once a build."""
    return conn.execute("select distinct concepts.id, concepts.path from edges cross join concepts"
                        " on concepts.id = edges.src or concepts.id = edges.dst where edges.kind = 'sequence'").fetchall()


SERIES_MEMBERS = PerBuild(build_of, series_members)


COMMON_NAME_SHARE = 1 / 3  # of the notes: a name used this widely is one of the bundle's ordinary words
COMMON_NAME_NOTES = 50  # and by at least this many: a small campaign names its hero in most notes, still a name


def is_common_name(conn: Any, name: str, notes: int) -> bool:
    """A name that a third of the notes use is a word of the bundle, not a name (docs/design.md §2.1): in the 13th Age
    SRD "Damage" is in 77 % of the notes and "Initiative" in 68 %, so "if I roll more damage" names no note, and the
    title seeds it made held the places of the rules the question meant (Mooks). Such notes still come by BM25 and
    vectors. Counting stops at the share, so a common word costs no more than a third of its notes."""
    enough = max(COMMON_NAME_NOTES, math.ceil(notes * COMMON_NAME_SHARE))
    phrase = '"' + name.replace('"', '""') + '"'
    found = conn.execute("select count(*) from (select 1 from concepts_fts where concepts_fts match ? limit ?)",
                         [phrase, enough]).fetchone()[0]
    return found >= enough


def prepare_connection(conn: Any) -> None:
    """sqlite-vec plus `okf_embed(text [, model])` -> the query vector as a float32 blob."""
    load_sqlite_vec(conn)
    # What a function derives from the file (its model, its titles) is kept until another
    # connection commits: a rebuild under a running Datasette is seen by the next query.
    derived: dict[str, Any] = {}

    def current(key: str, load: Callable[[], Any]) -> Any:
        version = conn.execute("pragma data_version").fetchone()[0]
        if derived.get("data_version") != version:
            derived.clear()
            derived["data_version"] = version
        if key not in derived:
            derived[key] = load()
        return derived[key]

    def register(name: str, arities: tuple[int, ...], function: Callable[..., Any], *limits: tuple[str, int],
                 deterministic: bool = False) -> None:
        for arity in arities:
            conn.create_function(name, arity, capped(name, function, *limits), deterministic=deterministic)

    def okf_embed(text: Any, requested: str | None = None) -> bytes | None:
        if text is None:
            return None
        model = current("model", lambda: canonical_id(stored_model(conn)))
        if requested is not None and canonical_id(requested) != model:
            raise EmbeddingError(f"this database was embedded with {model!r}, not {requested!r}")
        return embed_query(model, as_text(text))

    def okf_title_matches(text: Any) -> str:
        return json.dumps([concept_id for concept_id, _ in title_names(text)])

    def title_names(text: Any) -> list[tuple[str, str]]:
        return current("titles", lambda: TITLE_INDEXES.get(conn)).find(as_text(text))

    def okf_dated_notes(question: Any) -> str:
        text = as_text(question)
        if not any(character.isdigit() for character in text):  # no date without a number: the index is not made
            return "[]"
        index = current("dated", lambda: DATED_INDEXES.get(conn))
        return json.dumps([{"id": concept_id, "score": round(score, 6)} for concept_id, score in notes_dated(text, index)])

    def okf_categories_named(question: Any) -> str:
        """A category said as a title the question names is that note, unless the question asks which of a category:
        "Which colours belong to Aurion?" asks of the god, not of the folder of his temples; "What special actions can
        you take?" of the folder `Special-Actions` beside its note of that title, "Which kobolds are mooks?" of the
        kobolds tagged `Role/Mook`, whatever the note "Mooks" says."""
        text = as_text(question)
        named = current("categories", lambda: CATEGORY_INDEXES.get(conn)).named(text)
        if named and not any(category["asked"] for category in named):  # the title index only when it can matter
            titles = {category_words(re.sub(r"^(?:the|an?)\s+", "", name, flags=re.IGNORECASE))
                      for _, name in title_names(text)}
            named = [category for category in named if tuple(category["words"].split()) not in titles]
        return json.dumps(named)

    def okf_series_members(word: Any) -> str:
        """The notes of every series whose file names number `word` ("session"), with that number."""
        said = as_text(word).casefold()
        members = current("series", lambda: SERIES_MEMBERS.get(conn))
        return json.dumps([{"id": concept_id, "path": path, "number": number} for concept_id, path in members
                           if (number := number_after(path.rsplit("/", 1)[-1], said)) is not None])

    def okf_common_name(name: Any) -> int:
        verdicts = current("common_names", dict)
        name = as_text(name)
        if name not in verdicts:
            notes = current("notes", lambda: conn.execute("select count(*) from concepts").fetchone()[0])
            verdicts[name] = is_common_name(conn, name, notes)
        return int(verdicts[name])

    def sql_graph_expand(seeds: str, hops: int = 2, options: str | None = None) -> str:
        return json.dumps(graph_expand(conn, *walk_arguments(seeds, hops, options)))

    def okf_hamming_candidates(vector: bytes | None, count: int = 200) -> str:
        return json.dumps([] if vector is None else hamming_candidates(conn, vector, int(count)))

    def okf_nearest_chunks(vector: bytes | None, count: int = 60) -> str:
        return json.dumps([] if vector is None else nearest_chunks(conn, vector, int(count)))

    register("okf_embed", (1, 2), okf_embed, ("text", MAX_QUESTION), ("model", MAX_QUESTION))
    register("okf_title_matches", (1,), okf_title_matches, ("text", MAX_QUESTION))
    register("okf_title_names", (1,), lambda text: json.dumps([{"id": concept_id, "name": name}
                                                             for concept_id, name in title_names(text)]),
             ("text", MAX_QUESTION))
    register("okf_common_name", (1,), okf_common_name, ("name", MAX_QUESTION))
    register("okf_categories_named", (1,), okf_categories_named, ("question", MAX_QUESTION))
    register("okf_dated_notes", (1,), okf_dated_notes, ("question", MAX_QUESTION))
    register("okf_series_members", (1,), okf_series_members, ("word", MAX_QUESTION))
    register("okf_fts_query", (1,), lambda text: fts_query(as_text(text)), ("text", MAX_QUESTION), deterministic=True)
    register("okf_names", (1,), lambda text: json.dumps(names(as_text(text)) + name_runs(as_text(text))),
             ("text", MAX_QUESTION), deterministic=True)
    register("okf_name_match", (1,), lambda name: name_match(as_text(name)), ("text", MAX_QUESTION),
             deterministic=True)
    register("okf_coverage", (2,), lambda question, text: coverage(as_text(question), as_text(text)),
             ("question", MAX_QUESTION), ("text", MAX_NOTE), deterministic=True)
    register("okf_carries", (3,), lambda name, word, others: int(others is not None and carries(
                 as_text(name), as_text(word).casefold(), json.loads(as_text(others)))),
             ("name", MAX_NOTE), ("word", MAX_QUESTION), ("others", MAX_QUESTION), deterministic=True)
    register("okf_number_after", (2,), lambda title, word: number_after(as_text(title), as_text(word).casefold()),
             ("title", MAX_NOTE), ("word", MAX_QUESTION), deterministic=True)
    register("okf_date_field", (2,), lambda key, value: int(is_date_field(as_text(key), as_text(value))),
             ("key", MAX_QUESTION), ("value", MAX_NOTE), deterministic=True)
    register("okf_slug", (1,), lambda text: slug(as_text(text)), ("text", MAX_NOTE), deterministic=True)
    register("okf_folder", (1,), lambda concept_id: folder_of(None if concept_id is None else as_text(concept_id)),
             ("id", MAX_NOTE), deterministic=True)
    register("graph_expand", (1, 2, 3), sql_graph_expand,
             ("seeds", MAX_WALK_ARGUMENT), ("hops", MAX_NUMBER), ("options", MAX_WALK_ARGUMENT))
    # the vector's width is checked against the database's; a count past the collection returns all of it
    conn.create_function("okf_hamming_candidates", 2, okf_hamming_candidates)
    conn.create_function("okf_nearest_chunks", 2, okf_nearest_chunks)
    for arity in (1, 2, 3):
        conn.create_aggregate("rrf", arity, RRF)
