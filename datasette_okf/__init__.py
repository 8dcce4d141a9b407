"""datasette-okf: OKF bundles and Obsidian vaults as one SQLite file, served by Datasette.

The hooks below only wire things together; each concern lives in its own module.
"""

from datasette import hookimpl

__version__ = "0.1.0"


@hookimpl
def register_commands(cli):
    from .cli import okf

    cli.add_command(okf)


@hookimpl
def prepare_connection(conn):
    from .sqlfunctions import prepare_connection as prepare

    prepare(conn)
