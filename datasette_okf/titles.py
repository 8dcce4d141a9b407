"""Words, content words, and concept titles named in a text at word boundaries.

Matching runs on Unicode word tokens, never on substrings, so a concept titled
"AI" cannot match "explain" and "Go" cannot match "ago" (docs/design.md §2.1): a
title matches when its token sequence appears in the text's token sequence.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

MAX_QUESTION = 2000  # characters: the longest question the JSON API, MCP and the SQL functions take
_WORD = re.compile(r"\w+")
STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "also", "did", "does", "know", "tell", "whose", "many", "much"]
    # how a question hedges, never what it asks about: "Roughly how many people live in …"
    + ["roughly", "approximately", "exactly", "precisely", "briefly", "please"]
)


PREPOSITIONS = frozenset(["about", "above", "across", "after", "against", "among", "around", "at", "before", "behind",
                          "below", "beneath", "beside", "beyond", "by", "down", "during", "for", "from", "in", "into",
                          "near", "of", "off", "on", "onto", "out", "over", "past", "since", "through", "to", "toward",
                          "towards", "under", "until", "up", "upon", "with", "within", "without"])


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _stem(word: str) -> str:
    """A light stem for coverage checks: plural and possessive endings only."""
    for suffix in ("'s", "ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


# British and American spellings of one word, both ways: a question and a bundle written on either side of the
# Atlantic find each other (Thellade's development questions say "harbour", "colours", "organisation"; its vault
# writes "harbor", "colors", "organization": 4 of the 6 question words absent from that vault). A variant that
# is no word at all ("waterr") matches nothing; the few endings that would make another real word are left out
# by the lengths below ("floor" is not "flour").
_SPELLINGS = [
    (re.compile(r"^(\w{3,})our(s?)$"), r"\1or\2"), (re.compile(r"^(\w{2,}[^o])or(s?)$"), r"\1our\2"),
    (re.compile(r"^(\w{3,})is(e|es|ed|ing|ation|ations)$"), r"\1iz\2"),
    (re.compile(r"^(\w{3,})iz(e|es|ed|ing|ation|ations)$"), r"\1is\2"),
    (re.compile(r"^(\w{2,})ys(e|es|ed|ing)$"), r"\1yz\2"), (re.compile(r"^(\w{2,})yz(e|es|ed|ing)$"), r"\1ys\2"),
    (re.compile(r"^(\w{3,})tre(s?)$"), r"\1ter\2"), (re.compile(r"^(\w{3,})ter(s?)$"), r"\1tre\2"),
    (re.compile(r"^(\w{3,})ence(s?)$"), r"\1ense\2"), (re.compile(r"^(\w{3,})ense(s?)$"), r"\1ence\2"),
    (re.compile(r"^(\w{3,})ogue(s?)$"), r"\1og\2"), (re.compile(r"^(\w{4,})og(s?)$"), r"\1ogue\2"),
    (re.compile(r"^(\w{2,}[aeiou])ll(ed|ing|er|ers)$"), r"\1l\2"),
    (re.compile(r"^(\w{2,}[^aeiou][aeiou])l(ed|ing|er|ers)$"), r"\1ll\2"),
]


def spellings(word: str) -> list[str]:
    """The word and its other spelling across the Atlantic, if it has one: harbour -> [harbour, harbor]."""
    return list(_spellings(word))


@functools.lru_cache(maxsize=4096)
def _spellings(word: str) -> tuple[str, ...]:
    """Cached: 16 patterns cost 15 µs a word, on every keyword statement of every question."""
    for pattern, replacement in _SPELLINGS:
        other = pattern.sub(replacement, word)
        if other != word:
            return word, other
    return (word,)


def content_words(text: str) -> list[str]:
    """The question's words that carry meaning: no stopwords, no duplicates, in order."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
            seen.setdefault(word)
    return list(seen)


