"""When a note is about, from its frontmatter, and the dates a question names: a date the question writes names
the notes dated then, as a title names its note (docs/design.md §2.9).

A vault keeps history as notes dated in their frontmatter — an event with `startdate: 01 Emberwake -12 PR`, a
meeting with `date: 2024-03-05` — whose titles a question rarely says ("How did the Rising escalate, from the
first rifts in -62 PR, through the incursions of -12 PR, to the ritual that ended it in -1 PR?"). The calendar is
the bundle's own: its month words and its era ("PR") are read from its date fields, so a fantasy calendar works
as the Gregorian one does. Pure functions over rows; sqlfunctions makes the index once per build.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

Date = tuple[int, Any, Any]  # (year, month, day): the month a number or the calendar's own word; None: not said

MONTHS = {name: n for n, name in enumerate(["january", "february", "march", "april", "may", "june", "july",
                                             "august", "september", "october", "november", "december"], 1)}
# A field is a date when its key says so, unless it is the file's bookkeeping: when the note was written, changed,
# verified or recapped says nothing of when what it tells happened (OKF §5.2's generated.at, §6's stale_after).
DATE_KEY = re.compile(r"date|year", re.IGNORECASE)
BOOKKEEPING = re.compile(r"creat|updat|modif|last|recap|review|verif|stale|generat|due|expir", re.IGNORECASE)
# A date names a note only when few notes are dated then: a year of many events is a category, as a name a third
# of the notes use is a word of the bundle (docs/design.md §2.1). Thellade's 212 PR dates 9 notes, -12 PR two.
DATED_MOST = 3
ERA_SEEN = 3  # date fields that end with a word after the year before it counts as the calendar's era ("PR")

_NUMBER = re.compile(r"-?\d+")
_TOKEN = re.compile(r"-?\d+|[^\W\d_]+")
_ISO = re.compile(r"^\s*(-?\d{1,4})[-.](\d{1,2})(?:[-.](\d{1,2}))?(?!\d)")  # 2024-03-05, -0012.04.01
_ISO_IN_TEXT = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")  # an ISO date anywhere in a question
_LINK = re.compile(r"^\s*\[\[(?:[^\]|]*/)?([^\]|/]*?)(?:\|[^\]]*)?\]\]\s*$")  # "[[-12]]", "[[Years/-12|-12]]"
_ERA_AT_END = re.compile(r"-?\d+\s+([^\W\d_]{1,4})\s*$")


@dataclass
class Calendar:
    """The bundle's month words (each as itself; English ones as their number) and eras."""

    months: dict[str, str | int] = field(default_factory=lambda: dict(MONTHS))
    eras: set[str] = field(default_factory=set)


@dataclass
class DatedNotes:
    """Every note with a date in its frontmatter, by year and field: year -> field key -> note id -> its (month,
    day)s that year in that field (a daily note's name is the field TITLE_FIELD)."""

    calendar: Calendar
    by_year: dict[int, dict[str, dict[str, set[tuple[Any, Any]]]]]
    years_of: dict[str, int]  # distinct years a note is dated in: a festival held every year is no one year's event


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif value is not None and not isinstance(value, dict):
        yield str(value)


# A value written as a date, whatever its key says: "24 Stardrift 93 PR" (a day, a month word, a year), "2024-03-05",
# "March 5, 2024". Thellade dates its factions `founded` and its sessions `in_game_start`, neither a DATE_KEY.
DATE_SHAPE = re.compile(r"^\s*(?:\d{1,2}\s+[^\W\d_]+\s+-?\d{1,4}|-?\d{1,4}-\d{1,2}-\d{1,2}|[^\W\d_]+\s+\d{1,2},\s*\d{4})")


def is_date_field(key: str, value: str) -> bool:
    """A frontmatter field that says when what the note tells happened: its key says date or year, or its value is
    written as a date; never the file's bookkeeping (when it was written, checked, recapped), nor a value with no
    number in it (Thellade's festivals keep `enddate: ""`)."""
    return (not BOOKKEEPING.search(key) and _NUMBER.search(value) is not None
            and bool(DATE_KEY.search(key) or DATE_SHAPE.match(value)))


def date_fields(frontmatter: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, value as text) of a note's date fields."""
    return [(str(key), text) for key, value in frontmatter.items() for text in _texts(value)
            if is_date_field(str(key), text)]


