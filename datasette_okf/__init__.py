"""datasette-okf: OKF bundles and Obsidian vaults as one SQLite file, served by Datasette.

The hooks below only wire things together; each concern lives in its own module.
Code map, in data-flow order (files -> records -> SQLite -> queries -> context -> surfaces);
a module imports only modules above it in this list (tests/test_layers.py):

  schema markdown folder_types titles categories dates deadline locks   what a database is; readable text; types by folder; words; the tags and folders a question names; dates; deadlines; locks
  frontmatter links chunks embed vector_cache calibrate   YAML; links; chunks; embedding models; the shared vector cache; the gate's calibration
  bundle derived store                    files -> records; derived files; records -> SQLite (the build)
  per_build graph hamming nearest sqlfunctions   made once per build for every connection; the walk; 1-bit vector candidates; exact nearest chunks; SQL functions on a connection
  options render retrieve                 ContextOptions; context text; context_for's stages
  lint evaluate notes rebuild_candidates fileback convert trigger watch   what runs over a built database or a vault
  access across metadata cells note_page answer web mcp_tools cli llm_plugin   the surfaces: several databases at once; Datasette (metadata, lint links, a concept's page), MCP, CLIs, llm
"""

import importlib.util
from typing import Any

import pluggy

__version__ = "0.1.0"
__all__ = ["__version__", "context_for"]

# Datasette's own marker (datasette.hookimpl is this object), made here so that importing the
# package stays cheap: `python -m datasette_okf.trigger` runs on every prompt of an agent.
hookimpl = pluggy.HookimplMarker("datasette")


def __getattr__(name: str) -> Any:
    if name == "context_for":  # the Python API: context_for(db, question, **options)
        from .retrieve import context_for

        return context_for
    raise AttributeError(name)


@hookimpl
def register_commands(cli):
    from .cli import okf

    cli.add_command(okf)


@hookimpl
def prepare_connection(conn):
    from .sqlfunctions import prepare_connection as prepare

    prepare(conn)


@hookimpl
def startup(datasette):
    async def inner():
        from .web import prepare_databases

        await prepare_databases(datasette)

    return inner


@hookimpl
def register_routes():
    from .web import context_for_json, context_for_page

    return [
        (r"^/-/context_for\.json$", context_for_json),
        (r"^/-/context_for$", context_for_page),
    ]


@hookimpl
def database_actions(datasette, actor, database):
    async def inner():
        from .access import okf_databases

        if database in await okf_databases(datasette):
            return [{"href": f"/-/context_for?db={database}", "label": "Ask this bundle (context_for)"}]
        return []

    return inner


@hookimpl
def get_metadata(datasette, key, database, table):
    from .metadata import get_metadata as metadata

    return metadata(datasette, key)


@hookimpl
def extra_template_vars(template, database, table, view_name, request, datasette):
    if view_name != "row" or table != "concepts":
        return {}

    async def inner():
        from .metadata import database_metadata
        from .note_page import concept_id_from, note_view

        concept_id = concept_id_from(request)
        if concept_id is None or database_metadata(datasette.get_database(database)) is None:
            return {}
        return {"okf_note": await note_view(datasette, database, concept_id)}

    return inner


@hookimpl
def menu_links(datasette, actor):
    return [{"href": "/-/context_for", "label": "Ask a bundle (context_for)"}]


@hookimpl
def canned_queries(datasette, database):
    async def inner():
        from .access import plugin_config
        from .lint import canned_queries as queries
        from .lint import choose_profile
        from .metadata import database_metadata

        db = datasette.get_database(database)
        if database_metadata(db) is None:  # not an OKF database (cached per file: no query)
            return {}
        profile = await db.execute_fn(lambda conn: choose_profile(conn).name)  # errors first under it
        return queries(plugin_config(datasette).get("multi_valued_predicates"), profile)

    return inner


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    if table is None and column in ("concept", "check"):  # cells.COLUMNS: any other cell costs no import
        from .cells import render_cell as render

        return render(row, value, column, table, database, datasette)
    return None


if importlib.util.find_spec("datasette_mcp") is not None:  # the [mcp] extra: only then is the hook known

    @hookimpl
    def register_mcp_tools(datasette, mcp):
        from .mcp_tools import register

        register(datasette, mcp)
