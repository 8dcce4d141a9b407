"""Hostile bundles: every file gets a clear build_issues row or is read safely, nothing outside
the bundle root is ever opened, and the rest of the build goes on.

Small hostile files live in tests/fixtures/hostile/; what does not belong in git (a 50 MB
note, symlinks, file names that differ only in Unicode normalisation) is made per test.
"""

from __future__ import annotations

import os
import shutil
import sys
import unicodedata

import pytest
import sqlite_utils
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_okf.bundle import parse_bundle, scan_bundle
from datasette_okf.frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter
from datasette_okf.links import PathIndex, find_links, find_wikilinks
from datasette_okf.retrieve import context_for
from datasette_okf.store import BuildError, build

from .conftest import HERE, write_bundle

HOSTILE = HERE / "fixtures" / "hostile"

# Every file the process opens while `_watching` is set, via Python's audit hook: the
# test of "never reads outside the bundle root" does not trust the code under test.
_opened: list[str] = []
_watching = [False]


def _audit(event: str, args: tuple) -> None:
    if _watching[0] and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def hostile(tmp_path):
    """The committed hostile files, plus the ones made here, next to a secret outside the root."""
    secret = tmp_path / "secret.md"
    secret.write_text("---\ntype: Secret\n---\nTOP SECRET\n")
    root = tmp_path / "hostile"
    shutil.copytree(HOSTILE, root)
    (root / "enormous-frontmatter.md").write_text(
        "---\ntype: Big\n" + "".join(f"key{i}: {'v' * 100}\n" for i in range(20_000)) + "---\nbody\n"
    )
    (root / "fifty-megabytes.md").write_bytes(b"---\ntype: Huge\n---\n" + b"word " * 10_000_000)
    (root / "ten-thousand-links.md").write_text(
        "---\ntype: Hub\n---\n" + "\n".join(f"[n{i}](ordinary.md#s{i}) [[Ordinary]]" for i in range(10_000))
    )
    os.symlink(secret, root / "points-outside.md")
    os.symlink("/etc/passwd", root / "passwd.md")
    os.symlink("loop-b.md", root / "loop-a.md")
    os.symlink("loop-a.md", root / "loop-b.md")
    os.symlink("..", root / "parent-folder")
    os.symlink("missing.md", root / "dangling.md")
    nfc, nfd = unicodedata.normalize("NFC", "Café"), unicodedata.normalize("NFD", "Café")
    (root / f"{nfc}.md").write_text("---\ntype: Place\n---\nComposed.\n")
    (root / f"{nfd}.md").write_text("---\ntype: Place\n---\nDecomposed.\n")
    return root, secret


def _issues(bundle) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for issue in bundle.build_issues:
        out.setdefault(issue.file, []).append(f"{issue.severity}: {issue.message}")
    return out


def test_every_hostile_file_is_reported_and_nothing_outside_is_opened(hostile):
    root, _secret = hostile
    _opened.clear()
    _watching[0] = True
    try:
        bundle = parse_bundle(scan_bundle(root))
    finally:
        _watching[0] = False
    real_root = str(root.resolve())
    assert not [p for p in _opened if not os.path.realpath(p).startswith(real_root)
                and not p.startswith(sys.prefix) and not p.startswith(sys.base_prefix)]
    issues = _issues(bundle)
    concepts = {c.id.removeprefix("hostile/"): c for c in bundle.concepts}

    def said(file: str, *words: str) -> bool:
        return any(all(w in message for w in words) for message in issues.get(file, []))

    assert said("yaml-bomb.md", "error", "alias")
    assert said("deep-nesting.md", "error", "nesting depth")
    assert said("malformed.md", "error", "malformed YAML")
    assert said("enormous-frontmatter.md", "error", "frontmatter")
    assert said("latin1.md", "warning", "not valid UTF-8")
    assert "café crème" in concepts["latin1"].body
    assert said("mixed-encoding.md", "warning", "not valid UTF-8")
    assert said("nul-bytes.md", "error", "NUL")
    assert said("fifty-megabytes.md", "error", "over the")
    assert said("points-outside.md", "error", "outside the bundle")
    assert said("passwd.md", "error", "outside the bundle")
    assert said("loop-a.md", "error", "symlink loop") and said("loop-b.md", "error", "symlink loop")
    assert said("parent-folder", "warning", "symlinked folder not followed")
    assert said("dangling.md", "error", "cannot read")
    assert any("Unicode normalisation" in m for file in issues for m in issues[file] if file.startswith("Caf"))
    assert len([c for c in concepts if unicodedata.normalize("NFC", c) == "Café"]) == 1
    # the ordinary note and the one with 10,000 links are indexed; secrets are not
    assert "ordinary" in concepts and "ten-thousand-links" in concepts
    assert len([e for e in bundle.edges if e.src.endswith("ten-thousand-links")]) == 10_001  # distinct anchors + 1
    assert all("TOP SECRET" not in c.body and "root:" not in c.body for c in bundle.concepts)


