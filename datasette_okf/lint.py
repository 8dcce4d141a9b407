"""Lint checks: one SQL file per check in sql/lint/, with a title, a description and a level in its header.

The same files are Datasette canned queries (for every OKF database) and the
`datasette okf lint` command; the chart queries in sql/charts/ and the
operations in sql/operations/ ride along as canned queries.

A check's header is its first `-- key: value` lines:

    -- title: Concepts without a type in their frontmatter
    -- description: What a hit means and what to do about it.
    -- level: error
    -- vault-level: warning

`level` (error or warning) applies under every lint profile; `<profile>-level`
overrides it under that one profile. An unknown key or profile, or another
level, is a mistake in the file and raises ValueError when the checks load.

Profiles (PROFILES):

- `okf`: the spec's rules. A concept with no `type` in its frontmatter and a
  log.md out of order are errors (OKF §4.1, §9, §11).
- `vault`: a plain Obsidian vault, which the spec does not bind (no
  okf_version in its root index.md, OKF §12): those two are warnings, so a
  vault lints clean of errors unless its own links or facts are broken.

`run_lint` chooses the profile when it is not given (`choose_profile`): okf
when every bundle in the database declares okf_version, else vault.

Scale: a check names its culprit concept's id in a column `concept` (Datasette links it to the concept's
row page, cells.py). The canned query lint_summary, listed first, counts every check's hits by folder
(`okf_folder`: the bundle and two folders down) from the check files themselves, so a vault's thousands of
hits read as a screen of counts that Datasette's 1,000-row cut-off never hides; `run_lint` returns the same
counts. Each check takes a `:folder` parameter, one of those folders or empty for all, for the summary to
link to a check's hits in one folder. Two checks name no concept, and say so in their description:
duplicate_titles (a group) and predicate_drift (a predicate). Checks are listed errors first, then warnings
(`by_severity`).

Link problems (`link_issues.problem`, set by links.py) have one check each,
whose title is also what the build summary calls them (LINK_PROBLEMS,
`link_problem_words`): every row of link_issues, whatever kind of link it came
from, is counted by exactly one of those checks.
"""

from __future__ import annotations

import functools
import json
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .retrieve import connection
from .schema import bundles_of, folder_of, read_meta

PACKAGE_SQL = Path(__file__).parent / "sql"
SQL = PACKAGE_SQL  # where the query files are read from
MULTI_VALUED = ["has_part", "has_member", "member_of", "employs", "parent_of", "child_of", "knows", "links_to",
                "located_in", "contains", "ally_of", "enemy_of", "rival_of", "ratified"]
PROFILES = ("okf", "vault")
LEVELS = ("error", "warning")
# link_issues.problem -> the lint check that lists it; the check's title names the problem everywhere
LINK_PROBLEMS = {
    "dead": "dead_links",  # a link to a note that does not exist
    "missing-file": "missing_attachments",  # a wikilink or embed of a non-markdown file that does not exist
    "escapes-bundle": "escaping_links",  # a relative path that climbs out of the bundle's folder
    "ambiguous": "ambiguous_links",  # a link that matches several notes (a shared name or alias, a case)
}
_HEADER = re.compile(r"^--\s*([a-z]+(?:-level)?):\s*(.*)$")


@dataclass(frozen=True)
class Query:
    name: str
    title: str
    description: str
    level: str | None
    sql: str
    levels: dict[str, str] = field(default_factory=dict)  # profile -> level, where it differs from `level`

    def level_for(self, profile: str) -> str | None:
        """This check's level under `profile`."""
        return self.levels.get(profile, self.level)

    @property
    def by_folder(self) -> bool:
        """Whether the check names a culprit `concept` and takes :folder, so that its hits count by folder."""
        return ":folder" in self.sql


def _load(folder: str, prefix: str, multi_valued: list[str]) -> list[Query]:
    """The queries of one folder. The package's own files do not change while it runs, and Datasette asks for the
    canned queries dozens of times a page, so those are read once."""
    if SQL == PACKAGE_SQL:
        return list(_load_shipped(folder, prefix, tuple(multi_valued)))
    return _read(SQL, folder, prefix, multi_valued)


