"""A prompt-submit hook: does this message touch the wiki? (docs/design.md §10.2)

    python -m datasette_okf.trigger KEYWORDS_FILE < hook-payload.json

Reads the harness's JSON payload on stdin, takes the prompt (`.prompt`, else
other common field names), strips wrapper markup a harness prepends, and matches
the keywords of wiki-trigger-keywords.txt whole-word and case-insensitively
("ai" never matches inside "again"). On a match it prints one short nudge naming
what matched and the call to make; otherwise nothing. It never runs retrieval,
always exits 0 and fails open: any problem means no nudge, never a blocked turn.

The prompt is untrusted and an agent may run the suggested command as printed, so
the question and the database path are quoted for the shell (`shlex.quote`, after
`--` so a question starting with "-" is not an option) and URL-encoded in the
HTTP form. Every step is linear in the prompt, and only its first MAX_PROMPT
characters (1 MiB) are examined: a 1 MB prompt, whatever it holds, takes under
200 ms, Python's start-up included (tests/test_trigger.py).

Standard library only, and the package's __init__ imports nothing heavy, so a
run costs little more than starting Python (benchmarks/trigger.py).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import re
import shlex
import sys
import urllib.parse
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PROMPT_FIELDS = ("prompt", "user_prompt", "userPrompt", "message", "text", "input", "query", "content")
# Blocks a harness prepends to every prompt; a keyword inside one would fire on every turn.
WRAPPER_TAGS = ("context", "system-reminder", "system", "env", "environment", "metadata", "user-context",
                "command-message", "local-command-stdout")
# The patterns below are lowercase and matched against _folded(text): re.I matched the same, but slowly.
_CLOSING = re.compile(r"</(?:%s)\s*>" % "|".join(f"({re.escape(tag)})" for tag in WRAPPER_TAGS))  # group i: tag i
_OPENING = [re.compile(r"<(?=%s[\s>])" % re.escape(tag)) for tag in WRAPPER_TAGS]
_REGION = r"/[a-z_+\-]+(?:/[a-z_\-]+)?"  # Europe/Paris, America/Argentina/Salta
_OFFSET = r"\s*[+\-]\d{1,2}(?::?\d{2})?\b"  # UTC+2, GMT -03:30
# `\b(?:africa|...|utc|gmt|time ?zone)...` with each branch starting on a letter and checking the word boundary
# right after it (`(?<!\w.)`): the regex engine then skips ahead to those letters, which is twice as fast.
_TIMEZONES = re.compile("|".join((
    rf"a(?<!\w.)(?:frica|merica|ntarctica|sia|tlantic|ustralia){_REGION}", rf"e(?<!\w.)(?:urope|tc){_REGION}",
    rf"i(?<!\w.)ndian{_REGION}", rf"p(?<!\w.)acific{_REGION}", rf"u(?<!\w.)tc{_OFFSET}", rf"g(?<!\w.)mt{_OFFSET}",
    r"t(?<!\w.)ime ?zone\s*[:=]\s*\S+")))
_WORDS = re.compile(r"\w+")
_NOT_WORDS = re.compile(r"[^\w\s]+")
_ASCII_NOT_WORDS = {c: " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_" or chr(c).isspace())}
MAX_NAMED = 5
MAX_PROMPT = 1 << 20  # characters of the prompt examined: beyond 1 MiB, more text only costs time
MAX_QUESTION = 200
# Runs of characters that are neither whitespace nor control characters: the words of the question.
_QUESTION_WORDS = re.compile(r"[^\s\x00-\x1f\x7f-\x9f]{1,%d}" % MAX_QUESTION)


def prompt_text(payload: Any) -> str:
    """The user's message from a hook payload, or "" when none of the known fields holds text."""
    if isinstance(payload, str):
        return payload
    parts: list[str] = []
    _collect_text(payload, parts)
    return "\n".join(parts)  # joined once: joining at every level of nested lists was quadratic


