"""Questions that ask for an end of a series: "What happened in the last session of Campaign 6?"

    python benchmarks/series_ends.py build/thellade.db [WORD]

For every series of the database (notes joined by `sequence` edges) whose file names number their members by WORD
(default "session") and carry one other number (Thellade: "Campaign 6 - Session 07 - Salt and Silence"), asks for
its last and its first member in a few wordings, and counts the member in the context, and within the first five
notes (docs/design.md §5.7).
"""

from __future__ import annotations

import re
import sys

from datasette_okf.retrieve import connection, context_for
from datasette_okf.titles import number_after

WORDINGS = {
    "last": ["What happened in the last session of Campaign {n}?", "What did Group {n} do in their latest session?"],
    "first": ["What happened in the first session of Campaign {n}?", "How did Group {n}'s earliest session go?"],
}
ENDS_SQL = """select concepts.id, concepts.path,
  exists (select 1 from edges where edges.dst = concepts.id and edges.kind = 'sequence') as has_previous,
  exists (select 1 from edges where edges.src = concepts.id and edges.kind = 'sequence') as has_next
from concepts where exists (select 1 from edges where edges.kind = 'sequence'
                            and concepts.id in (edges.src, edges.dst))"""


def main(db: str, word: str = "session") -> None:
    conn = connection(db)
    ends: dict[tuple[int, str], str] = {}
    for concept_id, path, has_previous, has_next in conn.execute(ENDS_SQL):
        own = number_after(path, word)
        if own is None:
            continue
        others = [int(n) for n in re.findall(r"\d+", path.rsplit("/", 1)[-1])]
        others.remove(own)  # "Campaign 6 - Session 06": 6 is the campaign's too
        if len(others) != 1:
            continue
        if not has_next:
            ends[(others[0], "last")] = concept_id
        if not has_previous:
            ends[(others[0], "first")] = concept_id
    asked = found = first_five = 0
    for (number, end), concept_id in sorted(ends.items()):
        for wording in WORDINGS[end]:
            ids = [node["id"] for node in context_for(conn, wording.format(n=number))["nodes"]]
            asked += 1
            found += concept_id in ids
            first_five += concept_id in ids[:5]
    print(f"{db}: {asked} questions for {len(ends)} series ends; the end in the context for {found}, "
          f"in the first five notes for {first_five}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
