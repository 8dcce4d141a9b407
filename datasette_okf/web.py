"""/-/context_for: the JSON API scripts call and the page people ask questions on.

The handlers validate parameters (400 with a JSON error naming the parameter),
check Datasette permissions (403, revealing nothing), and run `context_for` on
the database's own connection, where prepare_connection has already loaded
sqlite-vec and our SQL functions.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import sys
import threading
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from datasette.database import QueryInterrupted
from datasette.utils import sqlite3
from datasette.utils.asgi import Forbidden, Response

from . import __version__
from .access import configured_options, okf_databases, plugin_config, visible_databases
from .across import ask_databases
from .embed import EmbeddingError, canonical_id
from .options import MODES, BadOption, ContextOptions
from .render import found_by
from .retrieve import ASKED_ROLES, context_for, found_in, nearest_notes, prepare
from .schema import IS_LOG, OutdatedDatabase, stored_model, vectors_progress
from .titles import MAX_QUESTION, coverage  # MAX_QUESTION: the SQL functions' limit too, one for every way in

ALL = "*"  # db=*: every OKF database the actor may view


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
    if name == ALL:  # every OKF database the actor may view (across.py); the others are never touched
        visible = await visible_databases(datasette, request.actor)
        if not visible:
            raise BadRequest("db", "db=* found no OKF database you may view")
        try:
            options = configured_options(datasette).with_request(args)
        except BadOption as error:
            raise BadRequest(error.parameter, str(error)) from None
        return {"question": question, "db": ALL, "databases": visible, "options": options}
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


async def permitted(datasette, request) -> dict[str, Any]:
    """The request's parameters, once the actor may view the database (Forbidden otherwise)."""
    params = await parse(datasette, request)
    for name in params.get("databases") or [params["db"]]:
        await datasette.ensure_permissions(request.actor, [("view-database", name), "view-instance"])
    return params


async def answer(datasette, params: dict[str, Any]) -> dict[str, Any]:
    if params["db"] == ALL:
        return await ask_databases(datasette, params["databases"], params["question"], params["options"])
    database = datasette.get_database(params["db"])
    return await database.execute_fn(lambda conn: context_for(conn, params["question"], params["options"]))


async def run(datasette, request) -> tuple[dict[str, Any], dict[str, Any]]:
    params = await permitted(datasette, request)
    return params, await answer(datasette, params)


CACHE_MAX_AGE = 300  # seconds; plugins: datasette-okf: cache_max_age


async def cache_headers(datasette, params: dict[str, Any]) -> dict[str, str]:
    """ETag and Cache-Control for an answer from an immutable database (`datasette -i`), else none.

    Such an answer is a function of the file, the question and the options in force (the request's on top of the
    configuration) and of this code: hashed together, a weak ETag (the timings in it vary). Cache-Control is
    public only when an anonymous visitor could read it too, so that a shared cache never serves a private
    database's answer to someone else."""
    if params["db"] == ALL:  # several files: no one hash names the answer
        return {}
    database = datasette.get_database(params["db"])
    if database.is_mutable or database.is_memory:
        return {}
    file_hash = database.cached_hash or await asyncio.to_thread(lambda: database.hash)  # read once, off the loop
    key = json.dumps([file_hash, __version__, params["question"], repr(params["options"])])
    max_age = int(plugin_config(datasette).get("cache_max_age", CACHE_MAX_AGE))
    anonymous = await datasette.permission_allowed(None, "view-database", params["db"], default=True)
    return {"ETag": f'W/"{hashlib.sha256(key.encode()).hexdigest()[:32]}"',
            "Cache-Control": f"{'public' if anonymous else 'private'}, max-age={max_age}"}


def not_modified(request, headers: dict[str, str]) -> bool:
    """Whether the request's If-None-Match names this answer's ETag (or `*`)."""
    tags = [t.strip() for t in request.headers.get("if-none-match", "").split(",")]
    etag = headers.get("ETag")
    return bool(etag) and ("*" in tags or etag in tags or etag.removeprefix("W/") in tags)


async def context_for_json(datasette, request):
    try:
        params = await permitted(datasette, request)
        headers = await cache_headers(datasette, params)
        if not_modified(request, headers):
            return Response("", status=304, headers=headers)
        result = await answer(datasette, params)
    except BadRequest as error:
        return Response.json({"ok": False, "parameter": error.parameter, "error": str(error)}, status=400)
    except Forbidden:
        return Response.json({"ok": False, "error": "forbidden"}, status=403)
    except EmbeddingError as error:
        return Response.json({"ok": False, "error": str(error)}, status=503)
    except OutdatedDatabase as error:
        return Response.json({"ok": False, "parameter": "db", "error": str(error)}, status=409)
    return Response.json(result, headers=headers)


