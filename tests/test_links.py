"""Link finding and resolution (OKF §6, Obsidian wikilinks)."""

import posixpath

from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_okf.links import PathIndex, Resolution, find_links

FILES = [
    "index.md",
    "people/index.md",
    "people/mira.md",
    "people/marrek-elder.md",
    "people/marrek-younger.md",
    "places/harbour.md",
    "places/Old Lighthouse.md",
    "references/map.txt",
    "Sessions/Old/Marrek Tindall.md",
    "People/Marrek Tindall.md",
]
INDEX = PathIndex(FILES, {"people/marrek-elder.md": ["Marrek"], "people/marrek-younger.md": ["Marrek"], "people/mira.md": ["The Gull Queen"]})


def kinds_and_targets(body):
    return [(link.kind, link.target) for link in find_links(body)]


def test_inline_reference_and_autolinks_are_found_with_lines():
    body = (
        "# Title\n"
        "See [Mira](/people/mira.md) and [the steps](../places/harbour.md#the-drowned-steps).\n"
        "A [ref link][gulls] and a shortcut [gulls].\n"
        "<https://example.com/x> ![map](/references/map.txt)\n"
        "\n"
        "[gulls]: /organisations/black-gulls.md \"The Gulls\"\n"
    )
    links = find_links(body, first_line=10)
    assert [(l.kind, l.target, l.line) for l in links] == [
        ("link", "/people/mira.md", 11),
        ("link", "../places/harbour.md#the-drowned-steps", 11),
        ("link", "/organisations/black-gulls.md", 12),
        ("link", "/organisations/black-gulls.md", 12),
        ("autolink", "https://example.com/x", 13),
        ("image", "/references/map.txt", 13),
    ]


def test_links_in_code_and_comments_are_not_links():
    body = (
        "Real [a](a.md). Not `[b](b.md)` nor ``[[c]]``.\n"
        "```\n[d](d.md) [[e]]\n```\n"
        "~~~~python\n[f](f.md)\n~~~~\n"
        "<!-- [g](g.md) --> %% [[h]] %%\n"
        "> [!note] callout\n> ```dataview\n> [[i]]\n\nAfter the quote [[j]]\n"
    )
    assert kinds_and_targets(body) == [("link", "a.md"), ("wikilink", "j")]


def test_links_in_a_statblock_are_links_as_fantasy_statblocks_renders_them():
    body = (
        "```statblock\nname: \"Drow Cavalry\"\ntraits:\n"
        "    - desc: \"its spider mount acts (See [[Spider-Mount|Spider Mount]] for its stats)\"\n"
        "    - desc: \"as [the drow](Drow.md), not `[[Code]]`\"\n```\n"
        "```yaml\nsee: [[Not-A-Link]]\n```\nAfter [[Real]]\n"
    )
    assert kinds_and_targets(body) == [("wikilink", "Spider-Mount"), ("link", "Drow.md"), ("wikilink", "Real")]
    assert [link.line for link in find_links(body)] == [4, 5, 10]


def test_footnotes_and_task_boxes_are_not_links():
    assert find_links("Claim.[^s1]\n- [ ] todo\n- [x] done\n\n[^s1]: Source\n") == []


def test_wikilink_forms():
    """`text` is what Obsidian shows (and markdown.readable keeps): the row page links those words."""
    body = "[[Note]] [[Note|shown]] [[Note#Heading]] [[folder/Note]] ![[embed]] | [[a\\|b]] |"
    links = find_links(body)
    assert [(l.kind, l.target, l.text) for l in links] == [
        ("wikilink", "Note", "Note"),
        ("wikilink", "Note", "shown"),
        ("wikilink", "Note#Heading", "Note > Heading"),
        ("wikilink", "folder/Note", "Note"),
        ("embed", "embed", "embed"),
        ("wikilink", "a", "b"),
    ]


def test_relative_absolute_and_parent_links_resolve():
    assert INDEX.resolve_path("places/harbour.md", "../people/mira.md") == Resolution("note", "people/mira.md")
    assert INDEX.resolve_path("places/harbour.md", "./Old%20Lighthouse.md") == Resolution("note", "places/Old Lighthouse.md")
    assert INDEX.resolve_path("places/harbour.md", "/people/mira.md#secrets") == Resolution("note", "people/mira.md", "secrets")
    # Root fallback for paths written from the bundle root (acme_retail, vaults)
    assert INDEX.resolve_path("places/harbour.md", "people/mira.md").path == "people/mira.md"


def test_folder_links_resolve_to_the_folder_index():
    # Regression: peers flag `[People](people/)` in index.md as broken.
    assert INDEX.resolve_path("index.md", "people/") == Resolution("note", "people/index.md")
    assert INDEX.resolve_path("index.md", "places/") == Resolution("folder", "places")


def test_non_markdown_files_are_not_broken():
    assert INDEX.resolve_path("places/harbour.md", "../references/map.txt") == Resolution("file", "references/map.txt")


