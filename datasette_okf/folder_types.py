"""A vault note's type from its folder: `04 NPCs/Vaust.md` is a Person.

Obsidian vaults have no `type` (OKF §4.1 requires one); their folders say what a
note is. The converter writes the type into the frontmatter; the build infers it
for a plain vault (recorded as `type_source = 'folder'`) so that facets and lint
make sense before any conversion. One map for both.
"""

from __future__ import annotations

import posixpath
import re

DEFAULT_TYPES = {
    "people": "Person", "person": "Person", "npcs": "Person", "npc": "Person", "characters": "Person",
    "pcs": "Person", "players": "Person",
    "places": "Place", "locations": "Place", "settlements": "Place", "regions": "Place", "districts": "Place",
    "points of interest": "Place", "cities": "Place",
    "sessions": "Session Log", "session notes": "Session Log", "session logs": "Session Log",
    "bad guys": "Antagonist", "villains": "Antagonist", "antagonists": "Antagonist",
    "organisations": "Organization", "organizations": "Organization", "factions": "Organization",
    "guilds": "Organization",
    "monsters": "Monster", "bestiary": "Monster", "creatures": "Monster",
    "items": "Item", "magic items": "Item", "quests": "Quest", "deities": "Deity", "gods": "Deity",
    "lore": "Lore", "spells": "Spell", "encounters": "Encounter", "religions": "Religion",
}
FALLBACK_TYPE = "Note"
# "04 NPCs", "02a Demon Lords", "1. Places", "01.02 Maps"; not "1st Age"
_NUMBERING = re.compile(r"^(?:[\s._-]+|\d+[a-z]?(?=[\s._-]|$))+", re.IGNORECASE)


def folder_name(name: str) -> str:
    """A folder's name without the numbering that orders it in a file browser: "02a Demon Lords" → "Demon Lords"."""
    return _NUMBERING.sub("", name).strip() or name.strip()


def folder_key(name: str) -> str:
    """How a folder name is matched against a type map: without numbering, casefolded."""
    return folder_name(name).casefold()


def type_for(path: str, type_map: dict[str, str]) -> tuple[str, str | None]:
    """(type, None) from the nearest mapped folder, or (FALLBACK_TYPE, the note's folder) when none is mapped.
    `type_map` keys are folder_key()s."""
    folder = posixpath.dirname(path)
    current = folder
    while current:
        name = folder_key(posixpath.basename(current))
        if name in type_map:
            return type_map[name], None
        current = posixpath.dirname(current)
    return FALLBACK_TYPE, folder
