"""What the LLM is handed from a real vault: plugin markup in chunks and contexts, descriptions, stubs.

    python benchmarks/clean_text.py DB GOLDEN.json [--mode hybrid] [--save report.json]

For one built database: the share of chunks holding any of `INPUT[`, `VIEW[`, `<span`, `=this.`, `dataview`,
`<%`, `%%` (the lint check markup_left.sql, run from this repository whatever package is imported), the
descriptions (non-empty, where they come from, the most notes sharing one), the stubs, and, over a golden
set's questions, the mean tokens per context that are markup. Run it with PYTHONPATH pointing at another
checkout to measure that code on a database it built: "before" and "after" in one run of each.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

from datasette_okf.render import estimate_tokens
from datasette_okf.retrieve import connection, context_for

MARKUP_LEFT = (Path(__file__).resolve().parent.parent / "datasette_okf" / "sql" / "lint" / "markup_left.sql").read_text()
# Spans of a context that are markup, not text: plugin code, HTML tags, callout and quote markers, comments,
# templater, wikilink and link syntax, table rules, fence markers (the code inside is content).
MARKUP_SPANS = re.compile(
    r"`?(?:INPUT|VIEW|BUTTON)\[[^\n`]*`?|`\$?=[^`\n]*`|=this\.[\w.]+|<%.*?%>|%%.*?%%|</?[A-Za-z][\w-]*(?:\s[^<>\n]*)?/?>"
    r"|\[![^\]\n]*\][-+]?|^[ \t]*(?:>[ \t]?)+|\[\[|\]\]|\]\([^)\n]*\)|^[ \t|:-]*-[ \t|:-]*$|(?:```|~~~)[\w.+-]*",
    re.MULTILINE | re.DOTALL,
)


def chunk_markup(conn) -> dict:
    total = conn.execute("select count(*) from chunks").fetchone()[0]
    marked = conn.execute(f"select count(*) from ({MARKUP_LEFT})").fetchone()[0]
    return {"chunks": total, "with_markup": marked, "share": round(marked / total, 4) if total else 0.0}


def descriptions(conn) -> dict:
    columns = {row[1] for row in conn.execute("pragma table_info(concepts)")}
    total = conn.execute("select count(*) from concepts where not is_index").fetchone()[0]
    empty = conn.execute(
        "select count(*) from concepts where not is_index and coalesce(trim(description), '') = ''").fetchone()[0]
    most = conn.execute(
        "select description, count(distinct body) as notes from concepts where not is_index and description != ''"
        " group by description order by notes desc limit 1").fetchone()
    report = {"concepts": total, "non_empty": round(1 - empty / total, 4) if total else 0.0,
              "most_shared": {"description": most[0], "notes": most[1]} if most else None}
    if "description_source" in columns:
        report["by_source"] = dict(conn.execute(
            "select coalesce(description_source, 'none'), count(*) from concepts where not is_index group by 1"))
        report["stubs"] = conn.execute("select count(*) from concepts where is_stub").fetchone()[0]
        report["type_source"] = dict(conn.execute(
            "select coalesce(type_source, 'none'), count(*) from concepts where not is_index group by 1"))
    return report


def context_markup(db: Path, questions: list[str], mode: str) -> dict:
    tokens, markup = [], []
    for question in questions:
        text = context_for(db, question, mode=mode)["context"]
        tokens.append(estimate_tokens(text))
        markup.append(sum(estimate_tokens(m.group()) for m in MARKUP_SPANS.finditer(text)))
    return {"questions": len(questions), "mean_tokens": round(statistics.mean(tokens), 1),
            "mean_markup_tokens": round(statistics.mean(markup), 1),
            "markup_share": round(sum(markup) / max(1, sum(tokens)), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("golden", type=Path)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--save", type=Path)
    args = parser.parse_args()
    conn = connection(args.db)
    questions = [q["question"] for q in json.loads(args.golden.read_text())]
    report = {"db": str(args.db), "chunks": chunk_markup(conn), "descriptions": descriptions(conn),
              "contexts": context_markup(args.db, questions, args.mode)}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.save:
        args.save.write_text(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
