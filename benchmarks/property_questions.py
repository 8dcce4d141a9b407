"""Do a vault's frontmatter links reach the LLM? Questions made from the database's own property edges.

    python benchmarks/property_questions.py build/thellade.db [COUNT] [SEED]

For notes that are not unfilled templates, each `organization`, `religion`, `location` or `hq` property becomes a
question ("Which organization does Cedric Thalor belong to?"); it counts as answered when a title it links to is
anywhere in `context_for`'s context. Written for the first note's property facts (docs/design.md §6): 55 of 60
before them on Thellade, 60 of 60 with them.

Then the same through an unfilled template: X links to a stub (a note whose text is a template's), whose own
property is the answer ("Which deities does the faith Cedric Thalor follows worship?": his `religion` is The
Pactbound Flame, a stub whose `worship` names Asmodeus and Aevaris). It counts as answered when a title the stub's
property links to is in the context.

Then keys written after a long list (`head`, `owner`, `steward`: "Who heads The Blackwake Corsairs?"), which the
first note's facts showed only once they took each key's first link before any key's second.

Then the same first questions asked of unfilled templates themselves ("Which organization does Bragan Holt belong
to?"): their frontmatter links are all the vault says of them (docs/design.md §2.6); and of templates that notes
link to ("Who are the characters in Campaign Group 6?": six characters' `whichparty`). Last, frontmatter values that
are no link ("When was Mangagoy founded?": `founded: 17 Stardrift -0285 PR`), answered when the value is in the
context (docs/design.md §6). And "Who is Two-Tooth?" for every nickname a title or alias writes in quotes
("Bragan 'Two-Tooth' Holt"): the note in the context, and first (docs/design.md §2.1). And "Who are the members of
The Red Runners?" for every note at least two people link to (`organization`, `location`): how many of them are in
the context (docs/design.md §6).
"""

from __future__ import annotations

import json
import random
import re
import sys

from datasette_okf.retrieve import connection, context_for

QUESTIONS = {
    "organization": "Which organization does {} belong to?",
    "religion": "What faith does {} follow?",
    "location": "Where can {} be found?",
    "hq": "Where is the headquarters of {}?",
}
PROPERTIES_SQL = """select note.title, edges.predicate, json_group_array(target.title)
from edges join concepts as note on note.id = edges.src join concepts as target on target.id = edges.dst
where edges.kind = 'property' and note.is_stub = :stubs and edges.predicate in (select value from json_each(:predicates))
group by note.id, edges.predicate
order by note.id, edges.predicate"""


# Keys an organisation or a place writes after its `location` list, which runs to twenty links in Thellade:
# the first six links were all `hq` and `location` for The Blackwake Corsairs, and its `head` never came.
LATER_KEYS = {
    "head": "Who heads {}?",
    "owner": "Who owns {}?",
    "steward": "Who is the steward of {}?",
}

THROUGH = {
    ("religion", "worship"): "Which deities does the faith {} follows worship?",
    ("location", "organization"): "Which organization holds the place where {} can be found?",
}
THROUGH_SQL = """select note.title, json_group_array(target.title)
from edges as first join concepts as note on note.id = first.src and not note.is_stub
join concepts as stub on stub.id = first.dst and stub.is_stub
join edges as second on second.src = stub.id and second.kind = 'property' and second.predicate = :second
join concepts as target on target.id = second.dst
where first.kind = 'property' and first.predicate = :first
group by note.id
order by note.id"""


def through(conn, count: int, seed: int) -> None:
    """The questions answered through a stub's properties, per pair of predicates."""
    for (first, second), question in THROUGH.items():
        rows = conn.execute(THROUGH_SQL, {"first": first, "second": second}).fetchall()
        random.Random(seed).shuffle(rows)
        answered = sum(any(target in context_for(conn, question.format(title))["context"]
                           for target in json.loads(targets)) for title, targets in rows[:count])
        print(f"  through {first} -> {second}: {min(count, len(rows))} questions, a linked title in the context for "
              f"{answered}")


def tally(conn, asks: list[tuple[str, list[str]]]) -> tuple[int, int, int]:
    """(asked, confident, answered) over (question, texts any of which in the context answers it)."""
    asked = confident = answered = 0
    for question, answers in asks:
        result = context_for(conn, question)
        asked += 1
        confident += result["confident"]
        answered += any(answer in result["context"] for answer in answers)
    return asked, confident, answered


def asked_about(conn, questions: dict[str, str], count: int, seed: int, stubs: bool = False) -> tuple[int, int, int]:
    """(asked, confident, answered) for up to `count` of the notes' properties that `questions` asks about, of notes
    with text of their own or (`stubs`) of unfilled templates."""
    rows = conn.execute(PROPERTIES_SQL, {"predicates": json.dumps(list(questions)), "stubs": stubs}).fetchall()
    random.Random(seed).shuffle(rows)
    return tally(conn, [(questions[predicate].format(title), json.loads(targets))
                        for title, predicate, targets in rows[:count]])


# Frontmatter values that are no link ("population: 25,000", "founded: 17 Stardrift -0285 PR"): answered when the
# value is in the context. Thellade writes them on places, organizations, deities and people.
FIELDS = {
    "population": "What is the population of {}?",
    "founded": "When was {} founded?",
    "pronounced": "How is {} pronounced?",
    "occupation": "What is the occupation of {}?",
    "alignment": "What is the alignment of {}?",
    "favored_weapon": "What is the favored weapon of {}?",
}
FIELDS_SQL = """select concepts.title, field.key, field.value from concepts, json_each(concepts.frontmatter) as field
where field.key in (select value from json_each(:keys)) and field.type in ('text', 'integer', 'real')
  and trim(field.value) != '' and field.value not like '%[[%'
order by concepts.id, field.key"""