def _collect_text(payload: list | dict, parts: list[str]) -> None:
    """Appends the message's pieces: every string of a list, the first field of a dict that has any."""
    if isinstance(payload, list):  # e.g. content parts: [{"type": "text", "text": "..."}]
        for part in payload:
            if isinstance(part, str):
                if part:
                    parts.append(part)
            elif isinstance(part, (list, dict)):
                _collect_text(part, parts)
    elif isinstance(payload, dict):
        for field in PROMPT_FIELDS:
            value = payload.get(field)
            if isinstance(value, str) and value.strip():
                parts.append(value)
                return
            if isinstance(value, (list, dict)):
                before = len(parts)
                _collect_text(value, parts)
                if len(parts) > before:
                    return


def strip_wrappers(text: str) -> str:
    """The message without harness boilerplate: known wrapper blocks and timezone strings."""
    text = _spaced_out(text, _wrapper_blocks(_folded(text)))
    return _spaced_out(text, (match.span() for match in _TIMEZONES.finditer(_folded(text))))


def _folded(text: str) -> str:
    """`text` lowercased to the same length, so that its matches are spans of `text`. What re.I matches to
    an ASCII letter becomes that letter: "İ" alone lowercases to two characters, "ſ" and "ı" to themselves."""
    return text.replace("İ", "i").lower().replace("ſ", "s").replace("ı", "i")


def _wrapper_blocks(folded: str) -> list[tuple[int, int]]:
    """Spans from an opening wrapper tag to the nearest closing tag of its name; unclosed tags stay text.

    The spans of `<(tag)(\\s[^>]*)?>.*?</\\1\\s*>` (re.S), which alone scans to the end of the text again for
    every opening tag that no closing tag follows: quadratic. Those tags are the ones after the last ">"
    before the last closing tag of their name (their own ">" comes after it), so they are blanked out
    first, in a copy of the same length, and tags never closed are left out of the pattern: it then only
    meets opening tags that start a block.
    """
    last_closing = {match.lastindex - 1: match.start() for match in _CLOSING.finditer(folded)}
    if not last_closing:
        return []
    searched = folded
    for tag, closing in last_closing.items():
        unclosed_from = folded.rfind(">", 0, closing) + 1
        if _OPENING[tag].search(searched, unclosed_from):
            searched = searched[:unclosed_from] + _OPENING[tag].sub("\0", searched[unclosed_from:])
    return [match.span() for match in _blocks(tuple(sorted(last_closing))).finditer(searched)]


@functools.cache
def _blocks(tags: tuple[int, ...]) -> re.Pattern[str]:
    """The wrapper block pattern for these tags (indexes into WRAPPER_TAGS)."""
    names = "|".join(re.escape(WRAPPER_TAGS[tag]) for tag in tags)
    return re.compile(r"<(%s)(\s[^>]*)?>.*?</\1\s*>" % names, re.DOTALL)  # an opening tag runs on to the next ">"


