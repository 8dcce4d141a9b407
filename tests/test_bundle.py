"""A bundle folder becomes concept, edge and issue records (OKF v0.2)."""

import os
from pathlib import Path

import pytest

from datasette_okf.bundle import parse_bundle, property_text, scan_bundle, trust_tier
from datasette_okf.markdown import slug

from .conftest import write_bundle


def read(root):
    return parse_bundle(scan_bundle(root))


def by_id(bundle):
    return {c.id: c for c in bundle.concepts}


@pytest.fixture
def small(tmp_path):
    return write_bundle(
        tmp_path / "lore",
        {
            "index.md": '---\nokf_version: "0.2"\n---\n# Lore\n\n* [People](people/) - who\n* [Harbour](places/harbour.md) - where\n',
            "log.md": "# Update Log\n\n## 2026-05-22\n* **Update**: Added [Mira](/people/mira.md).\n  More text.\n* **Creation**: Harbour.\n\n## 2026-05-15\n* **Initialization**: Created.\n",
            "people/index.md": "# People\n\n* [Mira](mira.md)\n",
            "people/mira.md": (
                "---\ntype: Person\ntitle: Mira Vell\ndescription: A smuggler.\ntags: [npc, smuggler]\n"
                "aliases: [The Gull Queen]\n"
                "generated: {by: scribe_agent/llm-1, at: 2026-08-09T10:00:00Z}\n"
                "verified: {by: human:gm, at: 2026-09-01T10:00:00Z}\n"
                "stale_after: 2026-01-01T00:00:00Z\n"
                "sources:\n  - {id: s1, resource: /places/harbour.md, title: Harbour notes}\n  - {id: s2, resource: https://example.com/lore}\n"
                "relations:\n  - {predicate: member_of, object: /orgs/gulls.md, date: '2026-03-01', source: s1}\n"
                "  - {predicate: born_on, object: '1321-05-02'}\n  - {predicate: rival_of, object: /people/nobody.md}\n"
                "location: '[[harbour]]'\n"
                "---\n# Mira\n\nWorks the [docks](../places/harbour.md#the-drowned-steps). See [gulls][g].\n\n[g]: /orgs/gulls.md\n"
            ),
            "places/harbour.md": "---\ntype: Place\n---\n## The Drowned Steps\n\nDark. [Abbey](/places/ashen-abbey.md) [out](../../x.md) ![map](../map.txt)\n",
            "orgs/gulls.md": "---\ntype: Organization\nstatus: Deprecated\n---\nGang. [[Mira Vell]] [[The Gull Queen|Mira]]\n",
            "orgs/charter-v1.md": "---\ntype: Charter\nsuperseded_by: /orgs/charter-v2.md\n---\nToll 5.\n",
            "orgs/charter-v2.md": "---\ntype: Charter\nsupersedes: /orgs/charter-v1.md\n---\nToll 7.\n",
            "old.md": "---\ntype: Metric\ntimestamp: '2026-05-28T22:53:05+00:00'\n---\n# Def\n\nText.\n\n# Citations\n- https://a.example/one\n- https://b.example/two\n",
            "map.txt": "harbour map\n",
        },
    )


def test_concepts_ids_and_reserved_files(small):
    bundle = read(small)
    concepts = by_id(bundle)
    assert sorted(concepts) == [
        "lore/index", "lore/log", "lore/old", "lore/orgs/charter-v1", "lore/orgs/charter-v2",
        "lore/orgs/gulls", "lore/people/index", "lore/people/mira", "lore/places/harbour",
    ]
    log = concepts["lore/log"]  # a note of its own, its entries in log_entries too (OKF §9)
    assert (log.type, log.title, log.is_index) == ("Log", "Log", False) and bundle.log_entries
    assert concepts["lore/index"].is_index and concepts["lore/people/index"].is_index
    assert concepts["lore/people/index"].title == "People"
    assert bundle.okf_version == "0.2"
    assert [(e.date, e.text) for e in bundle.log_entries] == [
        ("2026-05-22", "**Update**: Added [Mira](/people/mira.md). More text."),
        ("2026-05-22", "**Creation**: Harbour."),
        ("2026-05-15", "**Initialization**: Created."),
    ]


