"""The categories a question names (categories.py): how a person says a tag or a folder, and which of a bundle's a
question names."""

from __future__ import annotations

import pytest

from datasette_okf.categories import CategoryIndex, asks_whole, category_words, singular


@pytest.mark.parametrize("word, one", [("characters", "character"), ("deities", "deity"), ("kobolds", "kobold"),
                                       ("classes", "class"), ("boxes", "box"), ("boss", "boss"),
                                       ("status", "status"), ("analysis", "analysis"), ("gas", "gas")])
def test_a_plural_says_the_same_category_as_its_singular(word, one):
    assert singular(word) == one


@pytest.mark.parametrize("name, said", [
    ("Group6", ("group", "6")),  # a number joined to its word
    ("#PlayerCharacter", ("player", "character")),  # split at capitals, Obsidian's # left out
    ("13A/Monsters/Factions/Kobolds", ("kobold",)),  # a tag hierarchy's last part
    ("NPCs", ("npc",)),
    ("Location/POI", ("poi",)),
    ("income-statement", ("income", "statement")),
    ("vault/01 Campaign/03 Entities/02c Orcus' Lieutenants", ("orcus", "lieutenant")),  # a folder, its numbering off
    ("vault/01 Campaign/05 Parties/07 Session Notes/03 Campaign 03", ("campaign", "3")),
    ("vault/01 Campaign/03 Entities/03 Legendary Beings", ("legendary", "being")),  # "being" is a stopword, not alone
])
def test_a_tag_or_folder_is_said_by_its_last_parts_words_in_the_singular(name, said):
    assert category_words(name) == said


@pytest.mark.parametrize("name", ["InSession", "2024", "a", "x/of", "13A", "One/Two Three Four Five Six", "Being"])
def test_a_name_no_question_says_as_a_category_is_left_out(name):
    """"in session 9" does not name `InSession`; a year, a letter or a stopword is no category; nor is a sentence."""
    assert category_words(name) == ()


def test_a_question_names_the_categories_whose_words_it_says_side_by_side_in_its_order():
    index = CategoryIndex(["Character", "Player", "Group6", "Group6", "Group3", "NPC"],
                          ["v/Characters/Group 6", "v/Characters/Group 6", "v/Characters/Group 3", "v/Places"])
    assert index.named("Who are the player characters in Group 6?") == [
        {"words": "player", "label": "Player", "tags": ["Player"], "folders": [], "ids": [], "notes": 1,
         "least": 1, "asked": False},
        {"words": "character", "label": "Character", "tags": ["Character"], "folders": ["v/Characters"], "ids": [],
         "notes": 4, "least": 3, "asked": False},  # the tag's note and the folder's three, a folder above another holding
        # theirs; at least the folder's three
        {"words": "group 6", "label": "Group6", "tags": ["Group6"], "folders": ["v/Characters/Group 6"], "ids": [],
         "notes": 4, "least": 2, "asked": False}]
    assert [c["words"] for c in index.named("Which group had 6 players?")] == ["player"]  # not side by side
    assert index.named("Where is the harbour?") == []


def test_the_longer_category_a_question_names_wins_and_tags_said_alike_are_one_category():
    index = CategoryIndex(["Player", "Character", "PlayerCharacter", "Deity", "13A/Bestiary/Deity"], [])
    assert [(c["words"], c["tags"]) for c in index.named("Which player characters worship a deity?")] == [
        ("player character", ["PlayerCharacter"]), ("deity", ["13A/Bestiary/Deity", "Deity"])]


@pytest.mark.parametrize("question, asked", [
    ("Which red dragons are in the bestiary?", ["dragon"]), ("What finance metrics are there?", ["metric"]),
    ("How many kobold mooks are there?", ["mook"]), ("Which of the dragons are red?", ["dragon"]),
    ("What did the red dragons do?", []), ("Tell me about the red dragons", []), ("Which red dragon is largest?", []),
])
def test_a_question_asks_which_of_a_category_it_writes_in_the_plural_right_after_which_what_or_how_many(question, asked):
    index = CategoryIndex(["Red", "Dragon", "finance", "metric", "Kobold", "Mook"], [])
    assert [c["words"] for c in index.named(question) if c["asked"]] == asked