async def context_for_page(datasette, request):
    context: dict[str, Any] = {"question": request.args.get("q") or "", "result": None, "error": None,
                               "modes": MODES, "databases": await visible_databases(datasette, request.actor)}
    status = 200
    if request.args.get("db") == ALL and request.args.get("q") is not None:
        try:
            params = await permitted(datasette, request)
            context.update(across_view(datasette, params, await answer(datasette, params)))
        except BadRequest as error:
            context["error"], status = f"{error.parameter}: {error}", 400
        except Forbidden:
            return Response.html("Forbidden", status=403)
    elif request.args.get("q") is not None:
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
            looked_up = await look_up(datasette.get_database(params["db"]), params, result)
            context.update(page_view(datasette, params, result, **looked_up))
    context["selected_db"] = request.args.get("db") or (context["databases"][0] if context["databases"] else "")
    context["selected_mode"] = request.args.get("mode") or "hybrid"
    # only a database the actor may see: a db= naming a private one gets no examples from it
    examples = (await example_questions(datasette.get_database(context["selected_db"]))
                if context["selected_db"] in context["databases"] else [])
    context["examples"] = [{"question": q, "url": "/-/context_for?" + urlencode({"q": q, "db": context["selected_db"]})}
                           for q in examples]
    context["embedding"] = (await embedding_progress(datasette.get_database(context["selected_db"]))
                            if context["selected_db"] in context["databases"] else None)
    html = await datasette.render_template("okf_context_for.html", context, request=request)
    return Response.html(html, status=status)


PREPARING = "datasette-okf prepare"  # the start-up thread's name
FOLLOWING = "datasette-okf follow"  # the Follower thread's name
FOLLOW = "DATASETTE_OKF_FOLLOW"  # set (to anything) in a server's environment: prepare again after each build
FOLLOW_DEBOUNCE_MS = 300  # a build's commit and its checkpoint are one change


async def prepare_databases(datasette) -> threading.Thread:
    """Every OKF database made ready for questions as the server starts (retrieve.prepare), on a thread of its own:
    the server answers meanwhile, and its first question then costs what any new one does, not the indexes and
    vectors of the build (0.9 s at 10k notes, 5 s at 100k). A database that cannot be prepared is one line on stderr:
    its first question makes what it needs, or says what is wrong. With FOLLOW in the environment (`build --watch
    --serve` sets it for its server) the files are followed too (Follower)."""
    names = await okf_databases(datasette)
    thread = threading.Thread(target=_prepare_each, args=(datasette, names), name=PREPARING, daemon=True)
    thread.start()
    if os.environ.get(FOLLOW):
        follower = Follower(datasette, names)
        if follower.files:
            follower.start()
    return thread


class Follower(threading.Thread):
    """Prepares a server's databases again whenever a build writes them, so that the first question after a rebuild
    costs what any new one does too (its indexes were made again at 0.14 s on the Thellade vault, ~0.5 s at 10k
    notes). A file's writes are seen by watchfiles (inotify; no polling), the file and its write-ahead log; what a
    build did not change is not made again (per_build.py), so a batch of vectors committed costs a lookup."""

    def __init__(self, datasette, names: list[str]) -> None:
        super().__init__(name=FOLLOWING, daemon=True)
        self.datasette, self.stop = datasette, threading.Event()
        paths = {name: datasette.get_database(name).path for name in names}
        self.files = {str(Path(path).resolve()): name for name, path in paths.items() if path}  # not one in memory

    def changed(self, path: str) -> str | None:
        """The database a changed path is, or is the write-ahead log of (not its -shm: readers write that). The watch
        reports paths in the resolved folders it was given: compared as they are, no file system call an event."""
        return self.files.get(path.removesuffix("-wal"))

    def run(self) -> None:
        import watchfiles  # only a following server pays for importing it

        logging.getLogger("watchfiles.main").setLevel(logging.WARNING)  # not "1 change detected" on uvicorn's log
        folders = {str(Path(path).parent) for path in self.files}
        try:
            for changes in watchfiles.watch(*folders, watch_filter=lambda _, path: self.changed(path) is not None,
                                            debounce=FOLLOW_DEBOUNCE_MS, recursive=False, stop_event=self.stop,
                                            raise_interrupt=False):
                _prepare_each(self.datasette, sorted({self.changed(path) for _, path in changes}))
        except Exception as error:  # noqa: BLE001 - a folder gone: the server serves on, questions make what they need
            print(f"datasette-okf: stopped following {', '.join(sorted(folders))}: {error}", file=sys.stderr)