def besides(question: str, name: str) -> str:
    """The question's content words that are not the name's: what it asks of a note it already names. Every section
    of "Kothar" is about Kothar, so "Kothar" says nothing of which one answers "Who was the infant Kothar entrusted
    to?"."""
    named = {_stem(word) for word in words(name)}
    return " ".join(word for word in content_words(question) if _stem(word) not in named)


def _forms(stem: str) -> set[str]:
    """Every word `_stem` can turn into `stem`: the stem itself, or the stem and a suffix it strips."""
    return {stem, stem + "'s", stem + "es", stem + "s"} | ({stem[:-1] + "ies"} if stem.endswith("y") else set())


@functools.lru_cache(maxsize=256)
def _finders(question: str) -> tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]:
    """For each of the question's stemmed content words: the substrings every form of it starts with (a cheap first
    test), and a pattern finding any form (either spelling) as a whole token (the same tokens as `_WORD`). A form two
    of them share counts for both: "stages" stems to "stag" and is also a form of "stage" ("a five-stage challenge…
    how many stages"); given to one of them, which one followed the order of a set of strings, and that changes
    from one process to the next."""
    finders = []
    for stem in sorted({_stem(word) for word in content_words(question)}):
        own = sorted({form for spelling in _spellings(stem) for form in _forms(spelling)}, key=lambda f: (-len(f), f))
        starts = {form.removesuffix("ies") for form in own}
        starts = {start for start in starts if not any(start != o and start.startswith(o) for o in starts)}
        pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, own)) + r")(?!\w)")
        finders.append((tuple(sorted(starts)), pattern))
    return tuple(finders)


def asked(question: str) -> frozenset[int]:
    """The places of the question's content words: what `held` says a text holds some of."""
    return frozenset(range(len(_finders(question))))


def held(question: str, text: str, among: Iterable[int] | None = None) -> frozenset[int]:
    """Which of the question's content words `text` holds, by their place among them (`coverage`'s count); only
    those `among` these places, if given.

    `text` may be a whole note: it is never split into words; each wanted word is first looked for as a substring
    (C speed), and only where one is found as a whole token. A few µs a section (docs/design.md §7.3)."""
    finders = _finders(question)
    folded = text.casefold()
    return frozenset(place for place in (range(len(finders)) if among is None else among)
                     if any(start in folded for start in finders[place][0]) and finders[place][1].search(folded))


def word_starts(question: str) -> list[str]:
    """What every form of each of the question's content words starts with."""
    return sorted({start for starts, _ in _finders(question) for start in starts})


def coverage(question: str, text: str) -> float:
    """Share of the question's content words present in `text` (docs/design.md §3), 0..1."""
    finders = _finders(question)
    return len(held(question, text)) / len(finders) if finders else 0.0


_CAPITALISED = re.compile(r"[^\W\d_][\w'’-]*")
_SENTENCE_END = ".?!:;"
_CALENDAR = frozenset([  # capitalised, yet not names: notes write dates as numbers (2026-06-30)
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
])


def _names_written(text: str) -> Iterator[re.Match[str]]:
    """The capitalised words of `text` that do not start a sentence: the names it writes, one word each."""
    for match in _CAPITALISED.finditer(text):
        before = text[: match.start()].rstrip(" \t\n\"'“‘([")
        if match[0][0].isupper() and before and before[-1] not in _SENTENCE_END:
            yield match


def names(text: str) -> list[str]:
    """The capitalised words of `text` that do not start a sentence — the proper names it uses ("Snowflake",
    "Ethereum", "Sistine") — split at hyphens and apostrophes, each at least 3 letters, no stopwords, months or
    weekdays, in order, each once. The confidence gate asks the bundle whether it knows them (docs/design.md §3)."""
    found: dict[str, None] = {}
    for match in _names_written(text):
        for part in re.split(r"[-'’]", match[0]):
            folded = part.casefold()
            if len(part) >= 3 and folded not in STOPWORDS and folded not in _CALENDAR and not part.isdigit():
                found.setdefault(part)
    return list(found)


