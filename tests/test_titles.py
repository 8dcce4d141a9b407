"""Titles found at word boundaries; coverage; FTS queries no user text can break."""

import pytest

from datasette_okf.titles import (
    TitleIndex,
    asks_for_list,
    besides,
    carries,
    content_words,
    coverage,
    fts_query,
    held,
    kinds_asked,
    name_match,
    name_runs,
    names,
    nicknamed,
    number_after,
    numbered,
    of_another,
    qualified,
    spellings,
)

INDEX = TitleIndex([("ai", "AI"), ("go", "Go"), ("gulls", "Black Gulls"), ("gulls", "The Gull Queen"),
                    ("lilu", "Lilu (mythology)"), ("the", "The")])


def test_titles_match_whole_words_only():
    assert INDEX.find("Can you explain this?") == []
    assert INDEX.find("That was long ago.") == []
    assert INDEX.find("What is AI, and can I Go?") == [("ai", "ai"), ("go", "go")]


def test_longest_name_first_and_each_concept_once():
    assert INDEX.find("the gull queen leads the black gulls") == [("gulls", "the gull queen")]


def test_names_made_only_of_stopwords_never_match():
    assert INDEX.find("the the the") == []


def test_unicode_word_boundaries():
    index = TitleIndex([("x", "Alû"), ("y", "Zürich")])
    assert index.find("Is Alû older than zürich?") == [("x", "alû"), ("y", "zürich")]
    assert index.find("Alûs") == []


def test_coverage_counts_content_words():
    assert content_words("How do I fix a flat bicycle tire?") == ["fix", "flat", "bicycle", "tire"]
    assert coverage("How do I fix a flat bicycle tire?", "Policy on flat apartments; fix rents.") == 0.5
    assert coverage("Which ships pay the toll?", "Every ship pays a toll") == 1.0  # plural endings fold
    assert coverage("Which ships pay the toll?", "A ship") == pytest.approx(1 / 3)
    # a word found inside another, or only as a prefix, is not found; every form of a word is
    assert coverage("Which parties sail?", "the party sails") == 1.0 and coverage("Which cat?", "a catalogue") == 0.0
    assert coverage("Where is the harbour?", "the harbor") == 1.0  # either spelling


def test_held_says_which_of_the_questions_words_a_text_holds():
    question = "What oath do its members swear, and what is its symbol?"  # oath, members, swear, symbol
    oath, symbol = held(question, "Oaths: every link forged is a vow"), held(question, "Its symbol: a silver chain")
    assert len(oath) == len(symbol) == 1 and oath != symbol  # one word each, not the same one
    assert held(question, "Members swear an oath") == oath | held(question, "members swear")
    assert held(question, "a ledger of debts") == frozenset()


def test_a_word_form_two_of_the_questions_words_share_counts_for_both():
    """"stages" stems to "stag" and is also a form of "stage": it used to count for one of the two, which one by the
    order of a set of strings, and so the context of Thellade-check4's thf21 changed from one process to the next."""
    question = "The riots ran as a five-stage skill challenge. How many stages did the party clear?"
    both = held(question, "stage stages") - held(question, "skill challenge riots party clear ran")
    assert len(both) == 2 and held(question, "three stages") == both and held(question, "one stage") < both
    assert coverage(question, "three stages") == coverage(question, "stage, stages")


def test_besides_leaves_out_the_words_of_a_name_the_question_already_names():
    assert besides("Who was Kothar entrusted to as a baby?", "Kothar") == "entrusted baby"
    assert besides("Which ships does the Black Gull sail?", "The Black Gulls") == "ships sail"  # stems compare


@pytest.mark.parametrize(("word", "other"), [
    ("harbour", "harbor"), ("colors", "colours"), ("organisation", "organization"), ("realized", "realised"),
    ("centre", "center"), ("defence", "defense"), ("catalogue", "catalog"), ("travelled", "traveled"),
    ("labeled", "labelled"), ("analyse", "analyze"),
])
def test_british_and_american_spellings_find_each_other(word, other):
    assert spellings(word) == [word, other] and spellings(other) == [other, word]


