"""Golden-set evaluation: what it says about an answer the context does not show."""

from datasette_okf.evaluate import evaluate, misses

TINKER = "Who does the Tinker work for, and since when?"


def test_an_unshown_answer_is_placed_in_a_section_of_a_note_the_context_holds_or_lacks(campaign_db):
    """Note recall counts a note whose answering section the context does not show, and a missing answer can be the
    budget's doing (its note came, that section did not) or retrieval's (its note never came). Each unshown answer is
    placed, so a tuner knows which stage to look at: at stop 46, all 14 of Thellade-check3's unshown answers were in
    notes the context held."""
    golden = [{"id": "tinker", "tier": "lookup", "question": TINKER,
               "required": ["people/teodor-vask.md", "monsters/brine-hag.md"],
               "answers": ["Repairs anything mechanical for 2d10 silver marks",
                           "Since the twentieth of Frostfall 1346 Teodor has been a paid agent of the Sable Accord",
                           "Tell the tide times for any day in the next year",
                           "He keeps a second shop in Kestrel Point"]}]
    report = evaluate(str(campaign_db), golden, ["hybrid"], budget=300)
    row = report["modes"]["hybrid"]["per_question"]["tinker"]
    assert row["got"][0]["id"] == "campaign/people/teodor-vask"
    assert "campaign/monsters/brine-hag" not in [node["id"] for node in row["got"]]
    assert row["answers_unshown"] == golden[0]["answers"][1:]
    secrets, bargains, nowhere = row["answers_where"]
    assert (secrets["note"], secrets["section"], secrets["in_context"]) == \
        ("campaign/people/teodor-vask", "Secrets", True)
    assert (bargains["note"], bargains["section"], bargains["in_context"]) == \
        ("campaign/monsters/brine-hag", "Bargains", False)
    assert nowhere["note"] is None and not nowhere["in_context"]
    listed = misses(report)
    assert ("Answers not shown: 3; 1 in a note the context holds (its section not shown: budget or section choice), "
            "1 in a note it lacks (retrieval), 1 in no one section") in listed
    assert ("answer not in the context: 'Since the twentieth of Frostfall 1346 Teodor has been a paid agent of the "
            "Sable Accord' — in section 'Secrets' of Teodor Vask, a note the context holds: that section was not "
            "shown") in listed
    assert "of The Brine Hag, a note the context lacks" in listed
    assert ("answer not in the context: 'He keeps a second shop in Kestrel Point' — no one section of the notes "
            "shown or required holds these words whole") in listed


def test_with_every_answer_shown_nothing_is_placed(campaign_db):
    golden = [{"id": "tinker", "tier": "lookup", "question": TINKER, "required": ["people/teodor-vask.md"],
               "answers": ["Since the twentieth of Frostfall 1346 Teodor has been a paid agent of the Sable Accord"]}]
    row = evaluate(str(campaign_db), golden, ["hybrid"])["modes"]["hybrid"]["per_question"]["tinker"]
    assert row["answers"] == 1.0 and row["answers_where"] == []
    assert "Answers not shown" not in misses({"modes": {"hybrid": {"per_question": {"tinker": row}}}})


def test_an_answer_quoted_with_its_links_is_found_as_the_context_shows_them(campaign_db):
    """A golden answer copied from a note's file keeps its links, and the context shows each by its label (or, for
    a bare wiki link, the note's name): 13th-Age-check8 quoted 19 of its 27 unshown answers so, and they were in the
    contexts all along. A frontmatter line is a fact line in the context ("founded 24 Stardrift 93 PR")."""
    from datasette_okf.evaluate import evened

    quote = ("Since the twentieth of Frostfall 1346 Teodor has been a paid agent of the "
             "[Sable Accord](/organisations/sable-accord.md)")
    golden = [{"id": "tinker", "tier": "lookup", "question": TINKER, "required": ["people/teodor-vask.md"],
               "answers": [quote]}]
    row = evaluate(str(campaign_db), golden, ["hybrid"])["modes"]["hybrid"]["per_question"]["tinker"]
    assert row["answers"] == 1.0, row["answers_where"]
    assert evened("As the [[Monster-Abilities#Burrowing|standard monster ability]], but") == \
        "as the standard monster ability, but"
    assert evened("impersonating [[Dornal Syle]], and [[Compendium/13A/Icons/Emperor#Intro]]") == \
        "impersonating dornal syle, and emperor"
    assert evened("founded: 24 Stardrift 93 PR") == evened("- The Black Sepulcher founded 24 Stardrift 93 PR")[-26:]
    assert evened("![map](a.png)") != "map"  # an embedded image is no link text


def test_an_answer_copied_with_its_quotation_marks_or_html_reads_as_the_context_shows_it():
    """A frontmatter link copied with its YAML quotes (`worship: "[[Malrik]]"`, a fact line "… worship Malrik" in the
    context) and a rule's HTML (`8<sup>th</sup> level`, read "8th level") were never found (Thellade-check6's thh10
    to thh20, 13th-Age-check5's tag31)."""
    from datasette_okf.evaluate import evened

    assert evened('worship: "[[Malrik]]"') in evened("- Vexirra worship Malrik (trust: unverified)")
    assert evened("At 8<sup>th</sup> level, triple it.") == "at 8th level, triple it."
    assert evened("![[Compendium/13A/Spells/Ours#^spell|Ours]]") == "ours"
