"""Concepts are cut at their headings into pieces of at most ~200 words."""

from datasette_okf.chunks import embedding_text, own_heading, split_into_chunks
from datasette_okf.markdown import readable


def test_chunks_follow_headings():
    body = "Intro line with some words.\n\n## Appearance\n\nTall and grey-eyed.\n\n## Secrets\n\nWorks for the Accord.\n"
    chunks = split_into_chunks(body)
    assert [(c.seq, c.heading, c.text) for c in chunks] == [
        (0, None, "Intro line with some words."),
        (1, "Appearance", "Tall and grey-eyed."),
        (2, "Secrets", "Works for the Accord."),
    ]


def test_long_sections_are_cut_at_paragraphs_then_words():
    paragraph = " ".join(["word"] * 120)
    body = "# Long\n\n" + "\n\n".join([paragraph] * 3) + "\n\n" + " ".join(["huge"] * 450)
    chunks = split_into_chunks(body, max_words=200)
    assert [len(c.text.split()) for c in chunks] == [120, 120, 120, 200, 200, 50]
    assert all(c.heading == "Long" for c in chunks)


def test_a_long_table_is_cut_at_its_rows_and_each_part_keeps_the_header():
    """An OKF table's column list is one long paragraph: cut at words it became one line of cells ("| Column |
    Type | … | | `order_id` | STRING |…"), which is what the LLM was handed."""
    header = "| Column | Type | Description |"
    rows = [f"| `col_{i}` | STRING | the {i}th column of the orders table |" for i in range(40)]
    chunks = split_into_chunks("\n".join([header, *rows]), max_words=200)
    assert len(chunks) > 1 and all(len(c.text.split()) <= 200 for c in chunks)
    assert all(c.text.split("\n")[0] == header for c in chunks)
    assert [line for c in chunks for line in c.text.split("\n")[1:]] == rows  # every row once, whole, in order


def test_the_lines_after_a_table_in_its_paragraph_are_not_led_by_its_header():
    """13th Age's chaos mage writes a table and its feats with no blank line between: the part that held only the
    feats opened with the table's header row ("| `dice: 1d6` | Effect |" above "Once per battle when you roll…"),
    a table with no rows, in what the LLM was handed."""
    header = "| `dice: 1d6` | Effect |"
    rows = [f"| {i} | **Element {i}**: a bonus equal to your level |" for i in range(1, 7)]
    feats = ["**Adventurer Feat**", " ".join(["Once per battle when you roll for a warp effect, roll twice."] * 6),
             "**Champion Feat**", " ".join(["When you roll a natural 18 or more on a save, an ally saves too."] * 6)]
    chunks = split_into_chunks("\n".join([header, *rows, *feats]), max_words=100)
    assert len(chunks) > 1
    assert chunks[0].text.split("\n")[:7] == [header, *rows]
    assert [c.text for c in chunks if header in c.text] == [chunks[0].text]  # the feats' parts have no header
    assert [line for c in chunks for line in c.text.split("\n")] == [header, *rows, *feats]


def test_a_long_code_block_is_cut_at_its_lines_closed_and_reopened():
    lines = [f"    - name: \"Trait {i}\"" for i in range(80)]
    body = "```statblock\n" + "\n".join(lines) + "\n```\n\nAfter the block."
    chunks = split_into_chunks(body, max_words=100)
    assert len(chunks) > 1
    for chunk in chunks[:-1]:
        assert chunk.text.startswith("```statblock\n") and chunk.text.endswith("\n```")
    assert chunks[-1].text.endswith("```\n\nAfter the block.")
    kept = [line for c in chunks for line in c.text.split("\n") if line.startswith("    - name")]
    assert kept == lines  # indents kept: a statblock's YAML still reads as YAML


