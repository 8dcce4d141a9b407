"""Do a vault's frontmatter links reach the LLM? Questions made from the database's own property edges.

    python benchmarks/property_questions.py build/thellade.db [COUNT] [SEED]

For notes that are not unfilled templates, each `organization`, `religion`, `location` or `hq` property becomes a
question ("Which organization does Cedric Thalor belong to?"); it counts as answered when a title it links to is
anywhere in `context_for`'s context. Written for the first note's property facts (docs/design.md §6): 55 of 60
before them on Thellade, 60 of 60 with them.
"""

from __future__ import annotations

import random
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
where edges.kind = 'property' and not note.is_stub and edges.predicate in (select value from json_each(:predicates))
group by note.id, edges.predicate
order by note.id, edges.predicate"""


def main(db: str, count: int = 60, seed: int = 3) -> None:
    import json

    conn = connection(db)
    rows = conn.execute(PROPERTIES_SQL, {"predicates": json.dumps(list(QUESTIONS))}).fetchall()
    random.Random(seed).shuffle(rows)
    asked = confident = answered = 0
    for title, predicate, targets in rows[:count]:
        result = context_for(conn, QUESTIONS[predicate].format(title))
        asked += 1
        confident += result["confident"]
        answered += any(target in result["context"] for target in json.loads(targets))
    print(f"{db}: {asked} questions, {confident} confident, a linked title in the context for {answered}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
