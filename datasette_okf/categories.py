"""The categories a question names: the tags and folders whose notes answer a question asking which of many.

"Who are the player characters in Group 6?" asks for the six notes a Thellade vault tags `#Character`, `#Player` and
`#Group6`; "Who are Orcus' lieutenants?" for the six in its folder `02c Orcus' Lieutenants`. No title says "Group 6",
and a character's chunks are about the character, not the party. OKF §3.1 keeps tags "a first-class concept through
the `tags` frontmatter field (§4.1)" and leaves a view by tag to the consumer; and "subdirectories organize concepts
into groups" (OKF §3). A question names a category when the category's words, as a
person says them, stand in it side by side: a tag's last part (`13A/Monsters/Factions/Kobolds`: kobolds), a folder's
name without its numbering (`02c Orcus' Lieutenants`: orcus lieutenants), split at capitals, digits, hyphens and
underscores (`PlayerCharacter`: player character; `Group6`: group 6), singular or plural (docs/design.md §5.13).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from .titles import PREPOSITIONS, STOPWORDS, content_words

_PART = re.compile(r"[A-Z]+s?(?![a-z])|[A-Z]?[a-z]+|\d+")  # "PlayerCharacter" "Group6" "NPCs" "POI"
_NUMBERING = re.compile(r"^\s*\d+[a-z]?(?=[\s._-]|$)[\s._-]*", re.IGNORECASE)  # "02c Orcus' Lieutenants", "13A"
_QUESTION_WORD = re.compile(r"[^\W\d_]+|\d+")
_EDGES = PREPOSITIONS | {"a", "an", "the", "and", "or"}
VALUE_MOST = 200  # notes sharing a frontmatter value that makes it a category
LONGEST = 4  # words in a category's name as the index keeps it: a category, not a sentence


def singular(word: str) -> str:
    """A word without its plural ending, the same for a category and a question: "deities" deity, "kobolds" kobold,
    "classes" class; "boss", "status" and short words as they are."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def category_words(name: str) -> tuple[str, ...]:
    """How a question says a tag or a folder: its last part's words without a leading number, lower case, singular,
    a number as its value ("03" 3); () for a name no question says as a category (a number, stopwords, longer than
    LONGEST words, or starting or ending with a preposition or an article: `InSession` is not what "in session 9"
    names)."""
    last = _NUMBERING.sub("", name.strip().lstrip("#").rstrip("/").rsplit("/", 1)[-1])
    said = tuple(str(int(part)) if part.isdigit() else singular(part.casefold()) for part in _PART.findall(last))
    if not said or len(said) > LONGEST or said[0] in _EDGES or said[-1] in _EDGES or set(said) <= STOPWORDS:
        return ()
    if all(part.isdigit() for part in said) or len(said) == 1 and len(said[0]) < 3:
        return ()
    return said