TITLE_FIELD = ""  # a note named by its date ("2024-03-05"), as a field of the index


def says_date(key: str) -> bool:
    """A field whose key says it holds a date, or a note's name that is one. Such a field names its notes by the day,
    the month or the year; one dated only by how its value is written (Thellade's `in_game_start: 04 Dawnmarch 212
    PR 10:00`) by the day alone: a month or a year of sessions is a stretch of the campaign, not a name (by the year
    too, Thellade-check4's "from -62 PR through -12 PR…" lost its events, stop 57). Nor is the calendar learnt from
    it: "212 PR 10:00" would make the era a month word."""
    return key == TITLE_FIELD or bool(DATE_KEY.search(key))


def learn_calendar(values: Iterable[str]) -> Calendar:
    """Month words: a word between two numbers in a date ("01 Dawnmarch 212 PR"); eras: a short word after the year
    ending ERA_SEEN dates or more."""
    calendar = Calendar()
    eras: dict[str, int] = defaultdict(int)
    for value in values:
        tokens = _TOKEN.findall(value)
        for before, word, after in zip(tokens, tokens[1:], tokens[2:]):
            if _NUMBER.fullmatch(before) and _NUMBER.fullmatch(after) and not _NUMBER.fullmatch(word):
                calendar.months.setdefault(word.casefold(), word.casefold())
        era = _ERA_AT_END.search(value)
        if era:
            eras[era.group(1).casefold()] += 1
    calendar.eras = {era for era, seen in eras.items() if seen >= ERA_SEEN and era not in calendar.months}
    return calendar


def parse_date(text: str, calendar: Calendar) -> Date | None:
    """(year, month, day) of a date field's value, None for parts it does not say: "2024-03-05", "-0012.04.01 PR",
    "01 Dawnmarch 212 PR", "March 5, 2024", "-12", "[[-12]]". None when it holds no year."""
    linked = _LINK.match(text)
    text = linked.group(1) if linked else text
    numeric = _ISO.match(text)
    if numeric:
        return int(numeric.group(1)), int(numeric.group(2)), int(numeric.group(3)) if numeric.group(3) else None
    tokens = _TOKEN.findall(text)
    if any(token.casefold() in calendar.months for token in tokens):  # a month's day without its year says no year
        return next(((year, month, day) for year, month, day in _dates_in(tokens, calendar) if year is not None), None)
    numbers = [token for token in tokens if _NUMBER.fullmatch(token)]
    return (int(numbers[0]), None, None) if len(numbers) == 1 else None


def _dates_in(tokens: list[str], calendar: Calendar) -> list[tuple[int | None, Any, int | None]]:
    """Dates written with a month word: "8 Dawnmarch 212", "Dawnmarch 212", "March 5, 2024" (a day, then the year),
    and a day of a month without its year ("09 Dawnmarch": year None)."""
    found: list[tuple[int | None, Any, int | None]] = []
    for i, token in enumerate(tokens):
        month = calendar.months.get(token.casefold())
        if month is None:
            continue
        after = tokens[i + 1:i + 3]
        day = int(tokens[i - 1]) if i and re.fullmatch(r"\d{1,2}", tokens[i - 1]) else None
        if len(after) == 2 and all(_NUMBER.fullmatch(t) for t in after) and 1 <= int(after[0]) <= 31:
            found.append((int(after[1]), month, int(after[0])))
        elif after and _NUMBER.fullmatch(after[0]):
            found.append((int(after[0]), month, day))
        elif day is not None:
            found.append((None, month, day))
    return found


# A note named by its date is dated then: an Obsidian daily note "2024-03-05", a meeting "2024-03-05 Standup". Its
# title never matches as a name (numbers only: docs/design.md §2.1), so without this "What did I write on
# 2024-03-05?" found it by nothing but BM25 over "2024", "03" and "05".
TITLE_DATE = re.compile(r"^\s*(\d{4}-\d{1,2}-\d{1,2})(?!\d)")