def test_frontmatter_fields(small):
    mira = by_id(read(small))["lore/people/mira"]
    assert (mira.type, mira.title, mira.description) == ("Person", "Mira Vell", "A smuggler.")
    assert mira.tags == ["npc", "smuggler"] and mira.aliases == ["The Gull Queen"]
    assert mira.trust_tier == "human-reviewed"  # a bare mapping counts as one verifier (§5.2)
    assert (mira.generated_by, mira.generated_at) == ("scribe_agent/llm-1", "2026-08-09T10:00:00Z")
    assert mira.stale_after == "2026-01-01T00:00:00Z"
    assert mira.status == "stable"  # absent status means stable (§5.4)
    assert mira.path == "people/mira.md"
    assert mira.body.startswith("# Mira")


def test_title_falls_back_to_file_name_and_v01_fields(small):
    old = by_id(read(small))["lore/old"]
    assert old.title == "old"
    assert old.generated_at == "2026-05-28T22:53:05+00:00"  # §13.1 timestamp fallback
    assert old.sources == [{"resource": "https://a.example/one"}, {"resource": "https://b.example/two"}]


def test_trust_tiers():
    assert trust_tier(None) == "unverified"
    assert trust_tier([{"by": "process:nightly", "at": "x"}]) == "machine-confirmed"
    assert trust_tier([{"by": "process:nightly"}, {"by": "human:ann"}]) == "human-reviewed"
    assert trust_tier({"at": "2026-01-01"}) == "unverified"


def edges_of(bundle, src):
    return {(e.dst, e.predicate, e.kind, e.anchor, e.object_literal, e.date, e.source_id) for e in bundle.edges if e.src == src}


def test_edges_of_every_kind(small):
    bundle = read(small)
    assert edges_of(bundle, "lore/people/mira") == {
        ("lore/places/harbour", "links_to", "link", "the-drowned-steps", None, None, None),
        ("lore/orgs/gulls", "links_to", "link", None, None, None, None),
        ("lore/places/harbour", "sources.resource", "property", None, None, None, None),
        ("lore/orgs/gulls", "member_of", "relation", None, None, "2026-03-01", "s1"),
        (None, "born_on", "relation", None, "1321-05-02", None, None),
        (None, "rival_of", "relation", None, "/people/nobody.md", None, None),
        ("lore/places/harbour", "location", "property", None, None, None, None),
    }
    assert edges_of(bundle, "lore/orgs/gulls") == {("lore/people/mira", "links_to", "wikilink", None, None, None, None)}
    assert edges_of(bundle, "lore/index") == {
        ("lore/people/index", "links_to", "link", None, None, None, None),
        ("lore/places/harbour", "links_to", "link", None, None, None, None),
    }
    assert (None, "embeds", "embed", None, "map.txt", None, None) in edges_of(bundle, "lore/places/harbour")
    assert [x.url for x in bundle.external_links] == ["https://example.com/lore"]


def test_supersession_in_either_direction(small):
    concepts = by_id(read(small))
    assert concepts["lore/orgs/charter-v1"].superseded_by == "lore/orgs/charter-v2"
    assert concepts["lore/orgs/charter-v2"].superseded_by is None
    assert concepts["lore/orgs/gulls"].status == "deprecated"


def test_link_issues_name_file_line_and_problem(small):
    issues = {(i.file, i.line, i.target, i.problem) for i in read(small).link_issues}
    assert issues == {
        ("places/harbour.md", 6, "/places/ashen-abbey.md", "dead"),
        ("places/harbour.md", 6, "../../x.md", "escapes-bundle"),
        ("people/mira.md", 16, "/people/nobody.md", "dead"),  # a frontmatter line
        # Obsidian resolves by file name and aliases, never by frontmatter title
        ("orgs/gulls.md", 5, "Mira Vell", "dead"),
    }


def test_in_an_okf_bundle_a_missing_type_is_a_warning_not_a_rejection(tmp_path):
    bundle = read(write_bundle(tmp_path / "b", {"index.md": '---\nokf_version: "0.2"\n---\n# B\n',
                                                "a.md": "---\ntitle: A\n---\ntext\n", "n.md": "no frontmatter\n"}))
    assert {c.id for c in bundle.concepts} == {"b/index", "b/a", "b/n"}
    assert {(i.file, i.severity) for i in bundle.build_issues} == {("a.md", "warning"), ("n.md", "warning")}
    assert {c.id: (c.type, c.type_source) for c in bundle.concepts}["b/a"] == (None, None)


