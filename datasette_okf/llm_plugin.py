"""The llm plugin: the default embedding model, `llm okf`, the OKF toolbox and the `okf:` fragment loader.

The hooks only wire things; answer.py does the work.
"""

from __future__ import annotations

import json
import math
from contextlib import ExitStack, closing
from pathlib import Path

import click
import llm
from click_default_group import DefaultGroup

from .across import ask_each
from .answer import (
    OKF,
    REMOTE_TIMEOUT,
    AnswerError,
    check_database,
    cited,
    get_chat_model,
    local_context,
    parse_fragment_argument,
    prompt_parts,
    read_only,
    remote_context,
)
from .embed import DEFAULT_ALIASES, EmbeddingError, OKFMiniLM
from .fileback import FileBackError, file_back
from .options import MODES, BadOption, ContextOptions
from .retrieve import nearest_notes

DEFAULTS = ContextOptions()


@llm.hookimpl
def register_embedding_models(register):
    register(OKFMiniLM(), aliases=DEFAULT_ALIASES)


@llm.hookimpl
def register_tools(register):
    register(OKF)


@llm.hookimpl
def register_fragment_loaders(register):
    register("okf", okf_fragment)


def okf_fragment(argument: str) -> llm.Fragment:
    """`-f okf:PATH.db:QUESTION` (or `okf:PATH::QUESTION`): the context block for QUESTION."""
    try:
        path, question = parse_fragment_argument(argument)
        result = local_context(path, question)
    except (AnswerError, EmbeddingError) as error:
        raise ValueError(str(error)) from None
    return llm.Fragment(result["context"], f"okf:{argument}")


def _retrieve(question: str, databases: tuple[str, ...], url: str | None, mode: str, budget: int,
              timeout: float | None) -> dict:
    """The context_for result from local files (-d, repeatable: their notes share one budget, across.py) or a
    remote Datasette (--url, with -d naming its database, or * for every one you may view)."""
    if not databases and not url:
        raise click.ClickException("say where the notes are: -d DATABASE.db, or --url http://host/ for a Datasette")
    if timeout is not None and not url:
        raise click.ClickException("--timeout bounds the --url request; a local -d database has none to bound")
    if url and len(databases) > 1:
        raise click.ClickException("with --url, -d names one database on that Datasette, or * for all you may view")
    try:
        options = DEFAULTS.with_(mode=mode, budget=budget)
        if url:
            return remote_context(url, question, db=databases[0] if databases else None, mode=mode, budget=budget,
                                  timeout=REMOTE_TIMEOUT if timeout is None else timeout)
        if len(databases) > 1:
            with ExitStack() as stack:
                conns = [(Path(db).stem, stack.enter_context(closing(read_only(check_database(db)))))
                         for db in databases]
                return ask_each(conns, question, options)
        return local_context(databases[0], question, options)
    except BadOption as error:
        raise click.BadParameter(str(error), param_hint=f"--{error.parameter}") from None
    except (AnswerError, EmbeddingError) as error:
        raise click.ClickException(str(error)) from None


