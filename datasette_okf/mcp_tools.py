"""context_for, concept, lint and related as MCP tools, through datasette-mcp's register_mcp_tools hook.

datasette-mcp serves Datasette over MCP at /-/mcp (list databases, read schemas,
read-only SQL, which can call our SQL functions); these four tools add the
bundle's own operations. All are read-only, run as the calling actor (a private
database is invisible to an actor who may not view it), and bound their output.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from .access import configured_options, plugin_config, visible_databases
from .across import ask_databases
from .embed import EmbeddingError
from .graph import MAX_HOPS, WalkOptions, graph_expand
from .lint import checks, run_lint
from .notes import BadConceptId, check_id, read_concept, similar_ids
from .options import BadOption
from .retrieve import context_for as run_context_for
from .schema import OutdatedDatabase
from .titles import MAX_QUESTION

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
MAX_LINT_ROWS = 50
MAX_RELATED = 25


def checked_id(concept_id: str) -> str:
    """The id, or a ToolError saying what an id looks like (notes.check_id, shared with the llm toolbox)."""
    try:
        return check_id(concept_id)
    except BadConceptId as error:
        raise ToolError(f"{error}.") from None


def register(datasette: Any, mcp: MCPServer) -> None:
    """Add the OKF tools to datasette-mcp's server."""

    async def visible_to(ctx: Context) -> list[str]:
        """The OKF databases the caller may view."""
        request = getattr(ctx.request_context, "request", None)
        scope = getattr(request, "scope", None) or {}
        actor = scope.get("actor") if isinstance(scope.get("actor"), dict) else None
        if not await datasette.permission_allowed(actor, "view-instance", default=True):
            raise ToolError("You do not have permission to view this Datasette instance.")
        return await visible_databases(datasette, actor)

    async def database_for(ctx: Context, db: str | None) -> Any:
        visible = await visible_to(ctx)
        if db is None:
            if len(visible) != 1:
                raise ToolError(f"Give db: one of {', '.join(visible) or '(no OKF database you may view)'}.")
            db = visible[0]
        if db not in visible:  # absent or private: the same answer, so nothing leaks
            raise ToolError(f"No OKF database named {db!r} that you may view. Visible: {', '.join(visible) or 'none'}.")
        return datasette.get_database(db)

    @mcp.tool(annotations=READ_ONLY)
    async def context_for(question: str, ctx: Context, db: str | None = None, mode: str | None = None,
                          budget: int | None = None) -> dict[str, Any]:
        """Fetch what a knowledge bundle says about a question, before answering it.

        Call this first for any question about the bundle's people, places,
        events or rules. Returns `context`, a block of facts and note excerpts
        ready to read (cite notes by the ids in square brackets), and `nodes`,
        the notes it drew on (id, title, `via`: why it was picked, `why`: the
        same as data, trust tier). If `confident` is false the bundle holds no
        good match: say so rather than guess. mode: hybrid (default), vector,
        keyword or graph-walk; budget: tokens of context, 100 to 20000 (default
        3000; both as the server is configured). db: one bundle; left out, every
        bundle you may view is asked and their notes share the budget (each
        node then names its `db`)."""
        question = " ".join((question or "").split())
        if not question:
            raise ToolError("question is empty.")
        if len(question) > MAX_QUESTION:
            raise ToolError(f"question is {len(question)} characters; at most {MAX_QUESTION}.")
        try:  # the server's configured defaults, as /-/context_for.json uses them, with the caller's on top
            options = configured_options(datasette).with_(mode=mode, budget=budget)
        except BadOption as error:
            raise ToolError(f"{error}.") from None
        if db is None and len(visible := await visible_to(ctx)) > 1:
            result = await ask_databases(datasette, visible, question, options)
            return {
                "database": "*", "databases": visible, "question": question, "confident": result["confident"],
                "context": result["context"],
                "nodes": [{"db": n["db"], "id": n["id"], "title": n["title"], "via": n["via"], "why": n["why"],
                           "trust": n["trust"]} for n in result["nodes"]],
            }
        database = await database_for(ctx, db)
        try:
            result = await database.execute_fn(lambda conn: run_context_for(conn, question, options))
        except (OutdatedDatabase, EmbeddingError) as error:
            raise ToolError(str(error)) from None
        return {
            "database": database.name, "question": question, "confident": result["confident"],
            "context": result["context"], "vectors": result["vectors"],
            "nodes": [{"id": n["id"], "title": n["title"], "via": n["via"], "why": n["why"], "trust": n["trust"]}
                      for n in result["nodes"]],
        }

    @mcp.tool(annotations=READ_ONLY)
    async def concept(id: str, ctx: Context, db: str | None = None) -> dict[str, Any]:
        """Read one note of the bundle by its id (as context_for or related give them, e.g. campaign/people/mira-vell).

        Returns its text (cut at 6,000 characters; `truncated` says so), its
        frontmatter, and the notes it links to and is linked from (40 each;
        the `_total` fields count them all). An unknown id gets suggestions."""
        checked_id(id)
        database = await database_for(ctx, db)

        def read(conn: Any) -> tuple[dict[str, Any] | None, list[str]]:
            note = read_concept(conn, id)
            return note, (similar_ids(conn, id) if note is None else [])

        note, like = await database.execute_fn(read)
        if note is None:
            raise ToolError(f"No note with id {id!r}." + (f" Did you mean: {', '.join(like)}?" if like else ""))
        return {"database": database.name, **note}

    @mcp.tool(annotations=READ_ONLY)
    async def related(id: str, ctx: Context, db: str | None = None, hops: int = 1) -> dict[str, Any]:
        """The notes around one note, following its links both ways (hops 1 to 3), strongest first.

        Use it to explore a note's neighbourhood after context_for or concept.
        The walk damps very connected notes and steps over index notes; at most
        25 notes come back, each with the hop, the note it was reached from and
        the link's predicate."""
        checked_id(id)
        if not 1 <= hops <= MAX_HOPS:
            raise ToolError(f"hops must be between 1 and {MAX_HOPS}.")
        database = await database_for(ctx, db)

        def walk(conn: Any) -> tuple[list[dict[str, Any]] | None, list[str], dict[str, str]]:
            if conn.execute("select 1 from concepts where id = ?", [id]).fetchone() is None:
                return None, similar_ids(conn, id), {}
            found = graph_expand(conn, [id], WalkOptions(hops=hops, cap=MAX_RELATED))
            titles = dict(conn.execute("select id, title from concepts where id in (select value from json_each(?))",
                                       [json.dumps([f["id"] for f in found])]))
            return found, [], titles

        found, like, titles = await database.execute_fn(walk)
        if found is None:
            raise ToolError(f"No note with id {id!r}." + (f" Did you mean: {', '.join(like)}?" if like else ""))
        return {"database": database.name, "id": id, "hops": hops, "related": [
            {"id": f["id"], "title": titles.get(f["id"]), "hop": f["hop"], "via": f["via"],
             "predicate": f["predicate"], "score": round(f["score"], 6)} for f in found]}

    @mcp.tool(annotations=READ_ONLY)
    async def lint(ctx: Context, db: str | None = None, check: str | None = None) -> dict[str, Any]:
        """Check the bundle's health: dead and ambiguous links, orphans, stale or contradictory notes, and more.

        Without `check`, runs every check and returns each one's title, level
        (error or warning), what it means and how to fix it, and its findings
        (at most 50 rows each; `count` is the full number). With `check`, runs
        only that one (names as returned here, e.g. dead_links)."""
        multi_valued = plugin_config(datasette).get("multi_valued_predicates")
        names = sorted(c.name.removeprefix("lint_") for c in checks(multi_valued))
        if check is not None and check not in names:
            raise ToolError(f"Unknown check {check!r}. Checks: {', '.join(names)}.")
        database = await database_for(ctx, db)

        def run(conn: Any) -> list[dict[str, Any]]:
            return [{**{k: r[k] for k in ("name", "title", "level", "description")}, "count": len(r["rows"]),
                     "rows": [dict(zip(r["columns"], row)) for row in r["rows"][:MAX_LINT_ROWS]]}
                    for r in run_lint(conn, multi_valued, only=check)]

        return {"database": database.name, "checks": await database.execute_fn(run)}
