"""/-/context_for: the JSON API scripts call and the page people ask questions on.

The handlers validate parameters (400 with a JSON error naming the parameter),
check Datasette permissions (403, revealing nothing), and run `context_for` on
the database's own connection, where prepare_connection has already loaded
sqlite-vec and our SQL functions.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from datasette.utils.asgi import Forbidden, Response

from .access import configured_options, okf_databases, visible_databases
from .embed import EmbeddingError
from .options import MODES, BadOption, ContextOptions
from .retrieve import context_for
from .schema import OutdatedDatabase
from .titles import MAX_QUESTION  # the SQL functions' limit too: one for every way in


class BadRequest(Exception):
    def __init__(self, parameter: str, message: str):
        super().__init__(message)
        self.parameter = parameter


async def parse(datasette, request) -> dict[str, Any]:
    """The request's parameters, checked; raises BadRequest naming the first bad one."""
    args = request.args
    question = (args.get("q") or "").strip()
    if not question:
        raise BadRequest("q", "q is required: the question to answer")
    if len(question) > MAX_QUESTION:
        raise BadRequest("q", f"q is {len(question)} characters; at most {MAX_QUESTION}")
    name = args.get("db")
    if not name:
        visible = await visible_databases(datasette, request.actor)
        if len(visible) != 1:
            raise BadRequest("db", f"db is required when {len(visible)} OKF databases are visible: {', '.join(visible)}")
        name = visible[0]
    elif name not in await okf_databases(datasette):
        raise BadRequest("db", f"unknown OKF database {name!r}")
    try:
        options = configured_options(datasette).with_request(args)
    except BadOption as error:
        raise BadRequest(error.parameter, str(error)) from None
    return {"question": question, "db": name, "options": options}


async def run(datasette, request) -> tuple[dict[str, Any], dict[str, Any]]:
    params = await parse(datasette, request)
    await datasette.ensure_permissions(request.actor, [("view-database", params["db"]), "view-instance"])
    database = datasette.get_database(params["db"])
    result = await database.execute_fn(
        lambda conn: context_for(conn, params["question"], params["options"])
    )
    return params, result


async def context_for_json(datasette, request):
    try:
        _, result = await run(datasette, request)
    except BadRequest as error:
        return Response.json({"ok": False, "parameter": error.parameter, "error": str(error)}, status=400)
    except Forbidden:
        return Response.json({"ok": False, "error": "forbidden"}, status=403)
    except EmbeddingError as error:
        return Response.json({"ok": False, "error": str(error)}, status=503)
    except OutdatedDatabase as error:
        return Response.json({"ok": False, "parameter": "db", "error": str(error)}, status=409)
    return Response.json(result)


async def context_for_page(datasette, request):
    context: dict[str, Any] = {"question": request.args.get("q") or "", "result": None, "error": None,
                               "modes": MODES, "databases": await visible_databases(datasette, request.actor)}
    status = 200
    if request.args.get("q") is not None:
        try:
            params, result = await run(datasette, request)
        except BadRequest as error:
            context["error"], status = f"{error.parameter}: {error}", 400
        except Forbidden:
            return Response.html("Forbidden", status=403)
        except EmbeddingError as error:
            context["error"], status = str(error), 503
        except OutdatedDatabase as error:
            context["error"], status = str(error), 409
        else:
            context.update(page_view(datasette, params, result))
    context["selected_db"] = request.args.get("db") or (context["databases"][0] if context["databases"] else "")
    context["selected_mode"] = request.args.get("mode") or "hybrid"
    html = await datasette.render_template("okf_context_for.html", context, request=request)
    return Response.html(html, status=status)


def page_view(datasette, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """What the template shows: nodes with row links and badges, SQL with editor links, the picture."""
    db = params["db"]
    base = datasette.urls.database(db)
    nodes = []
    seeds = {s["id"]: s for s in result["seeds"]}
    for node in result["nodes"]:
        nodes.append({
            **node,
            "url": datasette.urls.row(db, "concepts", quote(node["id"], safe="")),
            "ranks": seeds.get(node["id"], {}).get("ranks"),
        })
    sql = []
    for stage, statement in result["sql"].items():  # each with the parameters it ran with
        used = {key: value for key, value in result["params"][stage].items() if f":{key}" in statement}
        sql.append({"stage": stage, "sql": statement, "url": f"{base}?{urlencode({'sql': statement, **used})}",
                    "ms": result["timings_ms"].get(stage)})
    options: ContextOptions = params["options"]
    asked = {name: getattr(options, name) for name in ContextOptions.PER_REQUEST}
    return {"result": result, "nodes": nodes, "sql": sql, "db": db,
            "json_url": f"/-/context_for.json?{urlencode({'q': params['question'], 'db': db, **asked})}",
            "svg": neighbourhood_svg(result)}


def neighbourhood_svg(result: dict[str, Any], size: int = 420) -> str:
    """Seeds on an inner ring, walked notes on an outer ring, the walk's edges between them."""
    nodes = result["nodes"]
    if not nodes:
        return ""
    seeds = [n for n in nodes if n["why"]["kind"] == "seed"]
    walked = [n for n in nodes if n["why"]["kind"] != "seed"]  # by the walk, or filling in a series
    centre = size / 2
    position: dict[str, tuple[float, float]] = {}
    for ring, radius in ((seeds, size * 0.2 if len(seeds) > 1 else 0), (walked, size * 0.4)):
        for i, node in enumerate(ring):
            angle = 2 * math.pi * i / max(len(ring), 1) - math.pi / 2
            position[node["id"]] = (centre + radius * math.cos(angle), centre + radius * math.sin(angle))
    parts = [(f'<svg class="okf-neighbourhood" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" '
              f'width="{size}" height="{size}" role="img" aria-label="Neighbourhood the walk used">')]
    for node in walked:
        via = node["why"].get("from") or node["why"].get("after") or node["why"].get("before")
        if via in position:
            (x1, y1), (x2, y2) = position[via], position[node["id"]]
            parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#999" stroke-width="1.5"/>')
    for node in nodes:
        x, y = position[node["id"]]
        seed = node in seeds
        colour = "#2b6cb0" if seed else "#dd6b20"
        title = escape(node["title"])
        parts.append(
            f'<g class="{"okf-seed" if seed else "okf-walked"}"><title>{title} — {escape(node["via"])}</title>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{9 if seed else 7}" fill="{colour}"/>'
            f'<text x="{x:.1f}" y="{y + 20:.1f}" font-size="10" text-anchor="middle">{escape(node["title"][:22])}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