def test_in_a_vault_the_folder_gives_the_type_and_says_so(tmp_path):
    bundle = read(write_bundle(tmp_path / "v", {"04 NPCs/Mira.md": "Mira runs the docks at night.\n",
                                                "02a Demon Lords/Vaz.md": "---\ntype: Fiend\n---\nA lord of rot.\n",
                                                "Misc/Idea.md": "Cool forest name\n"}))
    types = {c.id: (c.type, c.type_source) for c in bundle.concepts}
    assert types == {"v/04 NPCs/Mira": ("Person", "folder"), "v/02a Demon Lords/Vaz": ("Fiend", "frontmatter"),
                     "v/Misc/Idea": ("Note", "folder")}
    assert not bundle.build_issues  # a vault has no types to miss: nothing to warn about per note


def test_bad_input_is_reported_and_the_rest_goes_on(tmp_path):
    root = write_bundle(
        tmp_path / "bad",
        {
            "good.md": "---\ntype: T\n---\nfine [x](malformed.md)\n",
            "malformed.md": "---\ntype: [oops\n---\nbody survives\n",
            "listfm.md": "---\n- a\n- b\n---\nbody\n",
            "latin1.md": "---\ntype: T\n---\ncaf\xe9 cr\xe8me\n".encode("latin-1"),
            "empty.md": "",
            "binary.md": b"\x00\x01\x02binary\x00",
            "huge.md": "---\ntype: T\n---\n" + "x" * 5_000_000,
        },
    )
    outside = tmp_path / "secret.md"
    outside.write_text("---\ntype: Secret\n---\nTOP SECRET\n")
    os.symlink(outside, root / "escape.md")
    bundle = read(root)
    concepts = by_id(bundle)
    messages = {}
    for i in bundle.build_issues:  # the first issue per file
        messages.setdefault(i.file, (i.severity, i.message))
    assert "malformed YAML" in messages["malformed.md"][1]
    assert concepts["bad/malformed"].body == "body survives" and concepts["bad/malformed"].type_source == "folder"
    assert "not a mapping" in messages["listfm.md"][1]
    assert messages["latin1.md"][0] == "warning" and "not valid UTF-8" in messages["latin1.md"][1]
    assert "café crème" in concepts["bad/latin1"].body
    assert "empty file" in messages["empty.md"][1] and "bad/empty" in concepts
    assert messages["binary.md"][0] == "error" and "bad/binary" not in concepts
    assert "over the" in messages["huge.md"][1] and "bad/huge" not in concepts
    assert "outside the bundle" in messages["escape.md"][1]
    assert all("TOP SECRET" not in c.body for c in bundle.concepts)
    assert "bad/good" in concepts
    # the link to the malformed file still resolves: nothing was lost
    assert any(e.src == "bad/good" and e.dst == "bad/malformed" for e in bundle.edges)


def test_symlink_inside_the_bundle_is_read(tmp_path):
    root = write_bundle(tmp_path / "b", {"real.md": "---\ntype: T\n---\nhello\n"})
    os.symlink(root / "real.md", root / "alias.md")
    assert {c.id for c in read(root).concepts} == {"b/real", "b/alias"}


def test_case_insensitive_duplicate_ids_are_reported(tmp_path):
    root = write_bundle(tmp_path / "b", {"People/Ann.md": "---\ntype: P\n---\nA\n", "people/ann.md": "---\ntype: P\n---\nB\n"})
    bundle = read(root)
    assert len(bundle.concepts) == 1
    [issue] = [i for i in bundle.build_issues if "case-insensitive" in i.message]
    assert issue.severity == "error"


def test_hidden_folders_are_skipped(tmp_path):
    root = write_bundle(tmp_path / "v", {".obsidian/app.md": "x", ".trash/old.md": "x", "note.md": "---\ntype: T\n---\n"})
    assert [c.id for c in read(root).concepts] == ["v/note"]


def test_log_dates_must_be_iso_and_newest_first(tmp_path):
    root = write_bundle(tmp_path / "b", {"log.md": "## 2026-01-01\n* a\n## May 3rd\n* b\n## 2026-02-01\n* c\n"})
    messages = [i.message for i in read(root).build_issues]
    assert any("'May 3rd' is not an ISO 8601" in m for m in messages)
    assert any("not newest first" in m for m in messages)