def name_runs(text: str) -> list[str]:
    """The names of several words `text` writes: runs of capitalised words one space apart that do not start a
    sentence ("Action Surge", "Mage Armor"), ended by a possessive ("Keith Baker's Eberron": "Keith Baker"), without
    stopwords, months or weekdays at either end; in order, each once. Each word may be known and the name not: 13th
    Age writes "action" and "surge", never "Action Surge" (docs/design.md §3.2)."""
    found: dict[str, None] = {}
    run: list[str] = []
    end = 0  # where the last word ended: a run's words are one space apart

    def close() -> None:
        while run and (run[0].casefold() in STOPWORDS or run[0].casefold() in _CALENDAR):
            run.pop(0)
        while run and (run[-1].casefold() in STOPWORDS or run[-1].casefold() in _CALENDAR):
            run.pop()
        if len(run) >= 2:
            found.setdefault(" ".join(run))
        run.clear()

    for match in _names_written(text):  # a word between two of them leaves more than a space
        if text[end:match.start()] != " ":
            close()
        end = match.end()
        own = re.sub(r"['’]s$", "", match[0])
        run.append(own)
        if own != match[0]:
            close()
    close()
    return list(found)


def name_match(name: str) -> str:
    """The FTS5 query that finds `name` in a note: a word as a phrase; a name of several words as any two of its words
    side by side ("Queensland Senator Australian": "Queensland Senator" will do), so that a run the question writes
    of a name and the next capitalised word is not a name no note has."""
    pairs = [" ".join(pair) for pair in zip(name.split()[:-1], name.split()[1:])] or [name]
    return " OR ".join('"' + pair.replace('"', '""') + '"' for pair in pairs)


MAX_NUMBERED = 16  # pairs read from one question: a question names a few sessions, not hundreds
# "session 9", "sessions 6, 7 and 9", "chapter 12 to chapter 14": a word of at least three letters, then numbers
_NUMBERED = re.compile(r"\b([^\W\d_]{3,})\s+(\d{1,6}(?:\s*(?:,|and|or|to|&|-|–)\s*\d{1,6})*)(?!\w)", re.IGNORECASE)


# "Group 4's sixth session", "the 8th chapter": an ordinal before the word names the member as its number does after
# it ("first" is an end of the series, not a number: end_asked)
_ORDINALS = ["second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
             "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth",
             "nineteenth", "twentieth"]
_ORDINAL = re.compile(r"\b(" + "|".join(_ORDINALS) + r"|\d{1,6}(?:st|nd|rd|th))[\s-]+([^\W\d_]{3,})", re.IGNORECASE)


def numbered(text: str) -> list[list[Any]]:
    """The [word, number] pairs of `text` that can name a member of a series by number: "Group 3's session 9" ->
    [["group", 3], ["session", 9]]; "sessions 6, 7 and 9" -> session 6, 7 and 9; "Group 4's sixth session" ->
    [["group", 4], ["session", 6]]. The word is stemmed ("sessions" -> "session"); stopwords ("at 0", "a 7") name
    nothing. In the order the text names them. Read against titles by number_after."""
    pairs: dict[tuple[str, int], None] = {}
    for _, _, word, numbers in _numbered_phrases(text):
        for number in numbers:
            pairs.setdefault((word, number))
    return [[word, number] for word, number in pairs][:MAX_NUMBERED]


def _numbered_phrases(text: str) -> list[tuple[int, int, str, list[int]]]:
    """(start, end, stemmed word, numbers) of each phrase of `text` that numbers a word, in order; no stopwords."""
    found = [(match.start(), match.end(), match[1], [int(n) for n in re.findall(r"\d+", match[2])])
             for match in _NUMBERED.finditer(text)]
    found += [(match.start(), match.end(), match[2], [_ordinal(match[1])]) for match in _ORDINAL.finditer(text)]
    phrases = [(start, end, _stem(word.casefold()), numbers) for start, end, word, numbers in sorted(found)]
    phrases = [phrase for phrase in phrases if phrase[2] not in STOPWORDS]
    return sorted(phrases + _bare_ordinals(text, phrases))


