"""datasette-okf: OKF bundles and Obsidian vaults as one SQLite file, served by Datasette.

The hooks below only wire things together; each concern lives in its own module.
"""

from datasette import hookimpl

__version__ = "0.1.0"

from .retrieve import context_for  # noqa: E402  the Python API: context_for(db, question, **options)

__all__ = ["context_for", "__version__"]


@hookimpl
def register_commands(cli):
    from .cli import okf

    cli.add_command(okf)


@hookimpl
def prepare_connection(conn):
    from .sqlfunctions import prepare_connection as prepare

    prepare(conn)