@pytest.mark.parametrize("word", ["floor", "door", "for", "four", "hour", "size", "prize", "called", "filled", "filed"])
def test_words_whose_other_ending_would_be_another_word_keep_theirs(word):
    assert spellings(word) == [word]


def test_a_british_question_finds_an_american_note_by_keyword_and_coverage():
    """Thellade's questions say "harbour" and "colours"; its vault writes "harbor" and "colors"."""
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.execute("create virtual table t using fts5(body, tokenize='porter unicode61')")
    db.execute("insert into t values ('The Ember Wharf was the old harbor district, in the colors of the guild')")
    assert db.execute("select count(*) from t where t match ?", [fts_query("the harbour's colours")]).fetchone() == (1,)
    assert coverage("Which colours fly over the harbour?", "the colors fly over the harbor") == 1.0
    assert coverage("Which colors fly over the harbor?", "the colours fly over the harbour") == 1.0


@pytest.mark.parametrize("text", ['"', "*", "NEAR(a b)", "AND -x", "a OR", "col:val", "^start", "()", "'quoted'", ""])
def test_fts_query_survives_any_text(text):
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.execute("create virtual table t using fts5(body)")
    db.execute("insert into t values ('near and or col val start quoted x')")
    db.execute("select * from t where t match ?", [fts_query(text)]).fetchall()


def test_a_name_is_not_matched_inside_a_hyphenated_word():
    """13th Age has notes called "Free" and "Damage": "cast spells for free-form effects" and "the 24-damage bite"
    name neither. A hyphenated name, or a name written whole, still matches; so does a name at the end of the text."""
    index = TitleIndex([("free", "Free"), ("orc", "Orc"), ("half-orcs", "Half-Orcs"), ("damage", "Damage"),
                        ("hp", "Hit Points"), ("lh", "Old Lighthouse"), ("keeper", "Old Lighthouse Keeper Hut")])
    assert index.find("She casts spells for free-form effects past a half-orc") == []
    assert index.find("The bear with the 24-damage bite") == []
    assert index.find("Is it a free action? Two half-orcs and an orc") == [("half-orcs", "half orcs"),
                                                                          ("free", "free"), ("orc", "orc")]
    assert index.find("How many hit-points are left after the damage") == [("hp", "hit points"), ("damage", "damage")]
    assert index.find("Who lives at the old lighthouse") == [("lh", "old lighthouse")]


def test_a_name_is_found_without_the_qualifier_in_brackets_that_tells_it_apart():
    """hotpotqa-mini refused "Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?": its
    notes are "Woman's Viewpoint (magazine)" and "Pick Me Up (magazine)", and no question writes the brackets."""
    index = TitleIndex([("wv", "Woman's Viewpoint (magazine)"), ("pmu", "Pick Me Up (magazine)"),
                        ("f61", "Lover Come Back (1961 film)"), ("f46", "Lover Come Back (1946 film)"),
                        ("x", "X (letter)"), ("mid", "Tomb (of the) King")])
    question = "Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?"
    assert index.find(question) == [("wv", "woman s viewpoint"), ("pmu", "pick me up")]
    assert index.find("Who starred in Lover Come Back?") == [("f46", "lover come back"), ("f61", "lover come back")]
    assert index.find("Lover Come Back (1961 film)")[0] == ("f61", "lover come back 1961 film")  # the whole name first
    assert INDEX.find("Who was Lilu?") == [("lilu", "lilu")]
    assert index.find("Where is X?") == []  # what is left is too short to be a name
    assert index.find("the tomb king") == []  # brackets inside a name are part of it


def test_a_name_that_is_a_notes_own_does_not_also_name_the_notes_it_qualifies():
    """Thellade has the city "Boba" and the district template "Boba (Central)": a question about Boba seeded both,
    and the template's 16 frontmatter links (the galaxy it is in, the places in it) became facts of 26 development
    questions. Written whole, the qualified name still names its note."""
    index = TitleIndex([("city", "Boba"), ("district", "Boba (Central)"), ("band", "Marilyn Manson (band)"),
                        ("singer", "Marilyn Manson")])
    assert index.find("What happened when Group 3 rioted in Boba, and who was hurt?") == [("city", "boba")]
    assert index.find("Which places are in Boba (Central)?")[0] == ("district", "boba central")
    assert index.find("When did Marilyn Manson form?") == [("singer", "marilyn manson")]