# An ordinal with no word of its own, beside one that has: "between the end of their fifth session and the start of
# their sixth" (Thellade-check9's thk28), "the fourth and fifth sessions"; not before "of" ("the sixth of Dawnmarch")
_BARE_ORDINAL = re.compile(r"\b(" + "|".join(_ORDINALS) + r"|\d{1,6}(?:st|nd|rd|th))\b(?=\s*(?:[,;.?!)]|(?:and|or|in|at|on|before|after|when|while)\b|$))",
                           re.IGNORECASE)


def _bare_ordinals(text: str, phrases: list[tuple[int, int, str, list[int]]]) -> list[tuple[int, int, str, list[int]]]:
    """Each bare ordinal of `text` as a phrase numbering the word of the ordinal phrase next to it: the one it is
    joined to by "and", "or" or a comma ("fourth and fifth sessions"), else the last before it ("fifth session …
    their sixth"). Only words an ordinal numbers: "Group 6's sixth" is no group."""
    ordinal_phrases = [phrase for phrase in phrases if _ORDINAL.match(text, phrase[0])]
    bare = []
    for match in _BARE_ORDINAL.finditer(text):
        joined = next((p for p in ordinal_phrases if re.fullmatch(r"\s*(?:,|and|or)\s*", text[match.end():p[0]])), None)
        before = next((p for p in reversed(ordinal_phrases) if p[1] <= match.start()), None)
        if joined or before:
            bare.append((match.start(), match.end(), (joined or before)[2], [_ordinal(match[1])]))
    return bare


# What joins a member's number to whose it is: "Group 1's session 8", "Campaign 1 session 8", "Group 1 across
# sessions 6 to 8", "Group 6 during their session 9" (before it), "session 8 of Campaign 1" (after it)
_WHOSE_BEFORE = re.compile(r"(?:['’]s)?\s+|\s+(?:in|during|across|over|for)\s+(?:the\s+|their\s+|its\s+)?",
                           re.IGNORECASE)
_WHOSE_AFTER = re.compile(r"\s+(?:of|in|for|from)\s+(?:the\s+)?", re.IGNORECASE)


def qualified(text: str) -> list[list[Any]]:
    """The series members `text` names by a number and whose they are, each as [word, number, whose number]:
    "Group 6's session 8 and Group 1's session 8" -> [["session", 8, 6], ["session", 8, 1]]; "Group 4's sixth
    session" -> [["session", 6, 4]]; "session 9 of Campaign 3" -> [["session", 9, 3]]. Only a phrase right next to
    the member's says whose it is: in "Group 3's session 9 and session 10", session 10 is nobody's. Read against file
    names by number_after and carries, anywhere in the bundle (retrieve.NUMBERED_SQL)."""
    phrases = _numbered_phrases(text)
    names: dict[tuple[str, int, int], None] = {}
    for (start, end, word, numbers), after in zip(phrases, phrases[1:] + [None]):
        before = next((p for p in reversed(phrases) if p[1] <= start), None)
        for whose, gap, pattern in ((before, text[before[1]:start] if before else "", _WHOSE_BEFORE),
                                    (after, text[end:after[0]] if after else "", _WHOSE_AFTER)):
            if whose and whose[2] != word and len(whose[3]) == 1 and pattern.fullmatch(gap):
                for number in numbers:
                    names.setdefault((word, number, whose[3][0]))
                break
    return [list(name) for name in names][:MAX_NUMBERED]


def _ordinal(word: str) -> int:
    """ "sixth" -> 6, "8th" -> 8."""
    folded = word.casefold()
    return _ORDINALS.index(folded) + 2 if folded in _ORDINALS else int(folded[:-2])


_END = re.compile(r"\b(?:(last|latest|final|most recent|newest)|(first|earliest|opening))\s+([^\W\d_]{3,})",
                  re.IGNORECASE)


