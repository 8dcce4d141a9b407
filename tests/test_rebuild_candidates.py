"""Rebuild candidates (seed 003 §7.6): ingest-derived concepts only, and what deleting each would lose."""

from __future__ import annotations

import json
import os
import time

from click.testing import CliRunner
from datasette.cli import cli

from datasette_okf.rebuild_candidates import rebuild_candidates
from datasette_okf.retrieve import connection
from datasette_okf.store import build

from .conftest import write_bundle

FM = "---\ntype: {type}\n{extra}---\nbody\n"


def bundle(tmp_path):
    root = write_bundle(tmp_path / "kb", {
        "reviewed.md": FM.format(type="Person", extra=(
            "sources: [{resource: references/profile.md}]\nverified: {by: 'human:ana', at: '2026-09-01'}\n"
            "generated: {by: ingest, at: '2099-01-01T00:00:00Z'}\n")),
        "edited.md": FM.format(type="Place", extra=(
            "sources: [{resource: /references/map.html}, {resource: 'https://example.org'}]\n"
            "generated: {by: ingest, at: '2020-01-01T00:00:00+01:00'}\n")),
        "unstamped.md": FM.format(type="Thing", extra="sources: [{resource: ./references/profile.md}]\n"),
        "clean.md": FM.format(type="Person", extra=(
            "sources: [{resource: references/profile.md}]\ngenerated: {by: ingest, at: '2099-01-01T00:00:00Z'}\n")),
        "synthesis.md": FM.format(type="Concept", extra="sources: [{resource: references/profile.md}]\n"),
        "from-the-web.md": FM.format(type="Person", extra="sources: [{resource: 'https://example.org/x'}]\n"),
        "no-sources.md": FM.format(type="Person", extra=""),
        "references/profile.md": FM.format(type="Reference", extra=""),
        "references/unused.md": FM.format(type="Reference", extra=""),
        "references/map.html": "<html></html>",
    })
    old = time.time() - 3600
    os.utime(root / "clean.md", (old, old))
    return root


def test_only_ingest_derived_concepts_with_what_deleting_them_would_lose(tmp_path):
    root = bundle(tmp_path)
    db = tmp_path / "kb.db"
    build([root], db, embed=False)
    report = rebuild_candidates(connection(str(db)))
    found = {c["id"].removeprefix("kb/"): c for c in report["candidates"]}
    # a Concept page, web-only sources and no sources are out of scope by design
    assert sorted(found) == ["clean", "edited", "reviewed", "unstamped"]
    assert found["reviewed"]["would_lose"] == ["a human verification (human:ana)"]
    assert found["edited"]["would_lose"][0].startswith("edits since generated.at (file modified ")
    assert found["edited"]["references_cited"] == ["/references/map.html"]
    assert found["unstamped"]["would_lose"] == ["no generated.at stamp: hand edits cannot be ruled out"]
    assert found["clean"]["would_lose"] == []
    assert [r["path"] for r in report["unreviewed_references"]] == ["references/unused.md"]


def test_the_command_and_the_canned_query_agree(tmp_path):
    root = bundle(tmp_path)
    db = tmp_path / "kb.db"
    build([root], db, embed=False)
    result = CliRunner().invoke(cli, ["okf", "rebuild-candidates", str(db), "--json"])
    assert result.exit_code == 0
    assert len(json.loads(result.output)["candidates"]) == 4
    text = CliRunner().invoke(cli, ["okf", "rebuild-candidates", str(db)]).output
    assert "4 rebuild candidates" in text and "would lose: a human verification (human:ana)" in text
    assert "references/unused.md" in text

    import asyncio

    from datasette.app import Datasette

    ds = Datasette([str(db)])
    response = asyncio.run(ds.client.get("/kb/okf_rebuild_candidates.json?_shape=array"))
    assert sorted(r["id"] for r in response.json()) == sorted(c["id"] for c in json.loads(result.output)["candidates"])