def test_symlinked_folders_are_not_followed(tmp_path):
    outside = write_bundle(tmp_path / "elsewhere", {"private.md": "---\ntype: T\n---\nPRIVATE\n"})
    root = write_bundle(tmp_path / "b", {"note.md": "---\ntype: T\n---\n[p](linked/private.md)\n"})
    os.symlink(outside, root / "linked")
    bundle = read(root)
    assert [c.id for c in bundle.concepts] == ["b/note"]
    assert [(i.file, i.message) for i in bundle.build_issues] == [("linked", "symlinked folder not followed")]
    assert [i.problem for i in bundle.link_issues] == ["dead"]


def test_an_index_title_is_its_first_heading_outside_code(tmp_path):
    # Before: the title was searched for in the raw body, so the comment in the shell block won.
    root = write_bundle(tmp_path / "b", {
        "places/index.md": "```sh\n# not a heading\nls places\n```\n\n## Places of the Bay\n\n* [Quay](quay.md)\n",
        "places/quay.md": "---\ntype: Place\n---\nStone.\n",
        "people/index.md": "No heading here.\n",
    })
    concepts = by_id(read(root))
    assert concepts["b/places/index"].title == "Places of the Bay"
    assert concepts["b/people/index"].title == "people"


def test_headings_keep_their_code_and_skip_code_blocks(tmp_path):
    root = write_bundle(tmp_path / "b", {
        "spells.md": "---\ntype: Lore\n---\n## The `Gate` Spell\n\n```md\n## Not one\n```\n",
        "mira.md": "---\ntype: Person\n---\nCasts [[spells#The Gate Spell]] and [gate](spells.md#the-gate-spell).\n",
    })
    bundle = read(root)
    assert [(h.text, h.slug, h.line) for h in bundle.headings] == [("The `Gate` Spell", "the-gate-spell", 4)]
    assert {slug(e.anchor) for e in bundle.edges if e.dst == "b/spells"} == {"the-gate-spell"}  # both links land


def test_v01_citations_are_read_outside_code_only(tmp_path):
    root = write_bundle(tmp_path / "b", {
        "shown.md": "---\ntype: Metric\n---\nHow to cite:\n\n```md\n# Citations\n- https://fake.example/\n```\n",
        "real.md": "---\ntype: Metric\n---\nText.\n\n## Citations ##\n- https://a.example/one\n\n## After\n- https://b.example/\n",
    })
    concepts = by_id(read(root))
    assert concepts["b/shown"].sources == []
    assert concepts["b/real"].sources == [{"resource": "https://a.example/one"}]


def test_log_dates_are_level_two_headings_outside_code(tmp_path):
    root = write_bundle(tmp_path / "b", {
        "log.md": "# Log\n\n## 2026-02-01 ##\n* b\n\n```md\n## 1999-01-01\n```\n* c\n"})
    assert [(e.date, e.text, e.line) for e in read(root).log_entries] == [("2026-02-01", "b", 4), ("2026-02-01", "c", 9)]


def test_a_broken_utf16_file_is_a_warning_and_the_rest_is_read(tmp_path):
    root = write_bundle(tmp_path / "b", {"bad.md": b"\xff\xfeA", "ok.md": "---\ntype: T\n---\nFine.\n"})
    bundle = read(root)
    assert sorted(c.id for c in bundle.concepts) == ["b/bad", "b/ok"]
    assert any(i.file == "bad.md" and "invalid byte 0x41 at offset 2" in i.message for i in bundle.build_issues)