def end_asked(text: str) -> tuple[str, str] | None:
    """The end of a series `text` asks for, and the word its members are numbered by: "the last session of Campaign
    6" -> ("last", "session"); "Group 3's first chapters" -> ("first", "chapter"). Read against file names by
    number_after, so "the last time" asks for nothing unless notes are numbered by "time"."""
    match = _END.search(text)
    if not match:
        return None
    word = _stem(match[3].casefold())
    return None if word in STOPWORDS else ("last" if match[1] else "first", word)


def number_after(name: str, word: str) -> int | None:
    """The number that follows `word` in `name` (a title, or a path: its file name), whatever its zeros or dashes:
    ("…/Campaign 3 - Session 09 - When Memory Burns.md", "session") -> 9. None when no number follows the word."""
    return next((number for here, number in _labels(name) if here == word), None)


def carries(name: str, word: str, others: Iterable[int]) -> bool:
    """Whether a series member's file name (`name`: a title, or a path) has a number after `word` and one of
    `others` besides it: "Campaign 6 - Session 07 - …" carries 6 besides its session number, so it is the series of
    "Group 6's session 9"."""
    own = number_after(name, word)
    if own is None:
        return False
    rest = [int(n) for n in re.findall(r"\d+", name.rsplit("/", 1)[-1])]
    rest.remove(own)
    return bool(set(others) & set(rest))


def _labels(name: str) -> list[tuple[str, int]]:
    """The (word, number) pairs of a file name (`name`: a title, or a path), in order, the word stemmed: "Campaign 2
    - Session 07 - …" -> [("campaign", 2), ("session", 7)]; a date's numbers follow no word."""
    tokens = words(name.rsplit("/", 1)[-1].removesuffix(".md"))
    return [(_stem(here), int(following)) for here, following in itertools.pairwise(tokens)
            if following.isdigit() and not here.isdigit()]


def of_another(name: str, neighbour: str, pairs: list[list[Any]]) -> bool:
    """Whether a series member (`name`, next to the found member `neighbour`) is of another series than the one the
    question numbers. What the two names share says whose series it is ("Campaign 2" in "Campaign 2 - Session 06"
    and "… Session 07"); a question's `numbered` pair says whose it asks about when its word is that one, or one the
    names do not number ("Group 4": the files say "Campaign"). Another series when the question says whose and none
    of what it says is the series'. Names that share nothing ("session-04", "2026-11-30") say nothing."""
    own = set(_labels(name))
    shared = own & set(_labels(neighbour))
    labelled, numbering = {word for word, _ in shared}, {word for word, _ in own}
    whose = [(word, number) for word, number in pairs if word in labelled or word not in numbering]
    return bool(shared) and bool(whose) and not any(
        (word, number) in shared if word in labelled else number in {n for _, n in shared} for word, number in whose)


# A question that asks who or which of many ("Who are the members of the Red Runners?", "Which people can be found in
# Kanda?") is answered by the notes linking to the one it names; a vault often keeps them as unfilled templates,
# never offered as notes, whose frontmatter link is all they say (Thellade's sixteen Red Runners). Of those, the
# types it asks for: the ones it names ("Which places…"), and people when it asks who (docs/design.md §6).
_LIST_QUESTION = re.compile(
    r"^\s*(?:who|what|which)\s+(?:are|were)\b"  # "Who are…", "What were…"
    r"|^\s*who\s+(?:lives?|lived|inhabits?|dwells?|works?|worked|serves?|served)\b"  # "Who lives in Glowquarter?"
    r"|^\s*who(?:'s|\u2019s|\s+(?:is|are|was|were))\s+(?:aboard|on\s+board|among|stationed|posted|based"
    r"|in(?!\s+charge))\b"  # "Who is aboard…", "Who's in Group 3?"; not "Who is in charge of…" (one)
    r"|^\s*(?:who|what|which|list|name)\b.*\b(?:members?|belong\w*|part of)\b"  # "…the members of…", "…belong to…"
    r"|^\s*(?:which|what)\s+(?:people|(?!(?:is|was|has|does|happens|means|counts|makes|takes|gets|goes|comes|causes"
    r"|allows|lets|needs|says|seems)\b)\w+s)\b"  # "Which people…", "What places…"; not "What happens…"
    r"|^\s*(?:which|what)\s+(?:\w+\s+){1,2}(?:are|were)\b"  # "What NPCs are…", "What magical sites are…"
    r"|^\s*(?:list|name)\s+(?:all|every|the)\b", re.IGNORECASE)