@functools.cache
def _load_shipped(folder: str, prefix: str, multi_valued: tuple[str, ...]) -> tuple[Query, ...]:
    return tuple(_read(PACKAGE_SQL, folder, prefix, list(multi_valued)))


def _read(root: Path, folder: str, prefix: str, multi_valued: list[str]) -> list[Query]:
    queries = []
    for path in sorted((root / folder).glob("*.sql")):
        header: dict[str, str] = {}
        body = []
        for line in path.read_text().splitlines():
            match = _HEADER.match(line)
            if match and not body:
                header[match.group(1)] = match.group(2).strip()
            else:
                body.append(line)
        levels = {}
        for key, value in header.items():
            profile = key.removesuffix("-level")
            if key in ("title", "description", "level"):
                pass
            elif key.endswith("-level") and profile in PROFILES:
                levels[profile] = value
            else:
                raise ValueError(f"{path.name}: unknown header -- {key}: (profiles: {', '.join(PROFILES)})")
        for value in (header.get("level"), *levels.values()):
            if value is not None and value not in LEVELS:
                raise ValueError(f"{path.name}: level {value!r} is not one of {', '.join(LEVELS)}")
        sql = "\n".join(body).strip().replace("{multi_valued}", json.dumps(multi_valued).replace("'", "''"))
        queries.append(Query(prefix + path.stem, header.get("title", path.stem), header.get("description", ""),
                             header.get("level"), sql, levels))
    return queries


def checks(multi_valued: list[str] | None = None) -> list[Query]:
    """Every lint check, in file-name order."""
    return _load("lint", "lint_", MULTI_VALUED if multi_valued is None else multi_valued)


def by_severity(queries: list[Query], profile: str) -> list[Query]:
    """Errors first, then warnings, each in file-name order: what must be fixed is read first."""
    return sorted(queries, key=lambda q: LEVELS.index(q.level_for(profile)))


def summary(found: list[Query], profile: str) -> Query:
    """lint_summary over the checks `found`: hits per check and folder, errors first, then the checks with most
    hits. Every check's own SQL is a named subquery of it, so its counts are the checks' row counts."""
    subqueries, counts = [], []
    for check in by_severity(found, profile):
        name = check.name.removeprefix("lint_")
        subqueries.append(f"{name} as (  -- {check.title}\n{textwrap.indent(check.sql, '  ')}\n)")
        tail = "okf_folder(concept), count(*) from {0} group by okf_folder(concept)" if check.by_folder else (
            "null, count(*) from {0} where :folder = ''")  # names no concept: counted for the whole database
        counts.append(f"  select '{check.level_for(profile)}', '{name}', " + tail.format(name))
    sql = "\n".join([
        "-- Each check's own query, then its hits by folder (okf_folder: the bundle and two folders down)",
        "with", ",\n".join(subqueries) + ",",
        'hits(level, "check", folder, hits) as (', "\n  union all\n".join(counts), ")",
        'select level, "check", sum(hits) over (partition by "check") as check_hits, folder, hits from hits',
        "where hits > 0",
        "order by level, check_hits desc, \"check\", hits desc, folder  -- 'error' sorts before 'warning'",
    ])
    description = (f"Hits of every lint check (levels of the {profile} profile) by folder: the bundle and two folders "
                   "down. Errors first, then the checks with most hits; a check's name opens its rows in that "
                   "folder. Duplicate titles and predicate drift name no concept and count for the whole database. "
                   "Give folder, one of those listed, to count in it alone.")
    return Query("lint_summary", "summary", description, None, sql)


def charts() -> list[Query]:
    return _load("charts", "chart_", MULTI_VALUED)


def operations() -> list[Query]:
    """Read-only queries behind the bundle operations (rebuild candidates, docs/design.md §10.4)."""
    return _load("operations", "okf_", MULTI_VALUED)