def test_chunks_of_readable_text_leave_plugin_markup_out_but_keep_other_code():
    body = (
        "## Stats\n\n```statblock\nname: Drider\nac: 19\n```\n\n"
        "```dataview\nTABLE file.name FROM \"x\"\n```\n\n"
        "> [!metadata|geography]- Region\n> ```dataview\n> TABLE y\n\n"
        "**Aliases** |  |\n---|---|\n"
        "A real sentence with `INPUT[text:name]` markup removed.\n"
    )
    text = "\n".join(c.text for c in split_into_chunks(readable(body)))
    assert "name: Drider" in text and "ac: 19" in text
    assert "TABLE" not in text and "INPUT[" not in text and "Aliases" not in text
    assert "A real sentence with  markup removed." in text


def test_headings_inside_code_are_not_headings():
    body = "## Real\n\nText here now.\n\n```markdown\n# Not a heading\n```\n"
    assert [c.heading for c in split_into_chunks(body)] == ["Real"]


def test_an_empty_note_still_has_one_chunk():
    assert [(c.seq, c.heading, c.text) for c in split_into_chunks("")] == [(0, None, "")]


def test_embedding_text_carries_title_and_description():
    assert embedding_text("Mira Vell", "A smuggler.", "Secrets", "Works nights.") == (
        "Mira Vell\nA smuggler.\nSecrets\nWorks nights."
    )
    assert embedding_text("Mira Vell", None, None, "") == "Mira Vell"


def test_chunk_headings_are_the_headings_the_build_lists():
    # Before: chunks had their own heading pattern with no indentation allowed, so "   ## Secrets" was a heading
    # in the headings table (and for links to #secrets) but text inside the previous chunk.
    body = "Intro words here.\n\n   ## Secrets ##\n\nWorks for the Accord.\n\n~~~\n# shell comment\n~~~\n"
    assert [(c.heading, c.text) for c in split_into_chunks(body)] == [
        (None, "Intro words here."),
        ("Secrets", "Works for the Accord.\n\n~~~\n# shell comment\n~~~"),
    ]


def test_a_fence_in_a_callout_ends_with_the_callout():
    body = "> [!info]\n> ```dataview\n> TABLE x\n## After\n\nPlain prose line.\n"
    assert [(c.heading, c.text) for c in split_into_chunks(readable(body))] == [("After", "Plain prose line.")]


def test_a_chunk_heading_names_its_parent_unless_that_is_the_title_or_a_level_one_heading():
    """13th Age writes an "Epic Feat" under each of a class's talents: alone, "Epic Feat / Bonus increases to +3."
    said neither to the LLM nor to the model whose feat it was."""
    body = ("# Fighter\nFighters hit hard.\n## Class Talents\nChoose three.\n### Heavy Blows\nAny natural even miss."
            "\n#### Epic Feat\nBonus increases to +3.\n### Cleave\nOnce per battle.\n#### Epic Feat\nMove first.\n"
            "## Stats\nHit points.\n")
    assert [c.heading for c in split_into_chunks(body, title="Fighter")] == [
        "Fighter", "Class Talents", "Class Talents > Heavy Blows", "Heavy Blows > Epic Feat", "Class Talents > Cleave",
        "Cleave > Epic Feat", "Stats"]
    titled = "## Boba\nA port city.\n### Overview\nBig.\n"  # the note's title as its first heading
    assert [c.heading for c in split_into_chunks(titled, title="Boba")] == ["Boba", "Overview"]
    assert own_heading("Heavy Blows > Epic Feat") == "Epic Feat" and own_heading(None) == ""


def test_an_underscore_inside_a_word_stays_in_the_heading():
    """GA4's "### 2. Extract nested page_location from event_params" was read "pagelocation from eventparams":
    no keyword search for page_location found the heading, and the LLM read a column that does not exist."""
    body = "## 2. Extract nested page_location from event_params\nUnnest it.\n## __Bold__ and _em_ and `code`\nx\n"
    assert [c.heading for c in split_into_chunks(body)] == [
        "2. Extract nested page_location from event_params", "Bold and em and code"]