def test_a_short_frontmatter_value_few_notes_share_is_a_category_of_those_notes():
    """"Which realms are governed as monarchies?": Thellade's realms say `governmenttype: Monarchy`; "Which monsters
    are elite?": 13th Age's `strength: elite`. A value most notes share (`strength: normal`, 350 of them) is none."""
    from datasette_okf import categories

    values = [("governmenttype", "Monarchy", "v/Kanda"), ("governmenttype", "Monarchy", "v/Tidecairn"),
              ("governmenttype", "Council", "v/Boba"),
              *[("strength", "normal", f"v/m{n}") for n in range(categories.VALUE_MOST + 1)]]
    index = CategoryIndex([], [], values)
    assert index.named("Which realms are governed as monarchies?") == [
        {"words": "monarchy", "label": "governmenttype: Monarchy", "tags": [], "folders": [],
         "ids": ["v/Kanda", "v/Tidecairn"], "notes": 2, "least": 2, "asked": False}]
    assert index.named("Which monsters are normal?") == []


def test_a_number_is_said_with_its_key(tmp_path):
    """"Which monsters are level 0?" (13th-Age-sets2's tat13): `level: 0` is an integer in a stat block's frontmatter,
    and a number alone names nothing ("0"), so the six level-0 monsters were no category; said with its key it is one.
    The built database reads integer values too."""
    index = CategoryIndex(["Monster"], [], [("level", "0", "v/Stirge"), ("level", "0", "v/Giant Ant"),
                                             ("level", "3", "v/Ogre"), ("hp", "0", "v/Ghost")])
    [level] = [c for c in index.named("Which monsters are level 0?") if c["words"] == "level 0"]
    assert (level["label"], level["ids"]) == ("level: 0", ["v/Giant Ant", "v/Stirge"])
    assert [c["words"] for c in index.named("Which monsters have 0 hp?")] == ["monster"]  # "hp": too short a name

    from datasette_okf.retrieve import context_for
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "vault", {
        **{f"Monsters/{name}.md": f"---\ntags: [Monster]\nlevel: {level}\n---\nThe {name} attacks.\n"
           for name, level in [("Stirge", 0), ("Giant Ant", 0), ("Ogre", 3), ("Troll", 5)]},
        **{f"Monsters/Goblin {n}.md": "---\ntags: [Monster]\nlevel: 1\n---\nA goblin.\n" for n in range(9)}})
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Which monsters are level 0?")
    assert sorted(n["title"] for n in result["nodes"] if "level: 0" in n["via"]) == ["Giant Ant", "Stirge"]


@pytest.mark.parametrize("question, label, ids", [
    ("Which monsters are 14th level or higher?", "level >= 14", ["v/Gold Dragon", "v/Pit Fiend", "v/Tarrasque"]),
    ("Which monsters are level 14 or higher?", "level >= 14", ["v/Gold Dragon", "v/Pit Fiend", "v/Tarrasque"]),
    ("Which monsters are level 14+?", "level >= 14", ["v/Gold Dragon", "v/Pit Fiend", "v/Tarrasque"]),
    ("Which monsters are above level 14?", "level > 14", ["v/Tarrasque"]),
    ("Which monsters have a level above 14?", "level > 14", ["v/Tarrasque"]),
    ("Which monsters are under 1st level?", "level < 1", ["v/Stirge"]),
    ("Which monsters are level 3 or lower?", "level <= 3", ["v/Ogre", "v/Stirge"]),
    ("Which monsters are at least level 15?", "level >= 15", ["v/Tarrasque"]),
    ("Which monsters are 14th-level or higher?", "level >= 14", ["v/Gold Dragon", "v/Pit Fiend", "v/Tarrasque"]),
    ("Which monsters are under 3rd-level?", "level < 3", ["v/Stirge"]),
    ("Which monsters are between level 3 and 14?", "level 3 to 14", ["v/Gold Dragon", "v/Ogre", "v/Pit Fiend"]),
    ("Which monsters are between 14th and 15th level?", "level 14 to 15", ["v/Gold Dragon", "v/Pit Fiend",
                                                                          "v/Tarrasque"]),
    ("Which monsters are levels 0 to 3?", "level 0 to 3", ["v/Ogre", "v/Stirge"]),
])
def test_a_number_compared_with_its_key_is_the_set_in_range(question, label, ids):
    """"Which monsters are 14th level or higher?" (13th-Age-sets' tas13) asks for the notes whose `level` is 14, 15…;
    "level 14" alone was the category of the 14s, and the Tarrasque (15) was missed. The range replaces it."""
    index = CategoryIndex(["Monster"], [], [("level", "14", "v/Pit Fiend"), ("level", "14", "v/Gold Dragon"),
                                             ("level", "15", "v/Tarrasque"), ("level", "3", "v/Ogre"),
                                             ("level", "0", "v/Stirge")])
    assert [(c["label"], c["ids"]) for c in index.named(question) if c["words"] != "monster"] == [(label, ids)]