def test_a_nickname_in_quotes_names_its_note_alone_and_the_name_without_it_too():
    """Thellade writes 116 names with a nickname in quotes ("Bragan 'Two-Tooth' Holt"); players say "Two-Tooth",
    prose says "Bragan Holt". A possessive is no quote ("Karnak's Blade"). The question's title index
    (sqlfunctions.title_index) adds them; prose mentions do not."""
    assert nicknamed("Bragan 'Two-Tooth' Holt") == ["Two-Tooth", "Bragan Holt"]
    assert nicknamed('Sister Thessa "The Weeping Veil" Morrin') == ["The Weeping Veil", "Sister Thessa Morrin"]
    assert nicknamed("\u2018Red-Eye\u2019 Scieww") == ["Red-Eye", "Scieww"]
    assert nicknamed("Karnak's Blade") == [] and nicknamed("Plain") == []
    named = [("bragan", "Bragan 'Two-Tooth' Holt"), ("jengo", "\u2018Red-Eye\u2019 Scieww"), ("blade", "Karnak's Blade")]
    index = TitleIndex([(concept, form) for concept, name in named for form in [name, *nicknamed(name)]])
    assert index.find("Who is Two-Tooth?") == [("bragan", "two tooth")]
    assert index.find("Where does Bragan Holt drink?") == [("bragan", "bragan holt")]
    assert index.find("Is Red-Eye still alive?") == [("jengo", "red eye")]
    assert index.find("Who is Karnak?") == []


def test_a_name_that_is_only_a_number_or_one_letter_is_never_matched():
    """Thellade has year notes called 1, -1, 8 and 212: "Group 1's prep notes" or "sessions 6 to 8" must not seed
    them. They still come by BM25 and vectors."""
    index = TitleIndex([("y1", "1"), ("y-1", "-1"), ("y8", "8"), ("x", "X"), ("s8", "Session 8")])
    assert index.find("Group 1's prep notes") == []
    assert index.find("How did it play out across sessions 6 to 8?") == []
    assert index.find("What happened in the year 1?") == []
    assert index.find("The treasure marked X is where?") == []
    assert index.find("What did Session 8 reveal?") == [("s8", "session 8")]  # a longer name still matches


def test_a_name_opening_with_a_preposition_is_matched_only_where_the_text_capitalises_it():
    """Thellade's GM checklist "In Session" was the first title seed of four golden questions ("How did that
    escalate in session 9?"); 13th Age has a rule on positions called "Behind". Written as a name, either still
    names its note."""
    index = TitleIndex([("gm", "In Session"), ("talent", "Behind"), ("film", "Around the World in 80 Days"),
                        ("rule", "Hit Points")])
    assert index.find("Group 3's session 8 ends with the Embermoon rising. How did that escalate in session 9?") == []
    assert index.find("I hide behind the orc with no hit points left") == [("rule", "hit points")]  # not prepositional
    assert index.find("What is on the In Session checklist?") == [("gm", "in session")]
    assert index.find("Who starred in Around the World in 80 Days?") == [("film", "around the world in 80 days")]


def test_a_one_word_name_without_its_qualifier_is_matched_only_where_the_text_capitalises_it():
    """hotpotqa-mini's "Band (rock and pop)" was a title seed of 13 questions ("Which band was formed first…"),
    "The Pianist (memoir)" of "the pianist who recorded…". Capitalised, or written whole, or longer than one word
    ("the harbour charter" for the example's "Harbour Charter (Second, 1340)"), it is still a name."""
    index = TitleIndex([("band", "Band (rock and pop)"), ("memoir", "The Pianist (memoir)"),
                        ("planet", "Mercury (planet)"), ("charter", "Harbour Charter (Second, 1340)"), ("hook", "Hook")])
    assert index.find("Which band was formed first, The Exies or Circus Diablo?") == []
    assert index.find("When was the pianist who recorded it born?") == []
    assert index.find("Who captained the hook-less ship, and who is captain hook?") == [("hook", "hook")]  # as written
    assert index.find("How far is Mercury from the sun?") == [("planet", "mercury")]
    assert index.find("Who wrote The Pianist?") == [("memoir", "the pianist")]
    assert index.find("What did the harbour charter set aside?") == [("charter", "harbour charter")]


