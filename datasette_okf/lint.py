"""Lint checks: one SQL file per check in sql/lint/, with a title, a description and a level in its header.

The same files are Datasette canned queries (for every OKF database) and the
`datasette okf lint` command; the chart queries in sql/charts/ and the
operations in sql/operations/ ride along as canned queries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SQL = Path(__file__).parent / "sql"
MULTI_VALUED = ["has_part", "has_member", "member_of", "employs", "parent_of", "child_of", "knows", "links_to",
                "located_in", "contains", "ally_of", "enemy_of", "rival_of", "ratified"]
_HEADER = re.compile(r"^--\s*(title|description|level):\s*(.*)$")


@dataclass(frozen=True)
class Query:
    name: str
    title: str
    description: str
    level: str | None
    sql: str


def _load(folder: str, prefix: str, multi_valued: list[str]) -> list[Query]:
    queries = []
    for path in sorted((SQL / folder).glob("*.sql")):
        header: dict[str, str] = {}
        body = []
        for line in path.read_text().splitlines():
            match = _HEADER.match(line)
            if match and not body:
                header[match.group(1)] = match.group(2).strip()
            else:
                body.append(line)
        sql = "\n".join(body).strip().replace("{multi_valued}", json.dumps(multi_valued).replace("'", "''"))
        queries.append(Query(prefix + path.stem, header.get("title", path.stem), header.get("description", ""),
                             header.get("level"), sql))
    return queries


def checks(multi_valued: list[str] | None = None) -> list[Query]:
    """Every lint check, in file-name order."""
    return _load("lint", "lint_", MULTI_VALUED if multi_valued is None else multi_valued)


def charts() -> list[Query]:
    return _load("charts", "chart_", MULTI_VALUED)


def operations() -> list[Query]:
    """Read-only queries behind the bundle operations (rebuild candidates, docs/design.md §10.4)."""
    return _load("operations", "okf_", MULTI_VALUED)


def canned_queries(multi_valued: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The canned_queries hook's value: lint checks, chart queries and operations by name."""
    kinds = [("Lint: ", checks(multi_valued)), ("Chart: ", charts()), ("", operations())]
    return {q.name: {"sql": q.sql, "title": prefix + q.title, "description": q.description}
            for prefix, queries in kinds for q in queries}


def run_lint(conn: Any, multi_valued: list[str] | None = None, only: str | None = None) -> list[dict[str, Any]]:
    """Run every check, or the one named `only`: [{name, title, level, description, columns, rows}]."""
    results = []
    for check in checks(multi_valued):
        if only is not None and check.name.removeprefix("lint_") != only:
            continue
        cursor = conn.execute(check.sql)
        results.append({
            "name": check.name.removeprefix("lint_"), "title": check.title, "level": check.level,
            "description": check.description, "columns": [c[0] for c in cursor.description],
            "rows": [list(row) for row in cursor.fetchall()],
        })
    return results