_PERSON_KINDS = ["person", "people", "npc", "character", "pc", "player", "member"]


def asks_for_list(question: str) -> bool:
    """Whether the question asks who or which of many: the notes linking to the one it names answer it."""
    return bool(_LIST_QUESTION.search(question))


def kinds_asked(question: str) -> list[str]:
    """The note types (lower case) a list question asks for, each also in the plural (a vault may name a type after
    its folder, "NPCs"): those it names ("places", "deities": the word and its stem), and people when it asks who."""
    said = content_words(question)
    named = set(said) | {_stem(word) for word in said} | {word[:-1] for word in said if word.endswith("s")}
    if re.match(r"\s*who\b", question, re.IGNORECASE) or named & set(_PERSON_KINDS):
        named |= set(_PERSON_KINDS)
    return sorted(named | {kind + "s" for kind in named if not kind.endswith("s")})


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression that no user text can break: content words, quoted, OR-ed."""
    terms = [spelling for word in (content_words(text) or words(text))[:64] for spelling in _spellings(word)]
    if not terms:
        return '""'  # matches nothing, and is valid syntax
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


_QUALIFIED = re.compile(r"^(.*[^\s(])\s*\([^()]+\)$")  # "Lover Come Back (1961 film)": a name, and what it is


def spoken_names(name: str) -> list[str]:
    """The ways a text names a note: its name, and without a trailing qualifier in brackets — a wiki's
    "Woman's Viewpoint (magazine)" is "the Woman's Viewpoint" in a question, and "Mercury (planet)" is "Mercury"."""
    qualified = _QUALIFIED.match(name.strip())
    return [name, qualified.group(1)] if qualified else [name]


# "Bragan 'Two-Tooth' Holt": a nickname in quotes inside a name, the quotes at word edges (not "Karnak's Blade")
_NICKNAMED = re.compile(r"""^(.*?)(?:^|\s)['"‘“]([^'"‘’“”]{3,})['"’”](?=\s|$)\s*(.*)$""")


def nicknamed(name: str) -> list[str]:
    """A name's nickname in quotes, alone, and the name without it: Thellade's "Bragan 'Two-Tooth' Holt" is
    "Two-Tooth" to the players and "Bragan Holt" in prose (116 such names there). How a question names a note
    (sqlfunctions.title_index), not how prose does: --link-mentions would link every "the widow" to "Sariya 'The
    Widow' Relleth"."""
    match = _NICKNAMED.match(name.strip())
    if not match:
        return []
    return [match.group(2), " ".join(part for part in (match.group(1), match.group(3)) if part)]