def test_links_that_try_to_leave_the_bundle_are_never_followed(hostile):
    root, _ = hostile
    bundle = parse_bundle(scan_bundle(root))
    problems = {(i.target, i.problem) for i in bundle.link_issues if i.file == "traversal.md"}
    for target in ["../../secret.md", "../secret.md", "%2e%2e/%2e%2e/secret.md", "..%2F..%2Fsecret.md",
                   "sub/../../secret.md", "../../etc/passwd"]:
        assert (target, "escapes-bundle") in problems, target
    # an absolute OS path is read as bundle-relative (OKF: a leading / is the bundle root)
    assert ("/etc/passwd", "dead") in problems
    assert ("C:\\Windows\\system.ini", "dead") in problems
    external = {l.url for l in bundle.external_links if l.src.endswith("traversal")}
    assert "file:///etc/passwd" in external  # a URL is recorded, never opened
    sources = [i for i in bundle.link_issues if i.file == "traversal.md" and i.kind == "property"]
    assert {i.target for i in sources} >= {"../../secret.md"}  # sources[].resource too
    # no edge points anywhere but at a concept of this bundle
    ids = {c.id for c in bundle.concepts}
    assert all(e.dst is None or e.dst in ids for e in bundle.edges)


def test_the_build_goes_on_and_the_database_answers(hostile, tmp_path):
    root, _ = hostile
    db = tmp_path / "hostile.db"
    report = build([root], db, embed=False)
    assert report.bundles[0].concepts >= 8
    rows = sqlite_utils.Database(db).execute("select file, severity, message from build_issues").fetchall()
    assert any(f == "yaml-bomb.md" and s == "error" for f, s, _ in rows)
    result = context_for(db, "What is the ordinary note about?", mode="keyword")
    assert result["confident"] and result["nodes"][0]["id"] == "hostile/ordinary"


def test_reserved_names_clash_cleanly(tmp_path):
    root = write_bundle(tmp_path / "r", {
        "index.md": "* [a](a.md)\n",
        "INDEX.md": "---\ntype: T\n---\nshouting\n",  # same id as index.md on a case-insensitive disk
        "sub/log.md": "not a dated log\n",
        "sub/Log.md": "---\ntype: T\n---\n",
        "a.md": "---\ntype: T\n---\n[up](index.md)\n",
    })
    bundle = parse_bundle(scan_bundle(root))
    ids = sorted(c.id for c in bundle.concepts)
    assert ids.count("r/index") + ids.count("r/INDEX") == 1
    assert any("case-insensitive" in i.message for i in bundle.build_issues)
    assert any(e.src == "r/a" and e.dst in ("r/index", "r/INDEX") for e in bundle.edges)


def test_a_folder_that_cannot_be_listed_is_reported_and_the_rest_is_built(tmp_path, monkeypatch):
    """A folder without read permission (root reads anything, so the listing fails here by hand): os.walk skipped
    it in silence; the scan names it."""
    root = write_bundle(tmp_path / "r", {"a.md": "---\ntype: T\n---\nA.\n", "locked/b.md": "---\ntype: T\n---\nB.\n"})
    listing = os.scandir

    def scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return listing(path)

    monkeypatch.setattr(os, "scandir", scandir)
    bundle = parse_bundle(scan_bundle(root))
    assert [c.id for c in bundle.concepts] == ["r/a"]
    assert [(i.file, i.severity, i.message) for i in bundle.build_issues] == [
        ("locked", "warning", "cannot list folder: Permission denied")]


def test_a_bundle_with_no_concepts_is_a_clear_error_not_an_empty_database(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "picture.png").write_bytes(b"\x89PNG")
    with pytest.raises(BuildError, match="no markdown"):
        build([empty], tmp_path / "empty.db", embed=False)
    assert not (tmp_path / "empty.db").exists()


# ------------------------------------------------------------------ properties


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_the_frontmatter_reader_raises_only_its_own_error(text):
    try:
        result = parse_frontmatter(text)
    except FrontmatterError:
        return
    assert isinstance(result, dict)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#\n ?,%@`")), max_size=200))
def test_the_frontmatter_reader_survives_yaml_shaped_noise(text):
    try:
        parse_frontmatter(text)
    except FrontmatterError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_splitting_a_file_never_raises(text):
    _yaml_text, body, line = split_frontmatter(text)
    assert body in text and line >= 1


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]()!<>#|`\\:/.%2e \nab")), max_size=200))
def test_link_extractors_and_resolver_never_raise(text):
    index = PathIndex(["a.md", "b/c.md", "b/index.md"])
    for link in find_links(text):
        index.resolve_path("b/c.md", link.target)
    for link in find_wikilinks(text):
        index.resolve_wikilink("b/c.md", link.target)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_in_a_file_stay_inside_the_per_file_boundary(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("bytes")
    (root / "any.md").write_bytes(data)
    (root / "fine.md").write_text("---\ntype: T\n---\nfine\n")
    bundle = parse_bundle(scan_bundle(root))
    assert any(c.id.endswith("/fine") for c in bundle.concepts)
