"""`datasette okf build`: the command a user runs, and what it prints."""

import os

from click.testing import CliRunner
from datasette.cli import cli

from .conftest import write_bundle


def run(*args):
    return CliRunner().invoke(cli, ["okf", "build", "--no-embed", *args], catch_exceptions=False)


def test_build_prints_a_summary_and_defaults_to_build_folder(tmp_path):
    bundle = write_bundle(
        tmp_path / "notes",
        {"a.md": "---\ntype: T\n---\n[b](b.md) [gone](gone.md) [[x]]\n", "b.md": "---\ntype: T\n---\nb\n"},
    )
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = run(str(bundle))
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "build" / "notes.db").exists()
    assert "notes: 2 concepts + 0 index nodes, 2 chunks (2 written, 0 unchanged)" in result.output
    assert "edges: 1 (1 link)" in result.output
    assert "links: 2 dead, 0 ambiguous" in result.output
    assert "issues: 0 errors, 0 warnings" in result.output


def test_second_run_reports_up_to_date(tmp_path):
    bundle = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\na\n"})
    out = tmp_path / "kb.db"
    run(str(bundle), "-o", str(out))
    result = run(str(bundle), "-o", str(out))
    assert "up to date, file not touched" in result.output


def test_strict_exits_1_on_warnings_but_still_builds(tmp_path):
    bundle = write_bundle(tmp_path / "kb", {"a.md": "no frontmatter, so no type\n"})
    out = tmp_path / "kb.db"
    assert run(str(bundle), "-o", str(out)).exit_code == 0
    out.unlink()
    result = run(str(bundle), "-o", str(out), "--strict")
    assert result.exit_code == 1
    assert out.exists() and "1 warnings" in result.output


def test_refused_prune_is_a_clean_error(tmp_path):
    bundle = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\na\n"})
    out = tmp_path / "kb.db"
    run(str(bundle), "-o", str(out))
    (bundle / "a.md").write_bytes(b"\x00binary now")  # present, but nothing parses
    result = CliRunner().invoke(cli, ["okf", "build", "--no-embed", str(bundle), "-o", str(out), "--prune"])
    assert result.exit_code == 1
    assert "refusing to prune 'kb'" in result.output
