"""The text-level markdown primitives every other module uses: slugs, masking, headings, decoding."""

import time
from pathlib import Path

import pytest
import sqlite_utils
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_okf.frontmatter import split_frontmatter
from datasette_okf.lint import run_lint
from datasette_okf.markdown import decode, headings, mask_code, readable, shown_text, slug
from datasette_okf.sqlfunctions import prepare_connection
from datasette_okf.store import build

from .conftest import write_bundle


def test_slug_agrees_across_spellings_of_one_heading():
    assert slug("the_drowned_steps") == slug("The Drowned Steps") == slug("the-drowned-steps") == "the-drowned-steps"
    assert slug("  Who's who? (1298) ") == "who-s-who-1298"
    assert slug("Café Noir") == "café-noir"
    assert slug("***") == ""


def test_a_link_with_underscores_finds_its_heading_in_a_build(tmp_path):
    root = write_bundle(tmp_path / "b", {
        "note.md": "---\ntype: Place\n---\n## The Drowned Steps\n\nDark water.\n",
        "mira.md": "---\ntype: Person\n---\nSee [x](note.md#the_drowned_steps) and [y](note.md#nowhere).\n",
    })
    build([root], tmp_path / "b.db", embed=False)
    conn = sqlite_utils.Database(tmp_path / "b.db").conn
    prepare_connection(conn)
    assert conn.execute("select slug from headings").fetchall() == [("the-drowned-steps",)]
    [check] = run_lint(conn, only="missing_headings")
    assert [row[2] for row in check["rows"]] == ["nowhere"]


def test_mask_code_keeps_offsets_and_lines():
    body = "a `code` b\n```\nx\n```\nc"
    masked = mask_code(body)
    assert len(masked) == len(body) and masked.count("\n") == body.count("\n")
    assert "code" not in masked and masked.endswith("c")


def test_mask_code_blanks_fences_in_callouts_comments_and_spans():
    body = (
        "keep `span` keep\n"
        "> [!note]\n> ```dataview\n> hidden\n"
        "shown after the quote\n"
        "~~~~\n```\nstill hidden\n~~~~\n"
        "<!-- gone\nacross lines --> kept %% gone too %%\n"
    )
    masked = mask_code(body)
    assert masked.split("\n")[0] == "keep        keep"
    assert "> [!note]" in masked and "dataview" not in masked and "hidden" not in masked
    assert "shown after the quote" in masked
    assert "gone" not in masked and "across" not in masked and " kept " in masked
    assert [len(line) for line in masked.split("\n")] == [len(line) for line in body.split("\n")]


def test_headings_outside_code_with_their_lines():
    body = (
        "# Title\n\n```\n# not a heading\n```\n   ## Indented ##\n> # quoted\n"
        "<!--\n# commented\n-->\n###### Six\n####### Seven\n#tag\n"
    )
    assert headings(body, first_line=5) == [(1, "Title", 5), (2, "Indented", 10), (6, "Six", 15)]


def test_a_heading_keeps_the_code_written_in_it():
    # Before: the code span was blanked with the rest of the code, so the heading read "The        Spell",
    # its slug was "the-spell", and every link to #the-gate-spell was reported as a missing heading.
    assert headings("## The `Gate` Spell\n## `okf_slug`\n") == [(2, "The `Gate` Spell", 1), (2, "`okf_slug`", 2)]
    assert slug(headings("## The `Gate` Spell")[0][1]) == "the-gate-spell"


def test_an_unpaired_backtick_does_not_hide_the_headings_after_it():
    body = "Write a ` by itself.\n\n## Next\n\nAnd another ` here.\n"
    assert headings(body) == [(2, "Next", 3)]


@pytest.mark.parametrize(
    "data, text, warning",
    [
        (b"plain caf\xc3\xa9", "plain café", None),
        (b"\xef\xbb\xbf---\ntitle: x\n---\n", "---\ntitle: x\n---\n", None),
        ("caf\u00e9\r\nline\rend".encode("utf-16"), "café\nline\nend", "file is UTF-16, not UTF-8 (OKF §4); read as UTF-16"),
        ("\ufeffcafé".encode("utf-16-be"), "café", "file is UTF-16, not UTF-8 (OKF §4); read as UTF-16"),
        (b"caf\xe9 \x93quoted\x94", "café \u201cquoted\u201d",
         "not valid UTF-8 (byte 0xe9 at offset 3); read as Windows-1252"),
        (b"caf\xe9 \x81", "café \x81", "not valid UTF-8 (byte 0xe9 at offset 3); read as Latin-1"),
        (b"one\r\ntwo\rthree\n", "one\ntwo\nthree\n", None),
    ],
)
def test_decode_reads_what_the_build_reads(data, text, warning):
    assert decode(data) == (text, warning)


def test_masking_unclosed_fences_in_callouts_stays_linear():
    # Before: each callout fence with no closing fence searched the rest of the file for one (11 s for this
    # 0.3 MB; a 4 MiB note for most of an hour): now the search stops where the callout ends.
    text = "> [!n]\n> ```dataview\n> q\n\ntext more\n" * 5_000
    started = time.perf_counter()
    masked = mask_code(text)
    assert time.perf_counter() - started < 3
    assert "dataview" not in masked and masked.count("text more") == 5_000