def _spaced_out(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with each of these (start, end) spans, in order and apart, replaced by a space."""
    kept, done = [], 0
    for start, end in spans:
        kept += (text[done:start], " ")
        done = end
    kept.append(text[done:])
    return "".join(kept)


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


class _Automaton:
    """Aho-Corasick over words: every keyword found in one pass over the text, whatever the keywords share.

    (Trying each keyword that starts with the current word was quadratic: thousands of titles starting with
    "The" against a prompt of "the the the ...".)
    """

    def __init__(self, keywords: list[str], vocabulary: set[str]) -> None:
        """The automaton of the keywords made only of words in `vocabulary`: the others cannot match."""
        self.keywords = keywords
        self.next: list[dict[str, int]] = [{}]  # node -> word -> node: the trie of the keywords' words
        self.ends: dict[int, tuple[int, list[int]]] = {}  # node -> (its depth, the keywords it spells)
        for index, keyword in enumerate(keywords):
            words = _WORDS.findall(keyword.casefold())
            if not vocabulary.issuperset(words):
                continue
            node = 0
            for word in words:
                if (child := self.next[node].get(word)) is None:
                    child = self.next[node][word] = len(self.next)
                    self.next.append({})
                node = child
            if node:
                self.ends.setdefault(node, (len(words), []))[1].append(index)
        # fail: the node of the longest proper suffix of a node's words; output: the nearest node on that
        # chain that ends a keyword; first_hit: the node itself if it ends one, else its output. Breadth
        # first, so a node's suffixes are done before it; the root's children keep 0, the root.
        self.fail = [0] * len(self.next)
        self.output = [0] * len(self.next)
        self.first_hit = [0] * len(self.next)
        for node in self.ends:
            self.first_hit[node] = node
        queue = deque(child for child in self.next[0].values() if self.next[child])
        while queue:
            node = queue.popleft()
            for word, child in self.next[node].items():
                self.fail[child] = fail = self._move(self.fail[node], word)
                self.output[child] = self.first_hit[fail] or self.output[fail]
                self.first_hit[child] = self.first_hit[child] or self.output[child]
                if self.next[child]:
                    queue.append(child)

    def _move(self, node: int, word: str) -> int:
        """The node after `word`: the trie's edge from `node` or, failing that, from its longest suffix."""
        while node and word not in self.next[node]:
            node = self.fail[node]
        return self.next[node].get(word, 0)

    def found(self, words: list[str]) -> list[str]:
        """The keywords among `words`, in order of first appearance (then of the keywords file)."""
        next_, first_hit, output = self.next, self.first_hit, self.output  # locals: this loop is hot
        first_end: dict[int, int] = {}  # node -> position of the word where its keywords first ended
        node = 0
        for position, word in enumerate(words):
            if (target := next_[node].get(word)) is None:
                target = 0
                if node:  # remembered: text that repeats itself then costs one lookup a word
                    target = next_[node][word] = self._move(self.fail[node], word)
            node = target
            hit = first_hit[node]
            while hit and hit not in first_end:  # a node seen before had its whole output chain seen then
                first_end[hit] = position
                hit = output[hit]
        starts = sorted((end - self.ends[hit][0] + 1, index) for hit, end in first_end.items()
                        for index in self.ends[hit][1])
        return list(dict.fromkeys(self.keywords[index] for _, index in starts))


def matches(text: str, keywords: list[str]) -> list[str]:
    """Keywords found in `text` as whole words, case-insensitively, in order of first appearance."""
    words = _words(text)
    return _Automaton(keywords, set(words)).found(words)


def _words(text: str) -> list[str]:
    """_WORDS.findall(text.casefold()), several times faster on a long text: once everything else is
    whitespace, str.split does the work (str.translate is the fast way there for ASCII text only)."""
    text = text.casefold()
    return (text.translate(_ASCII_NOT_WORDS) if text.isascii() else _NOT_WORDS.sub(" ", text)).split()


def question_text(text: str) -> str:
    """The question to suggest: one line, without control characters (a NUL cannot even be passed to a command)."""
    words, length = [], 0
    for word in _QUESTION_WORDS.finditer(text):  # stops early: the text may be a megabyte
        words.append(word[0])
        length += len(word[0]) + 1
        if length > MAX_QUESTION:
            break
    return " ".join(words)[:MAX_QUESTION]


def nudge(found: list[str], database: str | None, prompt: str) -> str:
    """The line to print. The question and the database come from outside: quoted, as the command may be run."""
    named = ", ".join(found[:MAX_NAMED]) + (f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else "")
    question = question_text(prompt)
    where = shlex.quote(database) if database else "DATABASE.db"
    url = f"/-/context_for.json?{urllib.parse.urlencode({'q': question})}"
    return (f"The wiki has notes on {named}. Before answering, consider fetching them: "
            f"llm okf context -d {where} -- {shlex.quote(question)}  (or GET {url} on its Datasette).")


def run(keywords_file: str, stdin: str) -> str:
    """The nudge for one hook call, or "" (no match, or any problem at all: fail open)."""
    enabled = gc.isenabled()
    gc.disable()  # a payload of 250,000 empty lists made the cyclic collector rescan every live object, over and over
    try:
        return _run(keywords_file, stdin)
    finally:
        if enabled:
            gc.enable()


def _run(keywords_file: str, stdin: str) -> str:
    try:
        text = strip_wrappers(prompt_text(json.loads(stdin))[:MAX_PROMPT])
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
        try:
            print(message, flush=True)
        except (OSError, ValueError):  # stdout closed early, or it cannot encode the line: no nudge, still 0
            with contextlib.suppress(OSError):  # and nothing left for the flush at exit to fail on
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