def test_a_one_word_name_without_its_qualifier_is_not_a_word_of_a_longer_name():
    """hotpotqa-mini's "United (Marian Gold album)" was a title seed of 10 questions through "United States",
    "United Kingdom" or "Leeds United". A word opening the sentence does not make a longer name."""
    index = TitleIndex([("album", "United (Marian Gold album)"), ("game", "Medici (board game)"),
                        ("mag", "Pick Me Up (magazine)")])
    assert index.find("Who assassinated the 20th President of the United States?") == []
    assert index.find("Who replaced the manager that began at Leeds United?") == []
    assert index.find("Which album is United, by Marian Gold?") == [("album", "united")]
    assert index.find("Are Medici and Senet both board games?") == [("game", "medici")]  # "Are" opens the sentence
    assert index.find("Are both magazines, the Woman's Viewpoint and Pick Me Up, British?") == [("mag", "pick me up")]


def test_names_are_the_capitalised_words_that_do_not_start_a_sentence():
    assert names("How do I add a clustering key to a Snowflake table?") == ["Snowflake"]
    assert names("The locals said so. Roughly how long? Who knows: Nobody") == []  # sentence starts
    assert names('In "Bon Cop, Bad Cop", did Hugo Rodríguez-Romero play?') == ["Bon", "Cop", "Bad", "Hugo", "Rodríguez", "Romero"]
    assert names("Is it GA4's table, or O'Neill's, or the DM's?") == ["GA4", "Neill"]  # 3+ letters, no stopwords
    assert names("What changed on 30 June 2026, a Monday?") == []  # notes write dates as numbers


def test_names_of_several_words_are_runs_of_capitalised_words_a_possessive_ends():
    assert name_runs("How often can my 13th Age fighter use Action Surge, and when?") == ["Action Surge"]
    assert name_runs("Keith Baker's Eberron article contrasts Keeper Jaela with The Pactbound Flame") == [
        "Keeper Jaela", "Pactbound Flame"]  # "Keith" starts the sentence; "The" is a stopword
    assert name_runs("Did the Boba Port Authority act on Monday? Mother Risa knows") == ["Boba Port Authority"]
    assert name_runs("Group 3 met the Silent  Echos in Boba, Kanda") == []  # a number, two spaces, a comma


def test_a_name_of_several_words_is_found_by_any_two_of_its_words_side_by_side():
    assert name_match("Snowflake") == '"Snowflake"'
    assert name_match("Action Surge") == '"Action Surge"'
    assert name_match("Queensland Senator Australian") == '"Queensland Senator" OR "Senator Australian"'


def test_a_question_names_series_members_by_word_and_number():
    """"Group 3's session 9", "sessions 6, 7 and 9": what the series stage looks for in the series it found."""
    assert numbered("In Group 3's session 9 every party member claimed a pin") == [["group", 3], ["session", 9]]
    assert numbered("How did the name surface over sessions 6, 7 and 9?") == [["session", 6], ["session", 7],
                                                                              ["session", 9]]
    assert numbered("from chapter 8 to chapter 10") == [["chapter", 8], ["chapter", 10]]
    assert numbered("the escalation die is at 4; it rolls a 6; a 24-damage bite") == []  # stopwords name nothing
    # an ordinal before the word, as the golden questions write it (Thellade-check5's thg34: "Group 3's tenth
    # session"); "first" is an end of the series (end_asked), not a number
    assert numbered("Group 3's tenth session opens on 4 Dawnmarch") == [["group", 3], ["session", 10]]
    assert numbered("the 8th chapter, the twentieth session, and the first session") == [["chapter", 8],
                                                                                       ["session", 20]]
    many = numbered("sessions " + ", ".join(map(str, range(400))))  # each pair is a look along the series
    assert many == [["session", n] for n in range(16)]