def canned_queries(multi_valued: list[str] | None = None, profile: str = "okf") -> dict[str, dict[str, Any]]:
    """The canned_queries hook's value, in the order the database page lists them: the lint summary, the lint
    checks by severity under `profile`, chart queries, operations."""
    lint = by_severity(checks(multi_valued), profile)
    kinds = [("Lint: ", [summary(lint, profile), *lint]), ("Chart: ", charts()), ("", operations())]
    found = {q.name: {"sql": q.sql, "title": prefix + q.title, "description": q.description}
             for prefix, queries in kinds for q in queries}
    found["lint_summary"]["hide_sql"] = True  # every check's SQL: the counts are what the page is for
    return found


@functools.cache
def link_problem_words() -> dict[str, str]:
    """link_issues.problem -> the words for it (its check's title, lower case): the build summary's vocabulary."""
    titles = {c.name.removeprefix("lint_"): c.title for c in checks()}
    return {problem: titles[name][:1].lower() + titles[name][1:] for problem, name in LINK_PROBLEMS.items()}


@dataclass(frozen=True)
class Profile:
    name: str  # one of PROFILES
    reason: str  # why, in words: "bundle notes has no okf_version in its root index.md, OKF §12"


def choose_profile(conn: Any, requested: str | None = None) -> Profile:
    """The lint profile for a database: `requested`, else okf when every bundle declares okf_version, else vault."""
    if requested is not None and requested not in PROFILES:
        raise ValueError(f"unknown lint profile {requested!r}: one of {', '.join(PROFILES)}")
    versions = {name: b.get("okf_version") for name, b in sorted(bundles_of(read_meta(conn)).items())}
    plain = [name for name, version in versions.items() if not version]
    declared = [f"{name} declares {version}" for name, version in versions.items() if version]
    if plain:
        automatic = "vault"
        reason = (f"bundle {plain[0]} has no okf_version in its root index.md" if len(plain) == 1 else
                  f"bundles {', '.join(plain)} have no okf_version in their root index.md") + ", OKF §12"
        if declared:  # a mixed database: one profile covers every bundle in it
            reason += f"; {', '.join(declared)}, but one profile covers the whole database"
    elif versions:
        automatic = "okf"
        reason = f"every bundle declares okf_version in its root index.md, OKF §12: {', '.join(declared)}"
    else:
        automatic, reason = "okf", "no bundle recorded in the meta table"
    if requested is None:
        return Profile(automatic, reason)
    if requested == automatic:
        return Profile(requested, f"--profile {requested}; {reason}")
    return Profile(requested, f"--profile {requested}; the automatic choice is {automatic}: {reason}")


def run_lint(conn: Any, multi_valued: list[str] | None = None, only: str | None = None,
             profile: str | None = None) -> list[dict[str, Any]]:
    """Run every check, or the one named `only`, errors first: [{name, title, level, description, columns, rows,
    count, folders}].

    `level` is the check's level under `profile` (okf or vault; None: choose_profile's choice). `folders` is
    {folder: hits}, most first, as lint_summary counts them; None for a check that names no concept. The checks
    call okf_folder: `conn` gets our SQL functions if it has none."""
    conn = connection(conn)
    if profile is None:
        profile = choose_profile(conn).name
    elif profile not in PROFILES:
        raise ValueError(f"unknown lint profile {profile!r}: one of {', '.join(PROFILES)}")
    results = []
    for check in by_severity(checks(multi_valued), profile):
        if only is not None and check.name.removeprefix("lint_") != only:
            continue
        cursor = conn.execute(check.sql, {"folder": ""})
        columns = [c[0] for c in cursor.description]
        rows = [list(row) for row in cursor.fetchall()]
        folders = None
        if check.by_folder:
            folders = dict(Counter(folder_of(row[columns.index("concept")]) for row in rows).most_common())
        results.append({
            "name": check.name.removeprefix("lint_"), "title": check.title, "level": check.level_for(profile),
            "description": check.description, "columns": columns, "rows": rows, "count": len(rows),
            "folders": folders,
        })
    return results
