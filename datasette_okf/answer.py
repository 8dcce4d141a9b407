"""Answers from the terminal: context from a local file or a remote Datasette, a grounded prompt, citations.

Used by the llm plugin (`llm okf`, the OKF toolbox, the `okf:` fragment loader);
kept apart from the hooks so each piece can be tested without llm's CLI.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

import llm
from sqlite_utils.utils import sqlite3  # pysqlite3 where installed: it can load sqlite-vec

from .deadline import call_with_deadline
from .embed import unknown_model_message, with_deadline
from .notes import BadConceptId, check_id, read_concept, similar_ids
from .options import ContextOptions
from .retrieve import context_for
from .schema import file_uri, has_okf_tables

SYSTEM_PROMPT = """You answer questions about a knowledge bundle using only the context below the question.
Rules:
- Use only facts stated in the context. If the context does not contain the answer, say so plainly.
- Cite the notes you used by their id in square brackets, e.g. [bundle/folder/note].
- Facts marked STALE or SUPERSEDED may no longer be true: say so if you rely on them.
- Be brief."""
REMOTE_TIMEOUT = 30.0  # seconds for a whole --url request, not per socket read


class AnswerError(Exception):
    """A clear, one-line reason the question could not be asked."""


def read_only(path: str | Path, immutable: bool = False) -> sqlite3.Connection:
    """A connection that can neither write `path` nor create it.

    Reading a WAL database this way leaves its -wal and -shm files, as any reader does
    (Datasette's too); `immutable` creates nothing, for a mere look at a file that no one
    is writing at that moment."""
    return sqlite3.connect(file_uri(path, mode="ro", **({"immutable": "1"} if immutable else {})), uri=True)


def check_database(db: str | Path) -> Path:
    """The path, if it names a database built by datasette-okf; otherwise a clear AnswerError.

    Looking creates no file: no stray database for a mistyped name, no -wal or -shm."""
    path = Path(db)
    if not path.is_file():
        raise AnswerError(f"no such database file: {path}")
    try:
        with closing(read_only(path, immutable=True)) as conn:
            tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
    except sqlite3.DatabaseError as error:
        raise AnswerError(f"{path} is not a SQLite database ({error})") from None
    if not has_okf_tables(tables):
        raise AnswerError(f"{path} is not a datasette-okf database (build one with: datasette okf build BUNDLE)")
    return path


def local_context(db: str | Path, question: str, options: ContextOptions | None = None,
                  **overrides: Any) -> dict[str, Any]:
    """context_for on a database file, after checking that it is one of ours; read-only."""
    with closing(read_only(check_database(db))) as conn:
        try:
            return context_for(conn, question, options, **overrides)
        except ValueError as error:  # an outdated file, or a bad option
            raise AnswerError(str(error)) from None


TOKEN_VARIABLE = "OKF_DATASETTE_TOKEN"  # an environment variable, not an option: kept out of shell history
EXPECTED = "; expected context_for JSON from a Datasette with datasette-okf"
CONTEXT_FIELDS = {"question": str, "context": str, "nodes": list, "seeds": list, "confident": bool, "reason": str}
NOTE_FIELDS = ("id", "title", "path")  # of each node and seed, as `llm okf` prints them
JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def remote_context(url: str, question: str, db: str | None = None, timeout: float = REMOTE_TIMEOUT,
                   **options: Any) -> dict[str, Any]:
    """The same JSON from a Datasette's /-/context_for.json; `url` is the instance (or any page on it).

    A private database needs $OKF_DATASETTE_TOKEN, sent as a bearer token. `timeout` bounds the
    whole request: urllib's own is per socket read, which a server dripping a line at a time
    never trips. Whatever else answers gets an AnswerError saying what it sent instead."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AnswerError(f"--url must be an http(s) URL of a Datasette instance, not {url!r}")
    query = {"q": question, **({"db": db} if db else {}),
             **{k: v for k, v in options.items() if k in ("mode", "k", "budget", "hops", "max_seeds")}}
    where = f"{parts.scheme}://{parts.netloc}/-/context_for.json"
    request = urllib.request.Request(f"{where}?{urllib.parse.urlencode(query)}")
    token = os.environ.get(TOKEN_VARIABLE)
    if token:  # for an auth plugin (datasette-auth-tokens and the like) that maps it to an actor
        request.add_header("Authorization", f"Bearer {token}")
    try:
        status, kind, body = call_with_deadline(lambda: _fetch(request, timeout), timeout, name="okf-remote-context")
    except TimeoutError:  # the deadline (DeadlineExceeded), or one socket read that waited all of it
        raise AnswerError(f"{where} sent no complete answer within {timeout:g} s; "
                          "allow more with --timeout SECONDS") from None
    except http.client.IncompleteRead as error:
        got = len(error.partial)
        size = f"a {got + error.expected}-byte" if error.expected is not None else "its"
        raise AnswerError(f"{where} closed the connection after {got} bytes of {size} answer{EXPECTED}") from None
    except http.client.RemoteDisconnected:
        raise AnswerError(f"{where} closed the connection without answering{EXPECTED}") from None
    except http.client.HTTPException as error:  # a broken status line, an endless header, ...
        raise AnswerError(f"{where} answered with a broken HTTP response "
                          f"({type(error).__name__}: {_one_line(error)}){EXPECTED}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise AnswerError(f"could not reach {parts.scheme}://{parts.netloc}: {reason}") from None
    if status >= 400:
        try:  # Datasette says why in {"error": ...}
            detail = json.loads(body).get("error")
        except (ValueError, AttributeError):
            detail = None
        raise AnswerError(f"{where} answered {status}" + (f": {_one_line(detail)}" if detail else EXPECTED))
    return _context_json(where, status, kind, body)


def _fetch(request: urllib.request.Request, timeout: float) -> tuple[int, str, bytes]:
    """(status, content type, body) of one request; an HTTP error status is an answer too."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers.get_content_type(), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get_content_type(), error.read()


def _context_json(where: str, status: int, kind: str, body: bytes) -> dict[str, Any]:
    """The context_for result in a successful answer, checked as far as `llm okf` relies on it."""
    try:
        data = json.loads(body)
    except ValueError as error:  # UnicodeDecodeError included
        what = ("an empty body" if not body.strip() else
                "an HTML page" if kind == "text/html" or body.lstrip()[:1] == b"<" else
                f"invalid JSON ({_one_line(error)})")
    else:
        if not isinstance(data, dict):
            what = f"a JSON {JSON_TYPES.get(type(data), 'value')}"
        elif lacking := _lacking(data):
            what = f"JSON that lacks {', '.join(lacking)}"
        else:
            return data
    raise AnswerError(f"{where} answered {status} with {what}{EXPECTED}")


def _lacking(data: dict[str, Any]) -> list[str]:
    """context_for's fields that `data` lacks or holds as the wrong type (of the notes' fields, the first few)."""
    lacking = [name for name, type_ in CONTEXT_FIELDS.items() if not isinstance(data.get(name), type_)]
    lacking += ["nearest"] if not isinstance(data.get("nearest", []), list) else []  # optional: before stop 55, none
    in_notes = [f"{name}[{i}].{field}" for name in ("nodes", "seeds", "nearest") if name in data and name not in lacking
                for i, note in enumerate(data[name]) for field in NOTE_FIELDS
                if not isinstance(note, dict) or not isinstance(note.get(field), str)]
    return lacking + in_notes[:3]


def _one_line(text: Any, limit: int = 200) -> str:
    """Error text from a server, fit for a one-line message."""
    return " ".join(str(text).split())[:limit]


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
        match = re.match(r"^(.*?\.(?:db|sqlite3?)):(.*)$", argument, re.DOTALL)
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
        """One note by its concept id, as context_for gives them (e.g. campaign/people/mira-vell): its text
        (cut at 6,000 characters) and the notes it links to and from."""
        try:
            path = check_database(self.db)
            check_id(id)
        except (AnswerError, BadConceptId) as error:
            return f"error: {error}"
        with closing(read_only(path)) as conn:
            note = read_concept(conn, id, self.MAX_NOTE_CHARS)
            like = similar_ids(conn, id) if note is None else []
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