def fields(conn, count: int, seed: int) -> tuple[int, int, int]:
    """(asked, confident, answered) for up to `count` frontmatter values that are no link."""
    rows = conn.execute(FIELDS_SQL, {"keys": json.dumps(list(FIELDS))}).fetchall()
    random.Random(seed).shuffle(rows)
    return tally(conn, [(FIELDS[key].format(title), [str(value).strip()]) for title, key, value in rows[:count]])


# Links to an unfilled template, which for a party or a faction kept as a blank page are its members: answered when
# the title of a note that links to it is in the context ("Varis whichparty Campaign Group 6").
LINKED = {
    "whichparty": "Who are the characters in {}?",
    "organization": "Who belongs to {}?",
}
LINKED_SQL = """select template.title, json_group_array(source.title)
from edges join concepts as template on template.id = edges.dst and template.is_stub
join concepts as source on source.id = edges.src
where edges.kind = 'property' and edges.predicate = :predicate and edges.src != edges.dst
group by template.id
order by template.id"""


def linking(conn, questions: dict[str, str], sql: str, count: int, seed: int) -> tuple[int, int, int, int, int]:
    """(asked, confident, linking titles in the contexts, linking titles, contexts with all of them) for up to
    `count` notes per predicate of `questions` that `sql` finds (each with the titles linking to it): a party's or
    a faction's question wants all its members."""
    asked = confident = found = wanted = whole = 0
    for predicate, question in questions.items():
        rows = conn.execute(sql, {"predicate": predicate}).fetchall()
        random.Random(seed).shuffle(rows)
        for title, sources in rows[:count]:
            result = context_for(conn, question.format(title))
            titles = set(json.loads(sources))
            here = sum(source in result["context"] for source in titles)
            asked += 1
            confident += result["confident"]
            found += here
            wanted += len(titles)
            whole += here == len(titles)
    return asked, confident, found, wanted, whole


# Links to a note with text of its own, asked as a list ("Who are the members of The Red Runners?"): answered by the
# titles of the people linking to it, most of them unfilled templates in Thellade (docs/design.md §6).
MEMBERS = {
    "organization": "Who are the members of {}?",
    "location": "Which people can be found in {}?",
}
MEMBERS_SQL = """select target.title, json_group_array(source.title)
from edges join concepts as target on target.id = edges.dst and not target.is_stub
join concepts as source on source.id = edges.src and source.type = 'Person'
where edges.kind = 'property' and edges.predicate = :predicate and edges.src != edges.dst
group by target.id having count(*) >= 2
order by target.id"""


NICKNAMED = re.compile(r"""(?:^|\s)['"‘“]([^'"‘’“”]{3,})['"’”](?=\s|$)""")  # "Bragan 'Two-Tooth' Holt"


def nicknames(conn) -> tuple[int, int, int, int]:
    """(asked, confident, the note in the context, the note first) for "Who is Two-Tooth?", once per nickname a
    title or alias writes in quotes."""
    asked = confident = found = first = 0
    seen = set()
    for concept_id, title, aliases in conn.execute("select id, title, aliases from concepts order by id"):
        for name in [title or "", *json.loads(aliases or "[]")]:
            match = NICKNAMED.search(name)
            if match and (concept_id, match[1]) not in seen:
                seen.add((concept_id, match[1]))
                result = context_for(conn, f"Who is {match[1]}?")
                ids = [node["id"] for node in result["nodes"]]
                asked += 1
                confident += result["confident"]
                found += concept_id in ids
                first += ids[:1] == [concept_id]
    return asked, confident, found, first


def main(db: str, count: int = 60, seed: int = 3) -> None:
    conn = connection(db)
    asked, confident, answered = asked_about(conn, QUESTIONS, count, seed)
    print(f"{db}: {asked} questions, {confident} confident, a linked title in the context for {answered}")
    through(conn, count, seed)
    asked, confident, answered = asked_about(conn, LATER_KEYS, count, seed)
    print(f"  keys written after long lists: {asked} questions, {confident} confident, a linked title in the context "
          f"for {answered}")
    asked, confident, answered = asked_about(conn, QUESTIONS, count, seed, stubs=True)
    print(f"  of unfilled templates: {asked} questions, {confident} confident, a linked title in the context "
          f"for {answered}")
    asked, confident, found, wanted, _ = linking(conn, LINKED, LINKED_SQL, count, seed)
    print(f"  links to unfilled templates: {asked} questions, {confident} confident, {found} of the {wanted} linking "
          f"titles in their contexts")
    asked, confident, found, wanted, whole = linking(conn, MEMBERS, MEMBERS_SQL, count, seed)
    print(f"  people linking to a note, asked as a list: {asked} questions, {confident} confident, {found} of the "
          f"{wanted} people in their contexts, all of them in {whole}")
    asked, confident, answered = fields(conn, count, seed)
    print(f"  frontmatter values that are no link: {asked} questions, {confident} confident, the value in the "
          f"context for {answered}")
    asked, confident, found, first = nicknames(conn)
    print(f"  nicknames in quotes: {asked} questions, {confident} confident, the note in the context for {found}, "
          f"first for {first}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