def _positive_seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A deadline must be a positive, finite number of seconds (click's FloatRange lets nan through)."""
    if value is not None and not 0 < value < math.inf:
        raise click.BadParameter(f"must be a positive number of seconds, not {value:g}")
    return value


def _shared_options(command):
    command = click.option("-d", "--database", "databases", multiple=True,
                           help="A database built by datasette okf build; repeat it to ask several at once "
                                "(with --url: its name there, or *)")(command)
    command = click.option("--url", help="Ask a Datasette instance instead, through /-/context_for.json")(command)
    command = click.option("--timeout", type=float, metavar="SECONDS", callback=_positive_seconds,
                           help=f"With --url: give up when the whole answer has not arrived within this "
                                f"many seconds  [default: {REMOTE_TIMEOUT:g}]")(command)
    command = click.option("--mode", type=click.Choice(MODES), default=DEFAULTS.mode, show_default=True)(command)
    command = click.option("--budget", type=int, default=DEFAULTS.budget, show_default=True,
                           help="Token budget of the context")(command)
    return command


@llm.hookimpl
def register_commands(cli):
    @cli.group(cls=DefaultGroup, default="ask", default_if_no_args=False)
    def okf():
        """Answer questions from an OKF knowledge bundle (datasette-okf)."""

    @okf.command()
    @click.argument("question")
    @_shared_options
    @click.option("-m", "--model", "model_id", help="llm model to answer with (default: llm's default model)")
    @click.option("--show-context", is_flag=True, help="Print the context before the answer")
    @click.option("--json", "as_json", is_flag=True, help="Print the answer, citations and context as JSON")
    @click.option("--file-back", "file_back_dir", type=click.Path(exists=True, file_okay=False),
                  help="Also file the answer into this bundle folder as a new Concept page and rebuild -d")
    @click.option("--title", help="With --file-back: the page title (default: the question)")
    def ask(question, databases, url, timeout, mode, budget, model_id, show_context, as_json, file_back_dir, title):
        """Answer QUESTION from the notes, citing them; say so when they do not hold the answer."""
        if file_back_dir and (url or len(databases) != 1):
            raise click.ClickException("--file-back needs the local database it rebuilds (one): -d DATABASE.db, "
                                       "not --url or several -d")
        database = databases[0] if databases else None
        result = _retrieve(question, databases, url, mode, budget, timeout)
        if show_context and not as_json:
            click.echo(result["context"] + "\n", err=True)
        if not result["confident"]:
            nearest = nearest_notes(result)
            if as_json:
                click.echo(json.dumps({"question": question, "confident": False, "answer": None,
                                       "reason": result["reason"], "nearest": nearest}, indent=2))
                return
            click.echo(f"The bundle has no confident match for this question ({result['reason']}).")
            if nearest:
                click.echo("The members its series has, nearest the one asked:" if nearest[0].get("why") else
                           "Nearest notes, which may not be relevant:")
                for seed in nearest:
                    click.echo(f"  - {seed['title']} ({seed['id']}, {seed['path']})")
            return
        try:
            model = get_chat_model(model_id)
            system, prompt = prompt_parts(result)
            response = model.prompt(prompt, system=system)
            chunks = []
            for chunk in response:
                chunks.append(chunk)
                if not as_json:
                    click.echo(chunk, nl=False)
            answer = "".join(chunks)
        except (AnswerError, EmbeddingError) as error:
            raise click.ClickException(str(error)) from None
        except llm.NeedsKeyException as error:
            raise click.ClickException(f"{error} (or pick a local model with -m)") from None
        _log(response)
        sources = cited(answer, result)
        page = None
        if file_back_dir:
            try:
                page = file_back(database, file_back_dir, question, answer, model.model_id,
                                 [node["id"] for node in sources], title=title)
            except (FileBackError, EmbeddingError, ValueError) as error:
                raise click.ClickException(f"answered, but not filed back: {error}") from None
        if as_json:
            click.echo(json.dumps({"question": question, "confident": True, "answer": answer, "model": model.model_id,
                                   "cited": sources, "context": result["context"],
                                   **({"filed_back": str(page)} if page else {})}, indent=2))
            return
        click.echo("")
        if sources:
            click.echo("\nCited notes:")
            for node in sources:
                click.echo(f"  - {node['title']} ({node['id']}) {node['path']}")
        else:
            click.echo("\n(The answer cites no note from the context.)", err=True)
        if page:
            click.echo(f"\nFiled back: {page}")

    @okf.command(name="context")
    @click.argument("question")
    @_shared_options
    def context_command(question, databases, url, timeout, mode, budget):
        """Print only the context block for QUESTION (for piping into any prompt)."""
        click.echo(_retrieve(question, databases, url, mode, budget, timeout)["context"])


def _log(response) -> None:
    """Log the exchange to llm's database, as `llm prompt` does (unless `llm logs off`)."""
    import sqlite_utils
    from llm.cli import logs_db_path, logs_on
    from llm.migrations import migrate

    if logs_on():
        db = sqlite_utils.Database(logs_db_path())
        migrate(db)
        response.log_to_db(db)