@pytest.mark.parametrize(
    "data, text, offset", [(b"\xff\xfeA\x00B", "A\ufffd", 4), (b"\xff\xfe\x00\xd8A\x00", "\ufffdA", 2)]
)
def test_broken_utf16_is_read_with_a_warning_not_an_exception(data, text, offset):
    # Before: UnicodeDecodeError ("truncated data", "illegal UTF-16 surrogate"), which stopped the whole build.
    assert decode(data)[0] == text
    assert decode(data)[1] == (
        f"file is UTF-16, not UTF-8 (OKF §4); read as UTF-16, invalid byte 0x{data[offset]:02x} at offset {offset} replaced"
    )


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40).map(lambda tail: b"\xff\xfe" + tail) | st.binary(max_size=40))
def test_decode_takes_any_bytes(data):
    text, _ = decode(data)
    assert "\r" not in text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#`~>-_ <!%\n\tab")), max_size=120))
def test_masking_and_headings_never_raise_and_keep_shape(text):
    masked = mask_code(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    for level, heading, line in headings(text):
        assert 1 <= level <= 6 and 1 <= line <= text.count("\n") + 1


# --- readable(): what a reader sees, from real snippets of the Thellade and 13th Age vaults (tests/fixtures/plugins) ---

PLUGINS = Path(__file__).parent / "fixtures" / "plugins"
MARKUP = ("INPUT[", "VIEW[", "BUTTON[", "<span", "=this.", "dataview", "<%", "%%", "[!", "<iframe", "<br", "meta-bind")


def readable_note(relative: str) -> str:
    _, body, _ = split_frontmatter((PLUGINS / relative).read_text())
    return readable(body, Path(relative).stem)


@pytest.mark.parametrize("relative", sorted(str(p.relative_to(PLUGINS)) for p in PLUGINS.rglob("*.md")))
def test_no_plugin_markup_is_left_in_any_fixture_note(relative):
    text = readable_note(relative)
    assert [sign for sign in MARKUP if sign in text] == []
    assert not any(line.lstrip().startswith(">") for line in text.split("\n"))  # quote and callout markers


def test_meta_bind_infobox_dataview_and_empty_sections_are_left_out_and_the_prose_kept():
    text = readable_note("01 World/06 Settlements/Ambassadors Row.md")
    assert text == (
        "# Ambassadors Row\n\n"  # the heading was `=this.file.name` and a VIEW[]: markup, so the note's title
        "Introduction\nA script for the GM to read when the party arrive to this location for the first time.\n\n"
        "## Overview\nTheme\n*“Where sand meets stone, and roots grasp the sky.”*\n"
        "The administrative and diplomatic hub. Home to the Arcane Embassy, and various noble residences.\n"
        "_Functions:_ Faction headquarters, political intrigue, magical oversight."
    )  # gone: the js view, the Metadata/Info callouts and tables, "Locations" over its dataview, empty sections,
    # and "Special Items" over a table with no filled row (its header was all the LLM read of 193 Thellade shops)


def test_a_dataview_query_written_unquoted_inside_a_column_callout_is_left_out():
    """51 Thellade era and event notes open ```dataview inside a column callout and write the query without `>`:
    "LIST / FROM outgoing([[]]) / WHERE econtains(tags, …)" reached the chunks, FTS and the LLM."""
    text = readable_note("04 Lore/Eras/Age of Gilded Chains (GC).md")
    assert text == (
        "# Age of Gilded Chains (GC)\n\n## Overview\n\n"  # each query ended by `>` or by a heading
        "The Age of Gilded Chains marks an era of trade routes, binding pacts and noble houses, when\n"
        "Ambassadors Row first housed the embassies."
    )


def test_links_read_as_their_shown_text_and_html_comments_and_block_ids_go():
    text = readable_note("03 Entities/04 NPCs/Vaust Hadrinel.md")
    assert "Currently impersonating Dornal Syle, a missing Arcane Warden." in text  # an alias stays the alias
    assert "\nSeen last at the embassy quarter." in text  # [[Target|shown]] → shown; <br> → a new line
    assert "Born on the Kanda Isles." in text  # [[01 Campaign/…/Kanda Isles]]: a path reads as its note's name
    assert "frame: Demiplane" not in text and "style:" not in text and "```" not in text  # custom-frames
    assert "GM only" not in text and "^desc-1" not in text
    assert text.startswith("# Vaust Hadrinel\n\n## Overview")


def test_a_block_id_alone_under_a_table_goes_too():
    """Obsidian writes a table's or a list's block id on the line under it: the 13th Age rogue's sneak attack
    table was handed to the LLM followed by "^13A-Class-Rogue-Sneak" (173 such lines in 74 notes)."""
    text = readable("| Rogue Level | Extra Damage |\n| --- | --- |\n| 1 | +1d4 |\n^13A-Class-Rogue-Sneak\n\n"
                    "- a list item\n^list-id\nA paragraph ^para-id\nThe x^2 term stays.\n")
    assert "^" not in text.replace("x^2", "")
    assert "| 1 | +1d4 |" in text and "- a list item" in text and "A paragraph" in text and "x^2" in text



def test_a_query_in_a_callout_quoted_on_every_line_but_its_first_goes_to_its_closing_fence():
    """Thellade's six party dashboards: `>>```dataview`, then `TABLE WITHOUT ID` unquoted, then the rest of the
    query quoted up to `>>```. Only the first line went, and each dashboard's one chunk was the query's remains
    ("" + link(file.link, Title) + "" AS Title / FROM "01 Campaign" / ```), handed to the LLM whenever a question
    named "Campaign Group 5"."""
    body = ('> [!metadata|sessionlogs]- Session Logs\n>> [!cards|dataview 3]\n>>```dataview\nTABLE WITHOUT ID\n'
            '>>     "<span style=\'display: block\'>" + link(file.link, Title) + "</span>" AS Title\n'
            '>> FROM "Campaign"\n>> WHERE econtains(whichparty, this.file.link)\n>>SORT sessiondate DESC LIMIT 9\n'
            '>>```\n\n## Notes\nThe party owes the harbour guild forty crowns.\n')
    assert readable(body) == "## Notes\nThe party owes the harbour guild forty crowns."


def test_dataview_fields_keep_their_value_and_templater_iframes_and_empty_rows_go():
    text = readable_note("Compendium/Talents/Shadow Walk.md")
    assert text.startswith("**Requirements**: **Dark Elf**\nOnce per battle, teleport as a move action")
    assert "tp.file" not in text and "example.invalid" not in text
    assert "| Once per battle | Nearby |" in text and "|  |  |" not in text and "|---|" not in text


def test_a_session_note_keeps_its_inline_field_and_links_and_loses_its_query_and_embed():
    text = readable_note("Sessions/Session 3.md")
    assert text == ("Date: 2026-03-01\nWe met the priest at Ambassadors Row > Overview, who called himself Dornal Syle.")


def test_a_heading_that_is_a_label_with_its_value_removed_becomes_the_title():
    text = readable_note("01 World/06 Settlements/Eastport.md")
    assert text.startswith("# Eastport\n\nIntroduction\n") and "Updated" not in text
    assert "Racial Makeup\n- Humans – 45% (Kandan Natives, Merchant Class)" in text  # <span>/<strong> text kept


def test_shown_text_is_what_obsidian_displays_but_a_path_reads_as_its_note():
    assert shown_text("Vaust Hadrinel|the priest") == "the priest"
    assert shown_text("Dornal Syle") == "Dornal Syle"
    assert shown_text("Ambassadors Row#Overview") == "Ambassadors Row > Overview"
    assert shown_text("#Overview") == "Overview"
    assert shown_text("Note#^block-1") == "Note > block-1"
    assert shown_text("Folder/Note") == "Note"  # as a published vault shows it; Obsidian shows the path
    assert shown_text("01 Campaign/01 World/Kanda Isles#Overview|") == "Kanda Isles > Overview"


def test_a_table_with_no_filled_row_is_left_out_header_and_all_and_a_filled_one_kept():
    body = ("## Special Items\n\n| Item | Cost |\n| ---- | ---- |\n|      |      |\n"
            "## Food\n| Name | Description | Cost |\n|---|---|---|\n"
            "## Services\n| Service | Cost |\n|---|---|\n| Healing | 50 gp |\n|  |  |\n")
    assert readable(body) == "## Services\n| Service | Cost |\n| Healing | 50 gp |"


def test_a_table_comes_without_the_spaces_that_pad_its_cells():
    """13th Age's class tables pad every cell to the widest one: a Chaos Mage row of 50 words was 435 characters,
    155 of them padding, that the budget counted and the LLM was handed (3.5 % of that vault's text). Rendered, a
    table has one space between a word and a bar; code keeps its spaces as written."""
    body = ("| Level | Effect                       |\n| ----- | ---------------------------- |\n"
            "| 23–24 | Thunder, and the next miss   |\n\n```statblock\nname:    \"Glorp\"\n```\n"
            "Two  spaces in prose stay.\n")
    assert readable(body) == ("| Level | Effect |\n| 23–24 | Thunder, and the next miss |\n\n"
                              "```statblock\nname:    \"Glorp\"\n```\nTwo  spaces in prose stay.")


def test_a_statblock_shows_its_links_as_their_text():
    body = "```statblock\nname: \"Nalfeshnee\"\ndesc: \"gate in 2d4 [[Hooked-Demon|hooked demons]]\"\n```"
    assert readable(body) == "```statblock\nname: \"Nalfeshnee\"\ndesc: \"gate in 2d4 hooked demons\"\n```"


def test_code_that_is_not_a_plugin_is_kept_as_written():
    body = "## Stats\n\n```statblock\nname: \"Dire Tiger\"\nlevel: \"6\"\n```\n\n> ```python\n> print('<span>')\n> ```\n"
    assert readable(body) == "## Stats\n\n```statblock\nname: \"Dire Tiger\"\nlevel: \"6\"\n```\n\n```python\nprint('<span>')\n```"