def test_dead_escaping_and_external_targets():
    assert INDEX.resolve_path("people/mira.md", "/places/ashen-abbey.md").status == "dead"
    # before: a markdown link to a missing image was a dead note link, a wikilink to it a missing attachment
    assert INDEX.resolve_path("people/mira.md", "maps/harbour.png").status == "missing-file"
    assert INDEX.resolve_path("people/mira.md", "../../outside.md").status == "escapes-bundle"
    assert INDEX.resolve_path("people/mira.md", "/../../etc/passwd").status == "escapes-bundle"
    assert INDEX.resolve_path("people/mira.md", "https://example.com/a.md").status == "external"
    assert INDEX.resolve_path("people/mira.md", "mailto:gm@example.com").status == "external"
    assert INDEX.resolve_path("people/mira.md", "#secrets") == Resolution("self", "people/mira.md", "secrets")


def test_wikilinks_resolve_by_path_suffix_name_and_alias_case_insensitively():
    assert INDEX.resolve_wikilink("x.md", "people/mira").path == "people/mira.md"
    assert INDEX.resolve_wikilink("x.md", "Old/Marrek Tindall").path == "Sessions/Old/Marrek Tindall.md"
    assert INDEX.resolve_wikilink("x.md", "old lighthouse").path == "places/Old Lighthouse.md"
    assert INDEX.resolve_wikilink("x.md", "the gull queen").path == "people/mira.md"
    assert INDEX.resolve_wikilink("x.md", "Mira#Secrets") == Resolution("note", "people/mira.md", "Secrets")
    assert INDEX.resolve_wikilink("x.md", "map.txt") == Resolution("file", "references/map.txt")
    assert INDEX.resolve_wikilink("x.md", "harbour.png").status == "missing-file"
    assert INDEX.resolve_wikilink("x.md", "#Local").status == "self"


def test_ambiguous_wikilinks_keep_every_candidate():
    by_name = INDEX.resolve_wikilink("places/harbour.md", "Marrek Tindall")
    assert by_name == Resolution(
        "ambiguous", None, None, ("People/Marrek Tindall.md", "Sessions/Old/Marrek Tindall.md")
    )
    by_alias = INDEX.resolve_wikilink("x.md", "Marrek")
    assert by_alias.status == "ambiguous"
    assert by_alias.candidates == ("people/marrek-elder.md", "people/marrek-younger.md")


def test_of_notes_sharing_a_name_the_one_in_the_linking_notes_folder_is_the_link():
    """Obsidian's rule: 13th Age's Humanoid/Drow/Drow-Cavalry.md writes [[Drow]] for Humanoid/Drow/Drow.md, and
    Beast/Drow/Drow.md exists too. Before, all seven such links were ambiguous and made no edge."""
    index = PathIndex(["Beast/Drow/Drow.md", "Humanoid/Drow/Drow.md", "Humanoid/Drow/Drow-Cavalry.md", "Bestiary.md"])
    assert index.resolve_wikilink("Humanoid/Drow/Drow-Cavalry.md", "Drow") == Resolution(
        "note", "Humanoid/Drow/Drow.md")
    assert index.resolve_wikilink("Bestiary.md", "Drow").candidates == (
        "Beast/Drow/Drow.md", "Humanoid/Drow/Drow.md")  # from elsewhere, still nothing guessed
    by_name = INDEX.resolve_wikilink("Sessions/Old/recap.md", "Marrek Tindall")
    assert by_name.path == "Sessions/Old/Marrek Tindall.md"


def test_dead_wikilink():
    assert INDEX.resolve_wikilink("x.md", "Captain Orlo").status == "dead"


# Property-based: whatever is written, resolution never raises and never leaves the bundle.
segment = st.sampled_from(["..", ".", "people", "places", "x", "", "Old Lighthouse.md", "mira.md", "%2e%2e", "~", "/"])
targets = st.one_of(
    st.text(max_size=60),
    st.lists(segment, max_size=8).map("/".join),
    st.tuples(st.sampled_from(["", "/", "./", "../"]), st.lists(segment, max_size=6).map("/".join), st.sampled_from(["", "#a", "?q=1", ".md"])).map("".join),
)
sources = st.sampled_from([f for f in FILES if f.endswith(".md")])


@settings(max_examples=400, deadline=None)
@given(source=sources, target=targets)
def test_resolution_never_raises_and_never_leaves_the_bundle(source, target):
    for resolution in (INDEX.resolve_path(source, target), INDEX.resolve_wikilink(source, target)):
        assert resolution.status in {
            "note", "file", "folder", "external", "self", "dead", "missing-file", "ambiguous", "escapes-bundle",
        }
        if resolution.status in ("note", "file"):
            assert resolution.path in INDEX.files
        if resolution.status == "folder":
            assert resolution.path in INDEX.folders or resolution.path == "."
        for candidate in resolution.candidates:
            assert candidate in INDEX.files
        if resolution.path and resolution.status != "external":
            assert not posixpath.normpath(resolution.path).startswith("..")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]()!#|`~<>:/\\\n abc.md^*%\"'")), max_size=200))
def test_find_links_never_raises_on_arbitrary_markdown(text):
    for link in find_links(text):
        assert 1 <= link.line <= text.count("\n") + 1