def _prepare_each(datasette, names: list[str]) -> None:
    for name in names:
        try:
            conn = datasette.get_database(name).connect()  # read-only, as a reader's (prepare adds our functions)
            try:
                prepare(conn, configured_options(datasette))
            finally:
                conn.close()
        except Exception as error:  # noqa: BLE001 - a start-up convenience must never stop the server
            print(f"datasette-okf: could not prepare {name!r} for questions: {error}", file=sys.stderr)


async def embedding_progress(database) -> str | None:
    """"2,150 of 5,662 chunks" while a build (build --watch) is still computing vectors, else None."""
    def read(conn) -> tuple[int, int] | None:
        return vectors_progress(conn, canonical_id(stored_model(conn)))

    try:
        progress = await database.execute_fn(read)
    except (sqlite3.Error, QueryInterrupted):
        return None
    return f"{progress[0]:,} of {progress[1]:,} chunks" if progress else None


EXAMPLES = 3
# The best-connected notes that are neither an index, a log (OKF §9) nor an unfilled template: what a bundle is
# mostly about. `degree` is stored by the build; ties go by title, so a database always suggests the same questions.
EXAMPLES_SQL = f"""select title, type from concepts
where not is_index and not is_stub and not {IS_LOG}
  and trim(coalesce(title, '')) != ''
order by degree desc, title, id limit :limit"""
WHO = {"person", "people", "character", "npc", "deity", "god", "author", "contact"}
WHERE = {"place", "location", "region", "city", "town", "site"}


def example_question(title: str, type_: str | None) -> str:
    kind = (type_ or "").strip().casefold()
    return f"{'Who' if kind in WHO else 'Where' if kind in WHERE else 'What'} is {title}?"


async def example_questions(database, count: int = EXAMPLES) -> list[str]:
    """A few questions about this database's own notes, for the placeholder and the links under the form."""
    try:
        rows = await database.execute(EXAMPLES_SQL, {"limit": count * 3})
    except (sqlite3.Error, QueryInterrupted):  # an outdated or odd database: no examples, not an error page
        return []
    questions = dict.fromkeys(example_question(row["title"].strip(), row["type"]) for row in rows)
    return list(questions)[:count]


def referenced(why: dict[str, Any]) -> list[str]:
    """The ids of the notes a node's `why` names."""
    return [why[key] for key in ("from", "after", "before", "resolved_from", "bridged_from", "linked_with")
            if why.get(key)]