class CategoryIndex:
    """Every tag, folder and short frontmatter value of a database by the words a question says it with
    (`category_words`): those said alike ("Deity" and "13A/Bestiary/Deity"; the tag `#Encounter` and the folder
    `08 Encounters`) are one category, with the number of notes each holds (a value: their ids)."""

    def __init__(self, tags: Iterable[str], folders: Iterable[str], values: Iterable[tuple[str, str, str]] = ()) -> None:
        """`tags`: every tag of every note, once a note; `folders`: every note's folder (its id less its name);
        `values`: (key, value, note id) for each short frontmatter value that is no link ("strength: elite")."""
        self.by_words: dict[tuple[str, ...], dict[str, Any]] = defaultdict(lambda: {"tags": {}, "folders": {}, "values": {}})
        for kind, names in (("tags", Counter(tags)), ("folders", _with_parents(Counter(folders)))):
            for name, notes in sorted(names.items()):
                said = category_words(name)
                if said:
                    self.by_words[said][kind][name] = notes
        holders: dict[str, list[str]] = defaultdict(list)
        for key, value, concept_id in values:
            holders[f"{key}: {value}"].append(concept_id)
        self.numbers: dict[tuple[str, ...], dict[int, list[str]]] = defaultdict(dict)  # key's words -> value -> ids
        for name, ids in sorted(holders.items()):
            key, value = name.split(": ", 1)
            said, number = category_words(value), _stated_number(key, value)
            if not said and number is not None and _INTEGER.fullmatch(value):  # a number is said with its key:
                said = category_words(key) + (str(number),)  # "level 0"; and compared with: "level 14 or higher"
            if number is not None:
                held = self.numbers[category_words(key)].setdefault(number, [])
                held[:] = sorted(set(held) | set(ids))
            if said and len(ids) <= VALUE_MOST:  # a value most notes share ("strength: normal") is no category
                self.by_words[said]["values"][name] = sorted(ids)

    def named(self, question: str) -> list[dict[str, Any]]:
        """The categories `question` names, in its order: each {"words", "label", "tags", "folders", "ids", "notes",
        "asked"} (label: its first tag, else its first value, else its first folder's name; ids: its values' notes;
        notes: an upper bound of those it holds; least: a lower bound, the most one of its tags, folders or values
        holds; asked: it asks
        which of them, _asks_which_of). A category whose words lie inside a longer one the question names is that
        one's word ("player character" is `PlayerCharacter` where a vault has it)."""
        found = []
        written = [str(int(word)) if word.isdigit() else word.casefold() for word in _QUESTION_WORD.findall(question)]
        said = [singular(word) for word in written]
        for start in range(len(said)):
            for length in range(min(LONGEST, len(said) - start), 0, -1):
                key = tuple(said[start:start + length])
                if key in self.by_words:
                    found.append((start, start + length, key))
        inside = {f for f in found for g in found if f != g and g[0] <= f[0] and f[1] <= g[1]}
        named: dict[tuple[str, ...], dict[str, Any]] = {}
        for start, end, key in sorted(set(found) - inside):
            held = self.by_words[key]
            label = (next(iter(held["tags"]), None) or next(iter(held["values"]), None)
                     or next(iter(held["folders"])).rsplit("/", 1)[-1])
            category = named.setdefault(key, {
                "words": " ".join(key), "label": label, "tags": list(held["tags"]), "folders": list(held["folders"]),
                "ids": [i for ids in held["values"].values() for i in ids],
                "notes": sum(held["tags"].values()) + sum(held["folders"].values())
                + sum(len(ids) for ids in held["values"].values()),
                "least": max([*held["tags"].values(), *held["folders"].values(),
                              *(len(set(ids)) for ids in held["values"].values())]), "asked": False})
            openers = ("which", "what") if held["tags"] or held["folders"] else ("which",)  # "What divine dreams came
            # to Kothar?" asks what they were, not which deities hold `secondarydomains: Dreams`
            category["asked"] |= written[start:end] != said[start:end] and _asks_which_of(written[:start], openers)
        ranges = self._ranges(question)
        compared = {(key, number) for key, numbers, _ in ranges for number in numbers}
        for words in list(named) if compared else []:  # "level 14 or higher" is no "level 14", nor "5th level+"
            held = self.by_words[words]
            values = [name.split(": ", 1) for name in held["values"]]
            if values and not held["tags"] and not held["folders"] and all(
                    (category_words(key), _stated_number(key, value)) in compared for key, value in values):
                del named[words]
        return list(named.values()) + [category for _, _, category in ranges]

    def _ranges(self, question: str) -> list[tuple[tuple[str, ...], list[int], dict[str, Any]]]:
        """The numbers a question compares a key with ("Which monsters are 14th level or higher?", "level 5 or
        lower", "above level 10", "level 14+", "between level 3 and 5"): (key, the numbers it says, a category of
        the notes whose integer value of that key is in range, as `named` gives them)."""
        found = []
        said = {singular(word.casefold()) for word in _QUESTION_WORD.findall(question)}
        for key, values in self.numbers.items():
            if not said.issuperset(key):  # the key's words said, or no comparison with it
                continue
            spans: list[tuple[list[int], str, float, float]] = []  # the numbers said, as said, the values in range
            for match in _comparisons(key).finditer(question):
                number = int(next(match[group] for group in "abcde" if match[group] is not None))
                sign = _COMPARED[" ".join((match["after"] or match["before"] or match["inside"]).casefold().split())]
                spans.append(([number], f"{sign} {number}", *_BOUNDS[sign](number)))
            for match in _spans(key).finditer(question):
                low, high = sorted(int(next(match[f"{end}{n}"] for n in "123" if match[f"{end}{n}"] is not None))
                                   for end in ("low", "high"))
                spans.append(([low, high], f"{low} to {high}", low, high))
            for numbers, said_as, low, high in spans:
                ids = sorted(i for value, held in values.items() if low <= value <= high for i in held)
                if ids:
                    label = f"{' '.join(key)} {said_as}"
                    found.append((key, numbers, {"words": label, "label": label, "tags": [], "folders": [], "ids": ids,
                                                 "notes": len(ids), "least": len(ids), "asked": False}))
        return found


_INTEGER = re.compile(r"-?\d+")


def _stated_number(key: str, value: str) -> int | None:
    """The number a value gives its key: an integer ("level: 14"), or a number the value says with the key's own
    words ("level: 5th level+", as 13th Age's spells write it); None for any other value, or a key no question says."""
    words = category_words(key)
    if not words:
        return None
    if _INTEGER.fullmatch(value):
        return int(value)
    said = _said_pattern(words)
    stated = re.fullmatch(rf"\s*(?:(-?\d+)(?:st|nd|rd|th)?[\s-]+{said}|{said}\s+(-?\d+))\s*\+?\s*", value, re.IGNORECASE)
    return int(stated[1] or stated[2]) if stated else None


_COMPARED = {  # how a question says a comparison: after the number ("or higher", "+") or before it ("above")
    **dict.fromkeys(["or higher", "or above", "or more", "or greater", "and higher", "and above", "and up", "+",
                     "at least", "no lower than", "no less than"], ">="),
    **dict.fromkeys(["or lower", "or below", "or less", "or fewer", "and lower", "and below", "at most",
                     "no higher than", "no more than"], "<="),
    **dict.fromkeys(["above", "over", "higher than", "more than", "greater than"], ">"),
    **dict.fromkeys(["below", "under", "lower than", "less than", "fewer than"], "<"),
}
_BOUNDS = {">=": lambda n: (n, math.inf), "<=": lambda n: (-math.inf, n),  # integer values: the range's ends
           ">": lambda n: (n + 1, math.inf), "<": lambda n: (-math.inf, n - 1)}


