"""A prompt-submit hook: does this message touch the wiki? (seed 003 §12)

    python -m datasette_okf.trigger KEYWORDS_FILE < hook-payload.json

Reads the harness's JSON payload on stdin, takes the prompt (`.prompt`, else
other common field names), strips wrapper markup a harness prepends, and matches
the keywords of wiki-trigger-keywords.txt whole-word and case-insensitively
("ai" never matches inside "again"). On a match it prints one short nudge naming
what matched and the call to make; otherwise nothing. It never runs retrieval,
always exits 0 and fails open: any problem means no nudge, never a blocked turn.

Standard library only, and the package's __init__ imports nothing heavy, so a
run costs little more than starting Python (benchmarks/trigger.py).
"""

from __future__ import annotations

import json
import re
import sys
import urllib.parse
from pathlib import Path
from typing import Any

PROMPT_FIELDS = ("prompt", "user_prompt", "userPrompt", "message", "text", "input", "query", "content")
# Blocks a harness prepends to every prompt; a keyword inside one would fire on every turn.
WRAPPER_TAGS = ("context", "system-reminder", "system", "env", "environment", "metadata", "user-context",
                "command-message", "local-command-stdout")
_WRAPPERS = re.compile(r"<(%s)(\s[^>]*)?>.*?</\1\s*>" % "|".join(map(re.escape, WRAPPER_TAGS)), re.S | re.I)
_TIMEZONES = re.compile(
    r"\b(?:Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)/[A-Za-z_+\-]+(?:/[A-Za-z_\-]+)?"
    r"|\b(?:UTC|GMT)\s*[+\-]\d{1,2}(?::?\d{2})?\b|\btime ?zone\s*[:=]\s*\S+", re.I)
_WORDS = re.compile(r"\w+")
MAX_NAMED = 5


def prompt_text(payload: Any) -> str:
    """The user's message from a hook payload, or "" when none of the known fields holds text."""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        for field in PROMPT_FIELDS:
            value = payload.get(field)
            if isinstance(value, str) and value.strip():
                return value
            if isinstance(value, (dict, list)):
                found = prompt_text(value)
                if found:
                    return found
    if isinstance(payload, list):  # e.g. content parts: [{"type": "text", "text": "..."}]
        return "\n".join(filter(None, (prompt_text(part) for part in payload)))
    return ""


def strip_wrappers(text: str) -> str:
    """The message without harness boilerplate: known wrapper blocks and timezone strings."""
    return _TIMEZONES.sub(" ", _WRAPPERS.sub(" ", text))


def load_keywords(path: Path) -> tuple[list[str], str | None]:
    """(keywords, database named in the header) from a wiki-trigger-keywords.txt."""
    keywords, database = [], None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("# database:"):
            database = line.split(":", 1)[1].strip() or None
        elif line and not line.startswith("#"):
            keywords.append(line)
    return keywords, database


def matches(text: str, keywords: list[str]) -> list[str]:
    """Keywords found in `text` as whole words, case-insensitively, in order of first appearance."""
    by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for keyword in keywords:
        tokens = tuple(_WORDS.findall(keyword.casefold()))
        if tokens:
            by_first.setdefault(tokens[0], []).append((tokens, keyword))
    words = _WORDS.findall(text.casefold())
    found: dict[str, None] = {}
    for i, word in enumerate(words):
        for tokens, keyword in by_first.get(word, ()):
            if tuple(words[i : i + len(tokens)]) == tokens:
                found.setdefault(keyword)
    return list(found)


def nudge(found: list[str], database: str | None, prompt: str) -> str:
    named = ", ".join(found[:MAX_NAMED]) + (f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else "")
    question = " ".join(prompt.split())[:200]
    where = f' -d {database}' if database else " -d DATABASE.db"
    url = f"/-/context_for.json?{urllib.parse.urlencode({'q': question})}"
    return (f"The wiki has notes on {named}. Before answering, consider fetching them: "
            f'llm okf context "{question}"{where}  (or GET {url} on its Datasette).')


def run(keywords_file: str, stdin: str) -> str:
    """The nudge for one hook call, or "" (no match, or any problem at all: fail open)."""
    try:
        text = strip_wrappers(prompt_text(json.loads(stdin)))
        if not text.strip():
            return ""
        keywords, database = load_keywords(Path(keywords_file))
        found = matches(text, keywords)
        return nudge(found, database, text) if found else ""
    except Exception:  # noqa: BLE001 - a hook must never block or break the turn
        return ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        stdin = sys.stdin.read()
    except Exception:  # noqa: BLE001
        stdin = ""
    message = run(argv[0], stdin) if argv else ""
    if message:
        print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