async def look_up(database, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """What the page shows that the JSON does not carry: the titles of notes the why lines name that are not
    in the response (a hop's source the budget left out, a superseded note), and how much of the question each
    nearest note covers when there is no confident match (the gate's keyword test, per note)."""
    titles = {s["id"]: s["title"] for s in result["seeds"]} | {n["id"]: n["title"] for n in result["nodes"]}
    missing = sorted({i for n in result["nodes"] for i in referenced(n["why"])} - set(titles))
    nearest = [] if result["confident"] else [s["id"] for s in nearest_notes(result)]
    covered: dict[str, float] = {}
    try:
        if missing:
            rows = await database.execute("select id, title from concepts where id in (select value from json_each(:ids))",
                                          {"ids": json.dumps(missing)})
            titles.update({row["id"]: row["title"] for row in rows})
        if nearest:
            rows = await database.execute(
                "select id, title || ' ' || coalesce(description, '') || ' ' || coalesce(tags, '') || ' ' || body"
                " as text from concepts where id in (select value from json_each(:ids))", {"ids": json.dumps(nearest)})
            covered = {row["id"]: coverage(params["question"], row["text"] or "") for row in rows}
    except (sqlite3.Error, QueryInterrupted):  # the answer stands without them: ids instead of titles
        pass
    return {"titles": titles, "covered": covered}


def why_parts(why: dict[str, Any], via: str, titles: dict[str, str]) -> list[tuple[str, str | None]]:
    """A node's why line as (text, id) pieces: the notes it names by title, each with its id (None: plain text).
    The same words as the JSON's `via`, which names them by id."""
    parts = _found_parts(why, via, titles)
    if why.get("category"):  # a note also in the set the question asks for
        parts.append((f"; category: {', '.join(why['category'])}", None))
    return parts


def _found_parts(why: dict[str, Any], via: str, titles: dict[str, str]) -> list[tuple[str, str | None]]:
    def note(concept_id: str) -> tuple[str, str]:
        return titles.get(concept_id) or concept_id, concept_id

    kind = why.get("kind")
    if kind == "hop":
        return [(f"hop {why['hop']} via ", None), note(why["from"]), (f" ({why['predicate']})", None)]
    if kind == "series" and why.get("role") in ASKED_ROLES:
        return [(f"series: {ASKED_ROLES[why['role']]}, in the series of ", None), note(why["after"])]
    if kind == "series":
        parts: list[tuple[str, str | None]] = [("series: ", None)]
        for side in ("after", "before"):
            if why.get(side):
                parts += [(", " if len(parts) > 1 else "", None), (f"{side} ", None), note(why[side])]
        return parts
    if kind in ("seed", "next", "linked"):
        parts = [(found_in(why), None)]
        if why.get("linked_with"):
            parts += [(", linked with ", None), note(why["linked_with"])]
        if why.get("resolved_from"):
            parts += [(" (resolved from superseded ", None), note(why["resolved_from"]), (")", None)]
        if why.get("bridged_from"):
            parts += [(" (second round, through ", None), note(why["bridged_from"]), (")", None)]
        return parts
    return [(via.split("; category: ")[0], None)]  # a kind this page does not know yet


def node_view(datasette, db: str, node: dict[str, Any], titles: dict[str, str]) -> dict[str, Any]:
    """A node as the template lists it: linked to its row in `db`, its why line by title."""
    parts = why_parts(node["why"], node["via"], titles)
    return {**node, "url": datasette.urls.row(db, "concepts", quote(node["id"], safe="")), "why_parts": parts,
            "why_text": "".join(text for text, _ in parts)}


def page_view(datasette, params: dict[str, Any], result: dict[str, Any], titles: dict[str, str] | None = None,
              covered: dict[str, float] | None = None) -> dict[str, Any]:
    """What the template shows: nodes with row links, badges and titled why lines, the nearest notes when
    there is no confident match, SQL with editor links, the picture."""
    db = params["db"]
    base = datasette.urls.database(db)
    titles = titles or {}
    nodes = []
    seeds = {s["id"]: s for s in result["seeds"]}
    for node in result["nodes"]:
        ranks = seeds.get(node["id"], {}).get("ranks") or node["why"].get("ranks")  # a seed's, or the lists' next
        nodes.append({**node_view(datasette, db, node, titles), "ranks": ranks})
    nearest = []
    if not result["confident"]:
        for seed in nearest_notes(result):
            share = (covered or {}).get(seed["id"])
            nearest.append({**seed, "url": datasette.urls.row(db, "concepts", quote(seed["id"], safe="")),
                            "found_by": seed.get("why") or found_by(seed.get("ranks") or {}),
                            "coverage": None if share is None else f"{share:.0%}"})
    sql = []
    for stage, statement in result["sql"].items():  # each with the parameters it ran with
        used = {key: value for key, value in result["params"][stage].items() if f":{key}" in statement}
        sql.append({"stage": stage, "sql": statement, "url": f"{base}?{urlencode({'sql': statement, **used})}",
                    "ms": result["timings_ms"].get(stage)})
    options: ContextOptions = params["options"]
    asked = {name: getattr(options, name) for name in ContextOptions.PER_REQUEST}
    return {"result": result, "nodes": nodes, "nearest": nearest, "sql": sql, "db": db,
            "coverage_threshold": f"{options.coverage_threshold:.0%}",
            "json_url": f"/-/context_for.json?{urlencode({'q': params['question'], 'db': db, **asked})}",
            "svg": neighbourhood_svg(result, why={n["id"]: n["why_text"] for n in nodes})}


def across_view(datasette, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """What the template shows for db=*: each note linked to its row in its own database, with its why line by
    title, and each database's part in the answer."""
    titles = {(s["db"], s["id"]): s["title"] for s in result["seeds"]} | {
        (n["db"], n["id"]): n["title"] for n in result["nodes"]}
    nodes = [node_view(datasette, node["db"], node,
                       {concept_id: title for (db, concept_id), title in titles.items() if db == node["db"]})
             for node in result["nodes"]]
    options: ContextOptions = params["options"]
    asked = {name: getattr(options, name) for name in ContextOptions.PER_REQUEST}
    return {"result": result, "across": True, "nodes": nodes,
            "per_database": [{"db": name, **part} for name, part in result["per_database"].items()],
            "json_url": f"/-/context_for.json?{urlencode({'q': params['question'], 'db': ALL, **asked})}"}


def neighbourhood_svg(result: dict[str, Any], size: int = 420, why: dict[str, str] | None = None) -> str:
    """Seeds on an inner ring, walked notes on an outer ring, the walk's edges between them; `why`: each node's
    why line as the page shows it (by title), for its tooltip. Each label takes the first place around its dot
    that no dot or label placed before it covers (_label_places); centred under their dots, two neighbouring
    seeds' labels overlapped on a real vault (seven seeds 73 px apart, labels up to 130)."""
    nodes = result["nodes"]
    if not nodes:
        return ""
    seeds = [n for n in nodes if n["why"]["kind"] == "seed"]
    walked = [n for n in nodes if n["why"]["kind"] != "seed"]  # by the walk, or filling in a series
    width = size + 2 * LABEL_ROOM  # wider than tall: a label beside a dot at the ring's side
    position: dict[str, tuple[float, float]] = {}
    for ring, radius in ((seeds, size * 0.2 if len(seeds) > 1 else 0), (walked, size * 0.4)):
        for i, node in enumerate(ring):
            angle = 2 * math.pi * i / max(len(ring), 1) - math.pi / 2
            position[node["id"]] = (width / 2 + radius * math.cos(angle), size / 2 + radius * math.sin(angle))
    texts = [_label(n["title"]) for n in nodes]
    labels = _label_places([(position[n["id"]], text) for n, text in zip(nodes, texts)], width, size)
    parts = [(f'<svg class="okf-neighbourhood" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {size}" '
              f'width="{width}" height="{size}" role="img" aria-label="Neighbourhood the walk used">')]
    for node in walked:
        via = next((node["why"][key] for key in ("from", "after", "before", "linked_with") if node["why"].get(key)), None)
        if via in position:
            (x1, y1), (x2, y2) = position[via], position[node["id"]]
            parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#999" stroke-width="1.5"/>')
    for node, text, (label_x, label_y, anchor) in zip(nodes, texts, labels):
        x, y = position[node["id"]]
        seed = node in seeds
        colour = "#2b6cb0" if seed else "#dd6b20"
        title = escape(node["title"])
        parts.append(
            f'<g class="{"okf-seed" if seed else "okf-walked"}"><title>{title} — {escape((why or {}).get(node["id"], node["via"]))}</title>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{9 if seed else 7}" fill="{colour}"/>'
            f'<text x="{label_x:.1f}" y="{label_y:.1f}" font-size="10" text-anchor="{anchor}">'
            f'{escape(text)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


LABEL_ROOM = 110  # px beside the rings, for a label at the side of a dot at the ring's side
CHAR_WIDTH = 5.6  # px, a character of a 10 px sans-serif label, for telling whether two labels would overlap


def _label_places(dots: list[tuple[tuple[float, float], str]], width: float,
                  height: float) -> list[tuple[float, float, str]]:
    """(x, y, text-anchor) of each dot's label: the first of under, over, then beside it (away from the centre
    first) whose box stays in the picture and no dot and no label already placed covers; under it when every place
    is taken."""
    taken = [(x - 9, y - 9, x + 9, y + 9) for (x, y), _ in dots]
    places = []
    for (x, y), text in dots:
        wide = CHAR_WIDTH * len(text)
        outward = 1 if x >= width / 2 else -1
        candidates = [(x, y + 20, "middle"), (x, y - 14, "middle"),
                      (x + 13 * outward, y + 3.5, "start" if outward > 0 else "end"),
                      (x - 13 * outward, y + 3.5, "end" if outward > 0 else "start")]
        for label_x, label_y, anchor in candidates:
            left = label_x - wide / 2 if anchor == "middle" else label_x if anchor == "start" else label_x - wide
            box = (left, label_y - 9, left + wide, label_y + 2)
            inside = 0 <= box[0] and box[2] <= width and 0 <= box[1] and box[3] <= height
            if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
                break
        else:
            label_x, label_y, anchor = candidates[0]
            box = (x - wide / 2, y + 11, x + wide / 2, y + 22)
        taken.append(box)
        places.append((label_x, label_y, anchor))
    return places


LABEL = 24  # characters of a title under its dot; the whole title is its tooltip


def _label(title: str) -> str:
    """A title short enough to sit under its dot, marked when cut: Thellade's "Campaign 2 - Session 06 - Into the
    Hollow Flame" was cut to "Campaign 2 - Session 0", the same for every session of the campaign."""
    return title if len(title) <= LABEL else title[: LABEL - 1].rstrip() + "…"