def dated_notes(rows: Iterable[tuple[str, str | None, str | None]]) -> DatedNotes:
    """The index, from (note id, frontmatter JSON, title) rows."""
    fields: list[tuple[str, str, str]] = []  # (note id, key, value)
    for concept_id, frontmatter, title in rows:
        try:
            data = json.loads(frontmatter or "{}")
        except (TypeError, ValueError):
            data = {}
        if isinstance(data, dict):
            fields.extend((concept_id, key, text) for key, text in date_fields(data))
        named = TITLE_DATE.match(title or "")
        if named:
            fields.append((concept_id, TITLE_FIELD, named.group(1)))
    calendar = learn_calendar(text for _, key, text in fields if says_date(key))
    by_year: dict[int, dict[str, dict[str, set[tuple[Any, Any]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(set)))
    years: dict[str, set[int]] = defaultdict(set)
    for concept_id, key, text in fields:
        date = parse_date(text, calendar)
        if date:
            by_year[date[0]][key][concept_id].add(date[1:])
            if says_date(key):  # a session's in-game start is no year an event recurs in
                years[concept_id].add(date[0])
    return DatedNotes(calendar, {year: {key: dict(notes) for key, notes in keys.items()}
                                 for year, keys in by_year.items()},
                      {concept_id: len(seen) for concept_id, seen in years.items()})


def named_dates(question: str, calendar: Calendar) -> list[Date]:
    """The dates a question writes, in order: an ISO date; a month word beside a year ("Dawnmarch 212", "8
    Dawnmarch 212", "March 5, 2024"); a number followed by the calendar's era ("-12 PR"); a year of four digits
    (1000-2999). "Group 4", "level 8" and "session 10" name no date."""
    found: list[Date] = [(int(y), int(m), int(d)) for y, m, d in _ISO_IN_TEXT.findall(question)]
    tokens = _TOKEN.findall(_ISO_IN_TEXT.sub(" ", question))
    with_month = _dates_in(tokens, calendar)
    for n, (year, month, day) in enumerate(with_month):
        if year is None:  # "between 03 Dawnmarch 212 PR and 09 Dawnmarch": the year said before it, else after it
            before = [y for y, _, _ in with_month[:n] if y is not None]
            after = [y for y, _, _ in with_month[n + 1:] if y is not None]
            year = before[-1] if before else after[0] if after else None
        if year is not None:
            found.append((year, month, day))
    said = {date[0] for date in found} | {date[2] for date in with_month if date[2] is not None}
    for i, token in enumerate(tokens):
        after = tokens[i + 1].casefold() if i + 1 < len(tokens) else ""
        if not _NUMBER.fullmatch(token) or int(token) in said:
            continue
        if after in calendar.eras or (re.fullmatch(r"\d{4}", token) and 1000 <= int(token) <= 2999):
            found.append((int(token), None, None))
    return list(dict.fromkeys(found))


def _specificity(wanted: Date, dates: set[tuple[Any, Any]]) -> int:
    """How closely a note's dates in the wanted year meet it: 3 the day, 2 the month, 1 the year when the question
    names no month; 0 when it names a month and the note is dated in other months, or in none, that year."""
    _, month, day = wanted
    if month is None:
        return 1
    days = [note_day for note_month, note_day in dates if note_month == month]
    if not days:
        return 0
    if day is not None and day in days:
        return 3
    return 2 if day is None or None in days else 0


def notes_dated(question: str, index: DatedNotes) -> list[tuple[str, float]]:
    """The notes dated when the question says, best first. For each date it names and each date field, the notes
    that meet it most closely in that field (the day before the month, the month before the year), if DATED_MOST or
    fewer do: "04 Dawnmarch 212 PR" names two events by their `startdate` and three sessions by their
    `in_game_start`, not five notes of one kind (Thellade-check10's thl26). Summed over the dates named, a note's
    closest field counting once. A note dated in more than DATED_MOST years (a festival held every year) is no one
    year's."""
    scores: dict[str, float] = defaultdict(float)
    for wanted in named_dates(question, index.calendar):
        closest_of: dict[str, int] = {}
        for key, notes in index.by_year.get(wanted[0], {}).items():
            if wanted[2] is None and not says_date(key):
                continue
            met = {concept_id: specificity for concept_id, dates in notes.items()
                   if index.years_of.get(concept_id, 0) <= DATED_MOST
                   and (specificity := _specificity(wanted, dates))}
            best = max(met.values(), default=0)
            closest = [concept_id for concept_id, specificity in met.items() if specificity == best]
            if len(closest) <= DATED_MOST:
                for concept_id in closest:
                    closest_of[concept_id] = max(closest_of.get(concept_id, 0), best)
        for concept_id, specificity in closest_of.items():
            scores[concept_id] += specificity
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
