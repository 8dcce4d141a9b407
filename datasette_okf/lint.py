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

Link problems (`link_issues.problem`, set by links.py) have one check each,
whose title is also what the build summary calls them (LINK_PROBLEMS,
`link_problem_words`): every row of link_issues, whatever kind of link it came
from, is counted by exactly one of those checks.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .schema import bundles_of, read_meta

SQL = Path(__file__).parent / "sql"
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
    """Run every check, or the one named `only`: [{name, title, level, description, columns, rows}].

    `level` is the check's level under `profile` (okf or vault; None: choose_profile's choice)."""
    if profile is None:
        profile = choose_profile(conn).name
    elif profile not in PROFILES:
        raise ValueError(f"unknown lint profile {profile!r}: one of {', '.join(PROFILES)}")
    results = []
    for check in checks(multi_valued):
        if only is not None and check.name.removeprefix("lint_") != only:
            continue
        cursor = conn.execute(check.sql)
        results.append({
            "name": check.name.removeprefix("lint_"), "title": check.title, "level": check.level_for(profile),
            "description": check.description, "columns": [c[0] for c in cursor.description],
            "rows": [list(row) for row in cursor.fetchall()],
        })
    return results