def test_notes_numbered_or_dated_in_one_folder_form_a_series(tmp_path):
    """`next` edges (kind sequence) along session logs, daily notes and years, ordered by the number that differs
    and those after it; not along names that share their numbers."""
    note = "---\ntype: Note\n---\ntext\n"
    root = write_bundle(tmp_path / "kb", {
        "sessions/Campaign 3 - Session 10 - Glyphs.md": note,  # 10 after 9: numbers, not text, order them
        "sessions/Campaign 3 - Session 09 - Memory.md": note,
        "sessions/Campaign 3 - Session 08 - Bonds.md": note,
        "sessions/Notes on the campaign.md": note,  # carries no number: not in the series
        "daily/2026-03-02.md": note, "daily/2026-02-28.md": note, "daily/2026-03-01.md": note,
        "years/-33.md": note, "years/212.md": note, "years/8.md": note, "years/-1.md": note,
        # two notes are a series only when they number one after the other: a campaign two sessions in
        "pair/Campaign 4 - Session 05 - Ash.md": note, "pair/Campaign 4 -Session 06 - Whispers.md": note,
        "gap/Part 1.md": note, "gap/Part 3.md": note, "days/2026-03-01.md": note, "days/2026-03-08.md": note,
        "people/Agent 47.md": note, "people/Mira.md": note, "people/Orrin.md": note, "people/Ilse.md": note,
        # numbers the names share do not order them (13th Age's articles): no series
        "articles/5e or 13th Age.md": note, "articles/A 5th Edition Guide to 13th Age.md": note,
        "articles/13th Age and Eberron.md": note,
        # a session in two parts: ordered by the numbers after the session's too, 5.1 then 5.2
        "split/Session 04.md": note, "split/Session 05 - Part 2.md": note, "split/Session 05 - Part 1.md": note,
        "daily2/2026-03-01 standup.md": note, "daily2/2026-03-01 journal.md": note, "daily2/2026-03-02.md": note,
    })
    edges = [(e.src.split("/", 2)[2], e.dst.split("/", 2)[2]) for e in parse_bundle(scan_bundle(root)).edges
             if e.kind == "sequence" and e.predicate == "next"]
    assert sorted(edges) == sorted([
        ("Campaign 3 - Session 08 - Bonds", "Campaign 3 - Session 09 - Memory"),
        ("Campaign 3 - Session 09 - Memory", "Campaign 3 - Session 10 - Glyphs"),
        ("2026-02-28", "2026-03-01"), ("2026-03-01", "2026-03-02"),
        ("-33", "-1"), ("-1", "8"), ("8", "212"),
        ("Campaign 4 - Session 05 - Ash", "Campaign 4 -Session 06 - Whispers"),
        ("Session 04", "Session 05 - Part 1"), ("Session 05 - Part 1", "Session 05 - Part 2"),
        ("2026-03-01 journal", "2026-03-01 standup"), ("2026-03-01 standup", "2026-03-02"),  # a day holds two
    ])


PLUGINS = Path(__file__).parent / "fixtures" / "plugins"


def test_a_vault_note_without_a_description_gets_its_first_sentence_of_its_own():
    notes = {c.path.rsplit("/", 1)[-1]: c for c in read(PLUGINS).concepts}
    described = {name: (c.description, c.description_source) for name, c in notes.items()}
    # skipped: the template's "A script for the GM to read…" (in more than 3 notes) and the epigraph in quotes
    assert described["Ambassadors Row.md"] == ("The administrative and diplomatic hub.", "body")
    # a prose sentence before a `Requirements:: …` field; the frontmatter's own description is never replaced
    assert described["Shadow Walk.md"][0].startswith("Once per battle, teleport")
    assert described["Vaust Hadrinel.md"][0] == "Currently impersonating Dornal Syle, a missing Arcane Warden."


def test_a_description_from_the_body_keeps_the_underscores_inside_its_words(tmp_path):
    bundle = read(write_bundle(tmp_path / "v", {"Tables/Events.md": "One row per event; *read* `event_params` "
                                                "with _care_ before joining on user_pseudo_id.\n"}))
    assert bundle.concepts[0].description == "One row per event; read event_params with care before joining on " \
                                             "user_pseudo_id."


def test_an_unfilled_template_is_a_stub_described_by_where_it_sits():
    notes = {c.path.rsplit("/", 1)[-1]: c for c in read(PLUGINS).concepts}
    stubs = sorted(name for name, c in notes.items() if c.is_stub)
    assert stubs == ["Eastport.md", "Highhold Rise.md", "Sablewatch.md", "Silverglade.md"]
    assert (notes["Eastport.md"].description, notes["Eastport.md"].description_source) == (
        "Eastport, a Place in Settlements, World (an unfilled template)", "folder")


def test_copies_of_one_note_do_not_make_their_sentences_a_template(tmp_path):
    same = "---\ntitle: Copy\n---\nThe ferry leaves at dawn from the east pier.\n"
    bundle = read(write_bundle(tmp_path / "v", {f"n{i}.md": same for i in range(5)}))
    assert {(c.description, c.is_stub) for c in bundle.concepts} == {("The ferry leaves at dawn from the east pier.", False)}