def _said_as(ways: Iterable[str]) -> str:
    return "|".join(re.escape(way).replace(r"\ ", r"\s+") for way in sorted(ways, key=len, reverse=True))


_AFTER = _said_as(way for way in _COMPARED if way.startswith(("or ", "and ", "+")))
_BEFORE = _said_as(way for way in _COMPARED if not way.startswith(("or ", "and ", "+")))
_NUMBER = r"(?P<{}>-?\d+)(?:st|nd|rd|th)?"


def _said_pattern(words: Iterable[str]) -> str:
    """A key's words as a question writes them: singular or plural, any space between."""
    return r"\s+".join(re.escape(word) + r"(?:e?s)?" for word in words)


@lru_cache(maxsize=1024)
def _comparisons(key: tuple[str, ...]) -> re.Pattern[str]:
    """Where a question compares `key` with a number: "14th level or higher", "8th-level or higher", "level 14 or
    higher", "level 14+" (the comparison after), "above level 10", "under 5th level", "level above 10" (before the
    number)."""
    said = _said_pattern(key)
    return re.compile(
        rf"(?<![\w-])(?:{_NUMBER.format('a')}[\s-]+{said}|{said}\s+{_NUMBER.format('b')})\s*(?P<after>{_AFTER})(?!\w)"
        rf"|(?<!\w)(?P<before>{_BEFORE})\s+(?:{said}\s+{_NUMBER.format('c')}|{_NUMBER.format('d')}[\s-]+{said})(?!\w)"
        rf"|(?<!\w){said}\s+(?P<inside>{_BEFORE})\s+{_NUMBER.format('e')}(?!\w)",
        re.IGNORECASE)


@lru_cache(maxsize=1024)
def _spans(key: tuple[str, ...]) -> re.Pattern[str]:
    """Where a question says a span of `key`: "between level 3 and 5", "between 3rd and 5th level", "from level 3
    to level 5", "levels 3 to 5" (the key said once at least)."""
    said = _said_pattern(key)
    low, high = (_NUMBER.format(f"low{n}") for n in "123"), (_NUMBER.format(f"high{n}") for n in "123")
    return re.compile(
        rf"(?<!\w)(?:between|from)\s+(?:{said}\s+{next(low)}\s+(?:and|to)\s+(?:{said}\s+)?{next(high)}"
        rf"|{next(low)}\s+(?:and|to)\s+{next(high)}[\s-]+{said})(?!\w)"
        rf"|(?<!\w){said}\s+{next(low)}\s*(?:to|-|–)\s*{next(high)}(?!\w)",
        re.IGNORECASE)


def _with_parents(folders: Counter[str]) -> Counter[str]:
    """Each folder with the notes under it at any depth: `Bestiary` holds `Bestiary/Dragon`'s."""
    every: Counter[str] = Counter()
    for folder, notes in folders.items():
        parts = folder.split("/")
        for end in range(2, len(parts) + 1):  # not the bundle's own name: it is every note's
            every["/".join(parts[:end])] += notes
    return every


_AUXILIARIES = frozenset(["is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can", "could", "will",
                          "would", "should", "may", "might", "must"])


def _asks_which_of(before: list[str], openers: tuple[str, ...] = ("which", "what")) -> bool:
    """Whether the words before a category written in the plural ask which of them: "which", "what" (of `openers`)
    or "how many", then at most three words and no verb ("Which red dragons…", "What finance metrics…"; not "What
    did the player characters do…")."""
    start = 2 if before[:2] == ["how", "many"] else 1 if before[:1] and before[0] in openers else None
    return start is not None and len(before) - start <= 3 and not _AUXILIARIES & set(before[start:])


_ASKS_WHICH = re.compile(r"^\s*(?:who|which|what|list|name|how\s+many)\b", re.IGNORECASE)


def asks_which(question: str) -> bool:
    """Whether the question starts as a question for a set does: who, which, what, list, name, how many."""
    return bool(_ASKS_WHICH.search(question))


_LISTING_WORDS = {"list", "name", "all", "every", "there", "known", "kind", "type", "exist",  # "List all the …"
                  "defined", "available", "documented", "catalog", "catalogue", "bundle", "vault"}  # "… in the catalog?"


def asks_whole(question: str, categories: Iterable[str]) -> bool:
    """Whether the question asks for the whole of the categories it names, nothing it says besides them: "Who are the
    deities?", "List all the demon lords", not "Which deities require an unholy sanctification?" (a part of them,
    which their notes say, and which a line naming all of them would crowd out). `categories`: their words."""
    said = {singular(word) for name in categories for word in name.split()}
    return all(singular(word) in said | _LISTING_WORDS for word in content_words(question))