def test_a_value_that_says_its_key_with_a_number_compares_as_that_number():
    """13th Age's spells write `level: [5th level+]`; "Which chaos mage spells only open up at 5th level or higher?"
    (13th-Age-sets' tas14) wants the 5th and the 7th. The value's own category ("5th level") gives way to the range,
    as "level 14" does; a value of another number stays ("level 0 or level 14 or higher")."""
    index = CategoryIndex([], [], [("level", "5th level+", "v/Cascading Power"), ("level", "7th level+", "v/Unsummoning"),
                                   ("level", "1st level+", "v/Chaos Bolt"), ("level", "0", "v/Stirge"),
                                   ("level", "14", "v/Pit Fiend")])
    assert [(c["label"], c["ids"]) for c in index.named("Which spells open up at 5th level or higher?")] == [
        ("level >= 5", ["v/Cascading Power", "v/Pit Fiend", "v/Unsummoning"])]
    assert [c["label"] for c in index.named("Which are level 0 or level 14 or higher?")] == ["level: 0", "level >= 14"]


def test_a_number_said_with_its_key_but_no_comparison_is_no_range():
    index = CategoryIndex([], [], [("level", "14", "v/Pit Fiend"), ("level", "15", "v/Tarrasque")])
    assert index.named("What does a monster get at 14th level?") == []
    assert [c["label"] for c in index.named("Which monsters are level 14?")] == ["level: 14"]
    assert index.named("Which monsters are level 16 or higher?") == []  # none is: no category
    assert index.named("What happened between session 3 and 5?") == []  # no integer key "session"


def test_a_range_question_lists_the_notes_in_range(tmp_path):
    from datasette_okf.retrieve import context_for
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "vault", {
        **{f"Monsters/{name}.md": f"---\ntags: [Monster]\nlevel: {level}\n---\nThe {name} attacks.\n"
           for name, level in [("Stirge", 0), ("Pit Fiend", 14), ("Tarrasque", 15), ("Ogre", 3)]},
        **{f"Monsters/Goblin {n}.md": "---\ntags: [Monster]\nlevel: 1\n---\nA goblin.\n" for n in range(9)}})
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Which monsters are 14th level or higher?")
    assert sorted(n["title"] for n in result["nodes"] if "level >= 14" in n["via"]) == ["Pit Fiend", "Tarrasque"]


def test_what_of_a_value_in_the_plural_asks_what_they_were_not_which_notes_hold_it():
    """"What divine dreams and warnings came to Kothar…?" (Thellade-check5's thg32) named the deities whose
    `secondarydomains` say Dreams; "which" of a value, or "what" of a tag or a folder, still asks for a set."""
    index = CategoryIndex(["Dream"], [], [("secondarydomains", "Dreams", "v/Lunara"), ("domains", "Tides", "v/Nimara")])
    assert [c["asked"] for c in index.named("What divine tides came to Kothar in session 6?")] == [False]
    assert [c["asked"] for c in index.named("Which tides are there?")] == [True]
    assert [c["asked"] for c in index.named("What dreams came to Kothar?")] == [True]  # a tag's, too


@pytest.mark.parametrize("question, categories, whole", [
    ("Who are the deities?", ["deity"], True),
    ("List all the demon lords.", ["demon lord"], True),
    ("What deities are there?", ["deity"], True),
    ("Which metrics are defined?", ["metric"], True),  # a data catalog's user: the OKF samples' metric notes
    ("Which tables are available in the catalog?", ["table"], True),
    ("Which tables are available to analysts?", ["table"], False),  # "analysts": a part of them
    ("Which deities require their followers to take an unholy sanctification?", ["deity"], False),
    ("Name the star-mask creatures that come as mooks.", ["star mask", "mook"], False),
])
def test_a_question_asks_for_the_whole_of_the_categories_when_it_says_nothing_besides_them(question, categories, whole):
    assert asks_whole(question, categories) is whole