class TitleIndex:
    """Concept names (titles and aliases) by token sequence, for finding them in text."""

    def __init__(self, names: Iterable[tuple[str, str]]):
        self.by_tokens: dict[tuple[str, ...], set[str]] = defaultdict(set)  # names as written, then the bare ones
        unqualified: dict[tuple[str, ...], set[str]] = defaultdict(set)  # names with their qualifier dropped (few)
        for concept_id, name in names:
            for nth, spoken in enumerate(spoken_names(name)):
                tokens = tuple(words(spoken))
                if tokens and not all(t in STOPWORDS for t in tokens) and not _weak(tokens):
                    (self.by_tokens if nth == 0 else unqualified)[tokens].add(concept_id)
        # a one-word name with its qualifier dropped ("Band (rock and pop)" as "band", "The Pianist (memoir)")
        # names its note only where the text capitalises it: lower case, it is the common noun the qualifier told
        # apart (hotpotqa-mini: "Which band was formed first…", 13 questions). Longer ones are names either way:
        # "the harbour charter" is the example's "Harbour Charter (Second, 1340)". A name that is some note's own
        # names that note alone: Thellade's "Boba" is the city's note, not also the district template "Boba
        # (Central)", whose 16 frontmatter links (the galaxy it is in, the ten places in it) were facts in 26
        # development questions about the city (docs/design.md §2.1).
        self.bare: dict[tuple[str, ...], set[str]] = {}
        for tokens, ids in unqualified.items():
            if tokens in self.by_tokens:
                continue
            self.by_tokens[tokens] = set(ids)
            if sum(t not in STOPWORDS for t in tokens) == 1:
                self.bare[tokens] = ids
        self.lengths: dict[str, set[int]] = defaultdict(set)  # first token -> name lengths
        for tokens in self.by_tokens:
            self.lengths[tokens[0]].add(len(tokens))

    def find(self, text: str, skip: set[tuple[str, ...]] | None = None) -> list[tuple[str, str]]:
        """(concept id, matched name) for every name in `text`, longest names first, each id once.

        A weak name — only numbers, or one character — is never matched: in a question it is nearly always
        part of something else ("Group 1's notes", "sessions 6 to 8" name no note called "1" or "8"). Such
        notes still come by their words and their meaning (BM25, vectors). A name that opens with a preposition,
        or a one-word name with its qualifier dropped, matches only where the text capitalises it: "How did
        that escalate in session 9?" is words, not the Thellade GM's checklist "In Session"; "behind the orc" seeds
        no title "Behind" (13th Age's rule on positions still comes by its words and meaning); "Which band was
        formed first?" names no "Band (rock and pop)"."""
        folded = text.casefold()
        spans = [(match.start(), match.end()) for match in _WORD.finditer(folded)]
        tokens = [folded[a:b] for a, b in spans]
        written = [text[a:b] for a, b in spans] if len(folded) == len(text) else None  # as typed, where it lines up
        hits: list[tuple[int, int, str, str]] = []
        for start, token in enumerate(tokens):
            for n in self.lengths.get(token, ()):
                if start + n > len(tokens):
                    continue
                key = tuple(tokens[start : start + n])
                ids = self.by_tokens.get(key)
                if ids and written and not any(w[:1].isupper() for w in written[start:start + n]):
                    ids = set() if key[0] in PREPOSITIONS else ids - self.bare.get(key, set())
                elif ids and written and key in self.bare and _in_longer_name(text, written, spans, start, start + n):
                    ids = ids - self.bare[key]
                if ids and not (skip and key in skip) and not _inside_compound(folded, spans[start][0],
                                                                               spans[start + n - 1][1]):
                    for concept_id in sorted(ids):
                        hits.append((-n, start, concept_id, " ".join(key)))
        seen: set[str] = set()
        found = []
        for _, _, concept_id, name in sorted(hits):
            if concept_id not in seen:
                seen.add(concept_id)
                found.append((concept_id, name))
        return found


def _in_longer_name(text: str, written: list[str], spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """written[start:end] is one word of a longer capitalised name: "United" in "United States" or "Leeds United"
    (a word opening a sentence is capitalised anyway, and is not counted)."""
    after = end < len(written) and written[end][:1].isupper() and not text[spans[end - 1][1]:spans[end][0]].strip()
    before = start > 0 and written[start - 1][:1].isupper() and not text[spans[start - 1][1]:spans[start][0]].strip() \
        and text[:spans[start - 1][0]].rstrip()[-1:] not in ("", *_SENTENCE_END)
    return after or before


def _inside_compound(text: str, start: int, end: int) -> bool:
    """text[start:end] is only part of a hyphenated word: "free" in "free-form", "orc" in "half-orc"."""
    return (start >= 2 and text[start - 1] == "-" and text[start - 2].isalnum()) or \
        (end + 1 < len(text) and text[end] == "-" and text[end + 1].isalnum())


def _weak(tokens: tuple[str, ...]) -> bool:
    """A name too short or too plain to be told apart from ordinary text by its words alone."""
    return all(token.isdigit() for token in tokens) or sum(map(len, tokens)) == 1
