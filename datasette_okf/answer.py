"""Answers from the terminal: context from a local file or a remote Datasette, a grounded prompt, citations.

Used by the llm plugin (`llm okf`, the OKF toolbox, the `okf:` fragment loader);
kept apart from the hooks so each piece can be tested without llm's CLI.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import llm

from .embed import unknown_model_message, with_deadline
from .notes import read_concept, similar_ids
from .retrieve import context_for

SYSTEM_PROMPT = """You answer questions about a knowledge bundle using only the context below the question.
Rules:
- Use only facts stated in the context. If the context does not contain the answer, say so plainly.
- Cite the notes you used by their id in square brackets, e.g. [bundle/folder/note].
- Facts marked STALE or SUPERSEDED may no longer be true: say so if you rely on them.
- Be brief."""
REMOTE_TIMEOUT = 30


class AnswerError(Exception):
    """A clear, one-line reason the question could not be asked."""


def check_database(db: str | Path) -> Path:
    """The path, if it names a database built by datasette-okf; otherwise a clear AnswerError."""
    path = Path(db)
    if not path.is_file():
        raise AnswerError(f"no such database file: {path}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
        conn.close()
    except sqlite3.DatabaseError as error:
        raise AnswerError(f"{path} is not a SQLite database ({error})") from None
    if not {"concepts", "edges", "meta"} <= tables:
        raise AnswerError(f"{path} is not a datasette-okf database (build one with: datasette okf build BUNDLE)")
    return path


def local_context(db: str | Path, question: str, **options: Any) -> dict[str, Any]:
    """context_for on a database file, after checking that it is one of ours."""
    try:
        return context_for(str(check_database(db)), question, **options)
    except ValueError as error:  # an outdated file, or a bad option
        raise AnswerError(str(error)) from None


TOKEN_VARIABLE = "OKF_DATASETTE_TOKEN"  # an environment variable, not an option: kept out of shell history


def remote_context(url: str, question: str, db: str | None = None, **options: Any) -> dict[str, Any]:
    """The same JSON from a Datasette's /-/context_for.json; `url` is the instance (or any page on it).
    A private database needs $OKF_DATASETTE_TOKEN, sent as a bearer token."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AnswerError(f"--url must be an http(s) URL of a Datasette instance, not {url!r}")
    query = {"q": question, **({"db": db} if db else {}),
             **{k: v for k, v in options.items() if k in ("mode", "k", "budget", "hops", "max_seeds")}}
    endpoint = f"{parts.scheme}://{parts.netloc}/-/context_for.json?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(endpoint)
    token = os.environ.get(TOKEN_VARIABLE)
    if token:  # for an auth plugin (datasette-auth-tokens and the like) that maps it to an actor
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=REMOTE_TIMEOUT) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        try:
            detail = json.loads(error.read()).get("error", "")
        except ValueError:
            detail = ""
        raise AnswerError(f"{endpoint} answered {error.code}{': ' + detail if detail else ''}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise AnswerError(f"could not reach {parts.scheme}://{parts.netloc}: {reason}") from None


def prompt_parts(result: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, prompt) for a confident result: the question, then the context."""
    return SYSTEM_PROMPT, f"Question: {result['question']}\n\n{result['context']}"


def cited(answer: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The context's notes whose ids the answer cites, in the order they are first cited."""
    nodes = {n["id"]: n for n in result["nodes"]}
    order = []
    for match in re.finditer(r"\[([^\[\]]+)\]", answer):
        concept_id = match.group(1).strip()
        if concept_id in nodes and concept_id not in order:
            order.append(concept_id)
    return [nodes[i] for i in order]


def get_chat_model(model_id: str | None) -> llm.Model:
    """llm's model (its default when None), looked up under a deadline; clear errors for the usual failures."""
    try:
        if model_id:
            return with_deadline(lambda: llm.get_model(model_id), f"looking up model {model_id!r}")
        return with_deadline(lambda: llm.get_model(llm.get_default_model()), "looking up llm's default model")
    except llm.UnknownModelError:
        name = model_id or llm.get_default_model()
        raise AnswerError(unknown_model_message(name, kind="model", listing="llm models")) from None


def parse_fragment_argument(argument: str) -> tuple[str, str]:
    """`okf:PATH:QUESTION` (PATH ending .db, .sqlite or .sqlite3) or `okf:PATH::QUESTION` for any PATH.

    Both forms allow colons in the question; the second also in the path.
    """
    if "::" in argument:
        path, _, question = argument.partition("::")
    else:
        match = re.match(r"^(.*?\.(?:db|sqlite3?)):(.*)$", argument, re.S)
        if not match:
            raise AnswerError(
                f"okf: fragments are okf:PATH.db:QUESTION or okf:PATH::QUESTION, not okf:{argument}"
            )
        path, question = match.groups()
    if not question.strip():
        raise AnswerError("okf: fragment has no question after the database path")
    return path, question.strip()


class OKF(llm.Toolbox):
    """Search a datasette-okf knowledge bundle: retrieve context for a question, or read one note."""

    MAX_NOTE_CHARS = 6000

    def __init__(self, db: str, budget: int = 1500):
        self.db = db
        self.budget = budget

    def context_for(self, question: str, mode: str = "hybrid") -> str:
        """The notes and facts of the bundle that answer `question` (mode: hybrid, vector, keyword or graph-walk).

        Returns the context block, or says there is no confident match."""
        try:
            result = local_context(self.db, question, mode=mode, budget=self.budget)
        except (AnswerError, ValueError) as error:
            return f"error: {error}"
        return result["context"]

    def concept(self, id: str) -> str:
        """One note by its concept id: its text (cut at 6,000 characters) and the notes it links to and from."""
        try:
            path = check_database(self.db)
        except AnswerError as error:
            return f"error: {error}"
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            note = read_concept(conn, id, self.MAX_NOTE_CHARS)
            like = similar_ids(conn, id) if note is None else []
        finally:
            conn.close()
        if note is None:
            return f"no concept with id {id!r}" + (f"; did you mean: {', '.join(like)}" if like else "")
        text = note["text"] + ("\n[… cut]" if note["truncated"] else "")
        lines = [f"# {note['title']} ({id})", f"type: {note['type']}; path: {note['path']}; trust: {note['trust']}"]
        if note["stale_after"]:
            lines.append(f"stale_after: {note['stale_after']}")
        if note["superseded_by"]:
            lines.append(f"SUPERSEDED by {note['superseded_by']}")
        lines += ["", text.strip(), "",
                  "links to: " + (", ".join(f"{e['id']} ({e['predicate']})" for e in note["links_to"]) or "none"),
                  "linked from: " + (", ".join(f"{e['id']} ({e['predicate']})" for e in note["linked_from"]) or "none")]
        return "\n".join(lines)