def test_an_ordinal_with_no_word_of_its_own_numbers_the_word_beside_it():
    """Thellade-check9's thk28 ("…between the end of their fifth session and the start of their sixth, and between the
    end of their eighth and the start of their ninth?") named session 5 only, and was refused: Group 6's sessions are
    6 to 8. A bare ordinal numbers the word of the ordinal phrase it is joined to, else of the last one before it."""
    question = ("how long did Group 6 wait between the end of their fifth session and the start of their sixth, "
                "and between the end of their eighth and the start of their ninth?")
    assert numbered(question) == [["group", 6], ["session", 5], ["session", 6], ["session", 8], ["session", 9]]
    assert numbered("What happened in the fourth and fifth sessions?") == [["session", 4], ["session", 5]]
    assert numbered("Who came second, and who came third?") == []  # no ordinal phrase to take a word from
    assert numbered("Group 4's sixth session") == [["group", 4], ["session", 6]]


def test_a_question_says_whose_member_it_names_only_right_next_to_it():
    """"Group 6's session 8 and Group 1's session 8" names two notes, each by two numbers (Thellade-check7's thi32);
    "Group 3's riot session and Group 4's sixth session" names only Group 4's by number (thi31)."""
    assert qualified("Group 6's session 8 and Group 1's session 8: which begins first?") == [["session", 8, 6],
                                                                                            ["session", 8, 1]]
    assert qualified("both Group 3's riot session and Group 4's sixth session begin") == [["session", 6, 4]]
    assert qualified("What happened in session 9 of Campaign 3?") == [["session", 9, 3]]
    assert qualified("Campaign 1 session 8") == [["session", 8, 1]]
    assert qualified("Group 1's sessions 6 to 9") == [["session", 6, 1], ["session", 9, 1]]
    assert qualified("How did it play out for Group 1 across sessions 6 to 8?") == [["session", 6, 1], ["session", 8, 1]]
    assert qualified("What happened to Group 6 during their session 9?") == [["session", 9, 6]]
    assert qualified("Group 3's session 9 and session 10") == [["session", 9, 3]]  # session 10: nobody's
    assert qualified("In session 8, Group 1 found a note") == []  # not next to it
    assert qualified("sessions 6 and 7 of the campaign") == []  # whose, without a number


def test_the_number_after_a_word_is_read_from_a_title_or_a_file_name_whatever_its_zeros():
    path = "Session Notes/03 Campaign 03/Campaign 3 - Session 09 - When Memory Burns.md"
    assert number_after(path, "session") == 9
    assert number_after(path, "campaign") == 3  # the file name's, never the folder's "Campaign 03"
    assert number_after("Campaign 4 -Session 06 - Whispers", "session") == 6
    assert number_after("When Memory Burns", "session") is None
    assert number_after("Session Zero", "session") is None


def test_a_file_name_carries_the_questions_other_number_besides_its_own():
    """"Group 3's session 9" is Campaign 3's: its file names carry 3 besides the session number; the folder's
    numbers are not the file's, and a number that is the session's own does not count twice."""
    path = "Session Notes/01 Campaign 01/Campaign 3 - Session 09 - When Memory Burns.md"
    assert carries(path, "session", [3])
    assert not carries(path, "session", [1])  # "01 Campaign 01" is the folder
    assert not carries("Campaign 3 - Session 09", "session", [9])  # its own number
    assert carries("Campaign 9 - Session 09", "session", [9])  # both
    assert not carries("When Memory Burns", "session", [3])  # no number after the word