def test_what_the_build_infers_is_part_of_a_concepts_hash(tmp_path):
    # a line becomes template text when a fourth note repeats it: the first note's description changes
    # although its file did not, so its hash must change for the store to rewrite the row
    notes = {f"n{i}.md": f"Note {i} words here.\n\nShared placeholder line for the template.\n" for i in range(2)}
    before = {c.id: c for c in read(write_bundle(tmp_path / "a", {**notes, "solo.md": "Shared placeholder line for the template.\n"})).concepts}
    after = {c.id: c for c in read(write_bundle(tmp_path / "a", {**notes, "solo.md": "Shared placeholder line for the template.\n", "n9.md": notes["n0.md"] + "x\n"})).concepts}
    assert before["a/solo"].description == "Shared placeholder line for the template."
    assert after["a/solo"].is_stub and after["a/solo"].content_hash != before["a/solo"].content_hash


SESSION = ("# Session {n}\n\n## Prep\n- [x] Intro → Exploration → Conflict → Resolution flow sketched\n"
           "- [x] Last session notes reviewed\n\n## Recap\nThe party {did} at the docks.\n")


def test_a_chunk_of_a_templates_lines_has_a_template_share_of_one(tmp_path):
    """Thellade's 16 session notes each carry the template's prep checklist: the lines are in more than 3 notes
    whose text differs, so they are the template's (the note's own recap is not)."""
    from datasette_okf.bundle import template_share
    from datasette_okf.chunks import split_into_chunks

    deeds = ["fought smugglers", "met the harbour master", "lost the ledger", "found the map"]
    bundle = read(write_bundle(tmp_path / "v", {f"s{n}.md": SESSION.format(n=n, did=did) for n, did in enumerate(deeds)}))
    note = bundle.concepts[0]
    shares = {c.heading: template_share(c.text, note.template_lines) for c in split_into_chunks(note.body)}
    assert shares == {"Prep": 1.0, "Recap": 0.0}
    three = read(write_bundle(tmp_path / "w", {f"s{n}.md": SESSION.format(n=n, did=did) for n, did in enumerate(deeds[:3])}))
    assert three.concepts[0].template_lines == frozenset()  # in 3 notes: still each note's own


def test_a_short_note_of_its_own_is_no_stub_but_an_empty_one_is(tmp_path):
    bundle = read(write_bundle(tmp_path / "v", {"far.md": "Gone north.\n", "links.md": "[far](far.md)\n",
                                                "empty.md": "# Empty\n\n## Notes\n"}))
    assert {c.path: c.is_stub for c in bundle.concepts} == {"far.md": False, "links.md": False, "empty.md": True}


def test_a_long_line_without_a_full_stop_is_read_in_one_pass(tmp_path):
    # before: finding its first sentence was quadratic; 600 notes of 400 such words took minutes to build
    import time

    words = " ".join(f"word{i}" for i in range(60_000))  # ~470 KB on one line, no sentence end
    root = write_bundle(tmp_path / "v", {"long.md": words + "\n"})
    started = time.perf_counter()
    [concept] = read(root).concepts
    assert time.perf_counter() - started < 5  # linear: a fraction of a second; quadratic: hours
    assert concept.description.startswith("word0 word1") and concept.description.endswith("...")


def test_the_words_of_a_notes_frontmatter_values_are_kept_for_the_full_text_index():
    """Thellade writes an NPC's fears and mannerisms in frontmatter, a deity's sanctification, a month's season: words
    a question says and no list read. Not what the row holds already, bookkeeping, links, addresses, files, dates,
    numbers or nested mappings."""
    frontmatter = {
        "title": "Ygra Brambleward", "tags": ["NPC"], "type": "Person", "created": "2025-01-01",
        "mannerisms": ["Cleans her armor only with ash and holy oil", "Touches her hilt when Orcus is named"],
        "sanctification": "Must Choose Unholy", "season": "Summer", "font": "Heal/Harm",
        "organization": "[[The Silent Shields]]", "art": "z_Assets/Misc/PlaceholderImage.png",
        "homepage": "https://example.org/ygra", "founded": "24 Stardrift 93 PR", "level": 5, "alive": True,
        "stats": {"str": "sixteen"},
    }
    assert property_text(frontmatter).split("\n") == [
        "Cleans her armor only with ash and holy oil", "Touches her hilt when Orcus is named", "Must Choose Unholy",
        "Summer", "Heal/Harm"]
