"""Which attached databases are OKF databases, which of them an actor may see, and the plugin's configuration.

Shared by every Datasette surface (the JSON API and page, the MCP tools, the
hooks), so that each lists the same databases and answers with the same options.
"""

from __future__ import annotations

from typing import Any

from .options import ContextOptions
from .schema import has_okf_tables

PLUGIN = "datasette-okf"


async def okf_databases(datasette: Any) -> list[str]:
    """Attached databases built by datasette-okf (they have concepts, edges and meta tables)."""
    names = []
    for name, db in datasette.databases.items():
        if name == "_internal":
            continue
        if has_okf_tables(await db.table_names()):
            names.append(name)
    return names


async def visible_databases(datasette: Any, actor: Any) -> list[str]:
    """The OKF databases `actor` may view: the only names a page or an error message may show."""
    return [name for name in await okf_databases(datasette) if await datasette.permission_allowed(
        actor, "view-database", resource=name, default=True)]


def plugin_config(datasette: Any) -> dict[str, Any]:
    """`plugins: datasette-okf:` of metadata.yml (empty when there is none)."""
    return datasette.plugin_config(PLUGIN) or {}


def configured_options(datasette: Any) -> ContextOptions:
    """context_for's options with the plugin configuration's defaults (mode, k, budget, thresholds, weights)."""
    return ContextOptions.from_config(plugin_config(datasette))