def test_a_series_member_of_another_groups_series_than_the_question_numbers():
    """"How did Group 4 get from … to …": Campaign 2's sessions share "Campaign 2", whose series they are, and the
    question says group 4, a word their names do not number. Names that share nothing say nothing."""
    six, seven = "Notes/Campaign 2 - Session 06 - Into the Hollow Flame.md", "Campaign 2 - Session 07 - The Light"
    group_4 = numbered("How did Group 4 get from the inn to the judgement?")
    assert of_another(six, seven, group_4)
    assert not of_another("Campaign 4 - Session 04 - Ash.md", "Campaign 4 - Session 05 - Tide.md", group_4)
    assert of_another("Campaign 2 - Session 04 - Ash", "Campaign 2 - Session 05 - Tide", group_4)  # 4, the session's
    assert not of_another(six, seven, numbered("How did things go after session 5?"))  # only a member's number
    assert of_another(six, seven, numbered("How did Group 3's session 5 go?"))
    assert of_another(six, seven, numbered("How did Campaign 4 go from the inn to the judgement?"))  # its own word
    assert not of_another(six, seven, numbered("How did Campaign 2 go from the inn to the judgement?"))
    assert not of_another("session-04.md", "session-05.md", group_4)  # nothing shared
    assert not of_another("2026-11-30.md", "2026-12-01.md", numbered("What happened in week 3?"))  # a date's numbers
    assert not of_another(six, seven, [])  # the question numbers nothing


def test_how_a_question_hedges_is_not_what_it_asks_about():
    """"Roughly how many people live in the city where the campaign is set?": the example's Port Vell says city,
    campaign and set, 3 of 6 words with "roughly" counted, which the gate's "more than half" refused."""
    assert content_words("Roughly how many people live in the city?") == ["people", "live", "city"]
    assert content_words("Exactly when, approximately, and please briefly") == []
    assert coverage("Roughly how many people live in the city where the campaign is set?",
                    "A harbour city where the campaign is set.") == 0.6


def test_a_question_asking_who_or_which_of_many_is_told_from_one_about_a_single_thing():
    """"Who are the members of the Red Runners?" is answered by the notes linking to the faction's. "Who leads…"
    asks for one person: read as a list, it would take twenty people's lines. "What was…", "What does…" are no
    plurals (a "What powers…" read as a list costs nothing: no note type is called powers, §6)."""
    for question in ["Who are the members of the Red Runners?", "Which people can be found in Kanda?",
                     "Which NPCs belong to the Silver Chain?", "Who is part of Campaign Group 6?",
                     "What were the factions' safehouses?", "List all the taverns in Kanda",
                     "What NPCs are in Kanda?", "What places do the Red Runners control?",
                     "Who lives in Glowquarter?", "Who works for the Emberheart Traders?",
                     "What magical sites are catalogued among the points of interest?",  # its noun after a word
                     "Who is aboard the ship The Mist Piercer?", "Who is stationed at the Ashen Watchpost?",
                     "Who is in Group 3?", "Who's in the Iron Syndicate?"]:
        assert asks_for_list(question), question
    for question in ["Who leads the Red Runners?", "What was the district called before, and which group is it named?",
                     "What does the archivist who catalogues relics refuse to cross?",
                     "Which is the oldest tavern?", "What is his wife's name?", "Who is Two-Tooth?",
                     "What happens to a rogue who tries to shadow walk while a shadow dragon is nearby?",
                     "What makes a kobold dangerous?",  # a verb ending in s is no plural (stop 49)
                     "What time is it in Kanda, and what day were they due?", "Who is in charge of the docks?"]:
        assert not asks_for_list(question), question


def test_a_list_question_asks_for_the_types_it_names_and_for_people_when_it_asks_who():
    """Lower case, singular and plural: a vault names its types "Place" or, after a folder, "NPCs"."""
    places = kinds_asked("Which places do the Red Runners hold?")
    assert {"place", "places", "runner", "runners"} <= set(places) and "person" not in places
    assert {"deity", "deities"} <= set(kinds_asked("Which deities does the Pactbound Flame worship?"))
    assert {"npc", "npcs", "person", "people", "character", "characters"} <= set(kinds_asked("Which NPCs belong to X?"))
    assert {"person", "persons", "npc", "npcs"} <= set(kinds_asked("Who are the members of the Red Runners?"))
