"""`datasette okf build`: the command a user runs, and what it prints."""

import contextlib
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner
from datasette.cli import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datasette_okf.schema import FORMAT_VERSION, file_kind

from .conftest import ROOT, write_bundle


def run(*args):
    return CliRunner().invoke(cli, ["okf", "build", "--no-embed", *args], catch_exceptions=False)


def test_datasette_okf_is_the_same_command_without_datasettes_start_up(tmp_path):
    """`datasette-okf build` is `datasette okf build` without Datasette's command line, which imports every installed
    Datasette plugin first (datasette-mcp's `mcp` alone 0.7-1.2 s): at 10k notes one edit 2.94 -> 1.89 s for the
    whole command (benchmarks/build_command.py). The same files come out."""
    bundle = write_bundle(tmp_path / "notes", {"a.md": "---\ntype: T\n---\n[b](b.md)\n", "b.md": "---\ntype: T\n---\nb\n"})
    script = os.path.join(os.path.dirname(sys.executable), "datasette-okf")
    own = subprocess.run([script, "build", str(bundle), "-o", str(tmp_path / "own.db"), "--no-embed"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert own.returncode == 0, own.stderr
    assert run(str(bundle), "-o", str(tmp_path / "datasette.db")).exit_code == 0

    def rows(db):
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return [conn.execute(f"select * from {t} order by 1").fetchall() for t in ("concepts", "edges", "chunks")]

    assert rows(tmp_path / "own.db") == rows(tmp_path / "datasette.db")
    code = ("import sys; from datasette_okf.cli import okf; okf.main(['build', sys.argv[1], '-o', sys.argv[2], "
            "'--no-embed'], standalone_mode=False); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'datasette_mcp', 'datasette_vega')))")
    imported = subprocess.run([sys.executable, "-c", code, str(bundle), str(tmp_path / "third.db")],
                              capture_output=True, text=True, cwd=tmp_path)
    assert imported.stdout.strip().splitlines()[-1] == "[]", imported.stderr  # no other plugin was loaded


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
    assert "links: 2 dead note links, 0 missing attachments, 0 links leaving the bundle, 0 ambiguous links" in result.output
    assert "issues: 0 errors, 0 warnings" in result.output


def test_second_run_reports_up_to_date(tmp_path):
    bundle = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\na\n"})
    out = tmp_path / "kb.db"
    run(str(bundle), "-o", str(out))
    result = run(str(bundle), "-o", str(out))
    assert "up to date, file not touched" in result.output


def test_strict_exits_1_on_warnings_but_still_builds(tmp_path):
    bundle = write_bundle(tmp_path / "kb", {"index.md": '---\nokf_version: "0.2"\n---\n# KB\n',
                                            "a.md": "no frontmatter, so no type (an OKF bundle must give one)\n"})
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


# -o never replaces a file that is not ours -------------------------------------------------------------





def invoke(*args):
    """The command as a user runs it: errors are printed (never raised), and the exit code kept."""
    return CliRunner().invoke(cli, ["okf", "build", "--no-embed", *args])


def snapshot(folder):
    """Every file in `folder` with its bytes: what must not change when a build is refused."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.fixture
def kb(tmp_path):
    return write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\nSee [b](b.md).\n", "b.md": "---\ntype: T\n---\nb\n"})


def someone_elses_database(path):
    conn = sqlite3.connect(path)
    conn.execute("create table customers (id integer primary key, name text)")
    conn.execute("insert into customers (name) values ('Ada'), ('Grace')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["sqlite", "text"])
def test_o_refuses_a_file_that_is_not_a_datasette_okf_database(kb, tmp_path, kind):
    target = tmp_path / "out" / "important.db"
    target.parent.mkdir()
    if kind == "sqlite":
        someone_elses_database(target)
    else:
        target.write_text("my notes, not a database\n")
    before = snapshot(target.parent)
    result = invoke(str(kb), "-o", str(target))
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    [message] = [line for line in result.output.splitlines() if line.strip()]
    assert str(target) in message and "--force" in message
    assert ("did not build" if kind == "sqlite" else "not a SQLite database") in message
    assert snapshot(target.parent) == before  # byte-identical, and no -wal, -shm, lock or temporary file


def test_force_overwrites_it_and_an_empty_file_is_simply_used(kb, tmp_path):
    target = tmp_path / "important.db"
    someone_elses_database(target)
    assert invoke(str(kb), "-o", str(target), "--force").exit_code == 0
    assert file_kind(target) == "okf"
    empty = tmp_path / "empty.db"
    empty.touch()
    assert invoke(str(kb), "-o", str(empty)).exit_code == 0
    assert file_kind(empty) == "okf"


def test_a_database_of_an_older_format_is_upgraded_without_force(kb, tmp_path):
    target = tmp_path / "kb.db"
    assert invoke(str(kb), "-o", str(target)).exit_code == 0
    conn = sqlite3.connect(target)
    conn.execute("update meta set value = '1' where key = 'format_version'")
    conn.commit()
    conn.close()
    assert invoke(str(kb), "-o", str(target)).exit_code == 0
    conn = sqlite3.connect(target)
    assert conn.execute("select value from meta where key = 'format_version'").fetchone()[0] == FORMAT_VERSION


def _sqlite_file(tables: list[str]) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        conn = sqlite3.connect(os.path.join(folder, "x.db"))
        conn.execute("pragma user_version = 7")  # a valid file even with no table
        for name in tables:
            conn.execute(f'create table "{name}" (key text, value text)')
        if "meta" in tables:
            conn.execute("insert into meta values ('owner', 'someone else')")  # a meta table, but not ours
        conn.commit()
        conn.close()
        return open(os.path.join(folder, "x.db"), "rb").read()


existing_files = st.one_of(
    st.binary(min_size=1, max_size=2000),
    st.text(min_size=1, max_size=500).map(lambda text: text.encode("utf-8")),
    st.binary(max_size=500).map(lambda tail: b"SQLite format 3\x00" + tail),  # the header, then garbage
    st.lists(st.sampled_from(["customers", "meta", "concepts", "edges", "notes"]), min_size=0, max_size=4,
             unique=True).map(_sqlite_file),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=existing_files)
def test_nothing_but_a_datasette_okf_database_is_ever_modified(kb, tmp_path_factory, content):
    folder = tmp_path_factory.mktemp("o")
    target = folder / "out.db"
    target.write_bytes(content)
    before = snapshot(folder)
    result = invoke(str(kb), "-o", str(target))
    assert result.exit_code == 2, result.output
    assert snapshot(folder) == before


# two builds of one output at once ----------------------------------------------------------------------

HELD_BUILD = """
import pathlib, sys, time
from datasette_okf import store
original = store._write_bundle
def held(*args, **kwargs):
    print("writing", flush=True)
    go = pathlib.Path(sys.argv[3])
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:  # until the test has seen the other build wait
        time.sleep(0.05)
    return original(*args, **kwargs)
store._write_bundle = held
store.build([sys.argv[1]], sys.argv[2], embed=False)
"""


@pytest.mark.parametrize("existing", [False, True], ids=["new file", "existing file"])
def test_two_builds_at_once_wait_for_each_other_and_keep_both_bundles(tmp_path, existing):
    alpha = write_bundle(tmp_path / "alpha", {"a.md": "---\ntype: T\ntitle: Alpha Note\n---\na\n"})
    beta = write_bundle(tmp_path / "beta", {"b.md": "---\ntype: T\ntitle: Beta Note\n---\nb\n"})
    target, go = tmp_path / "shared.db", tmp_path / "go"
    if existing:
        gamma = write_bundle(tmp_path / "gamma", {"g.md": "---\ntype: T\ntitle: Gamma Note\n---\ng\n"})
        assert invoke(str(gamma), "-o", str(target)).exit_code == 0
    first = subprocess.Popen([sys.executable, "-c", HELD_BUILD, str(alpha), str(target), str(go)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert first.stdout.readline().strip() == "writing"  # it holds the lock, mid-build
    second = subprocess.Popen([sys.executable, "-m", "datasette", "okf", "build", "--no-embed", str(beta), "-o", str(target)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    waiting = second.stderr.readline()
    go.touch()  # let the first one finish
    first_err = first.communicate(timeout=120)[1]
    _second_out, second_err = second.communicate(timeout=120)
    assert "waiting for another build of" in waiting
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    titles = {row[0] for row in sqlite3.connect(target).execute("select title from concepts")}
    assert {"Alpha Note", "Beta Note"} | ({"Gamma Note"} if existing else set()) <= titles
    assert not (tmp_path / "shared.db.lock").exists()


def test_a_build_gives_up_after_lock_timeout_and_changes_nothing(kb, tmp_path):
    from datasette_okf.locks import build_lock

    target = tmp_path / "kb.db"
    assert invoke(str(kb), "-o", str(target)).exit_code == 0
    (kb / "a.md").write_text("---\ntype: T\ntitle: Changed\n---\nchanged\n")
    before = target.read_bytes()
    with build_lock(target, timeout=0):  # another build holds it
        result = subprocess.run(
            [sys.executable, "-m", "datasette", "okf", "build", "--no-embed", str(kb), "-o", str(target),
             "--lock-timeout", "0.5"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "gave up" in result.stderr and "Traceback" not in result.stderr
    assert target.read_bytes() == before


# unwritable places: a clear message, never a traceback ----------------------------------------------------

@contextlib.contextmanager
def read_only(path):
    """`path` (a file or a folder) made unwritable for the duration, root included: root ignores permission
    bits, so it gets the immutable attribute instead (skipped where chattr is refused)."""
    if os.geteuid() != 0:
        mode = os.stat(path).st_mode
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            os.chmod(path, mode)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("cannot make a file read-only for root here (chattr +i refused)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_database_or_folder_gets_a_clear_message(kb, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "kb.db"
    assert invoke(str(kb), "-o", str(target)).exit_code == 0
    (kb / "a.md").write_text("---\ntype: T\ntitle: Changed\n---\nchanged\n")
    before = snapshot(folder)
    with read_only(target):
        result = invoke(str(kb), "-o", str(target))
    assert result.exit_code == 1
    assert "cannot write" in result.output and str(target) in result.output, result.output
    assert snapshot(folder) == before
    with read_only(folder):  # the file is writable, the folder (where -wal, -shm and the lock go) is not
        for output in (target, folder / "new.db"):
            result = invoke(str(kb), "-o", str(output))
            assert result.exit_code == 1, result.output
            assert "cannot write" in result.output and str(folder) in result.output, result.output
    assert snapshot(folder) == before


def test_a_derived_file_that_cannot_be_written_is_named_and_the_database_is_still_built(kb, tmp_path):
    target = tmp_path / "kb.db"
    (tmp_path / "kb.timeline.md").mkdir()  # where the timeline goes is a folder
    result = invoke(str(kb), "-o", str(target))
    assert result.exit_code == 1
    assert "could not write the derived file" in result.output and "kb.timeline.md" in result.output
    assert file_kind(target) == "okf"
    assert (tmp_path / "kb.wiki-trigger-keywords.txt").exists()


def test_evaluate_by_question_lists_each_miss_and_the_calibration(tmp_path, campaign_db):
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([
        {"id": "hit", "tier": "lookup", "question": "Who does the Tinker work for?", "required": ["people/teodor-vask.md"]},
        {"id": "miss", "tier": "lookup", "question": "Who does the Tinker work for?", "required": ["places/nowhere.md"]},
        {"id": "out", "tier": "out", "question": "How do I descale an espresso machine?", "required": []},
    ]))
    result = CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(golden), "--modes", "hybrid",
                                      "--by-question"])
    assert result.exit_code == 0, result.output
    assert "## hybrid: 1 of 3 questions missed" in result.output
    assert ("miss (lookup): Who does the Tinker work for?\n  missed: places/nowhere.md — no such note in this database\n"
            "  got: campaign/people/teodor-vask — seed:") in result.output
    assert "Gate: vector threshold" in result.output and "off-topic questions" in result.output


def test_evaluate_by_question_lists_the_notes_a_rejected_question_came_nearest(tmp_path, campaign_db):
    """An answerable question the gate refused: the refusal's nearest notes and what found them, so a reader sees
    whether the note it needed came close (the example's sessions 1 to 5: "session 9" is refused)."""
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([{"id": "s9", "tier": "temporal", "question": "What happened in session 9?",
                                   "required": ["sessions/session-05.md"]}]))
    result = CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(golden), "--modes", "hybrid",
                                      "--by-question"])
    assert result.exit_code == 0, result.output
    assert ("  rejected: the question names session 9, and its series has session 1, 2, 3, 4, 5 only\n"
            "  nearest: campaign/sessions/session-05 — a series member nearest the one asked\n") in result.output
    report = json.loads(CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(golden), "--modes",
                                                 "hybrid", "--format", "json"]).output)
    assert [n["id"] for n in report["modes"]["hybrid"]["per_question"]["s9"]["nearest"]] == [
        "campaign/sessions/session-05", "campaign/sessions/session-04", "campaign/sessions/session-03"]


def test_evaluate_says_whether_the_answers_words_reached_the_context(tmp_path, campaign_db):
    """Note recall counts a note whose answering section the context does not show (Thellade-check at stop 36: 30
    of its 32 missing answer quotes were in a note shown). A golden question's `answers`, the notes' own words that
    answer it, are looked for in the context, markup and spacing evened out; each absent one is listed."""
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([
        {"id": "tinker", "tier": "lookup", "question": "Who does the Tinker work for, and since when?",
         "required": ["people/teodor-vask.md"],
         "answers": ["Since the twentieth of Frostfall 1346 Teodor has been a paid agent of the Sable Accord",
                     "He keeps a second shop in Kestrel Point"]},
    ]))
    result = CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(golden), "--modes", "hybrid",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    row = report["modes"]["hybrid"]["per_question"]["tinker"]
    assert row["recall"] == 1.0 and row["answers"] == 0.5  # the first is in the note's Secrets, written with a link
    assert row["answers_unshown"] == ["He keeps a second shop in Kestrel Point"]
    assert report["modes"]["hybrid"]["all"]["answers"] == 0.5
    table = CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(golden), "--modes", "hybrid",
                                     "--by-question"]).output
    assert "answers shown" in table.splitlines()[0]
    assert "tinker (lookup): Who does the Tinker work for, and since when?\n" in table
    assert "answer not in the context: 'He keeps a second shop in Kestrel Point'" in table
    (tmp_path / "bad.json").write_text(json.dumps([{"id": "q", "tier": "lookup", "question": "Who?", "answers": "x"}]))
    refused = CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(tmp_path / "bad.json")])
    assert refused.exit_code == 1 and "answers must be a list of the notes' words" in refused.output


def test_evaluate_by_question_says_when_a_missed_note_is_one_retrieval_never_offers(tmp_path):
    """An unfilled template without frontmatter links (a vault's blank settlement page): no mode can bring it, and
    the miss says so, so a golden set's author fixes the note or the question instead of tuning retrieval."""
    from datasette_okf.store import build

    build([ROOT / "tests" / "fixtures" / "plugins"], tmp_path / "p.db", embed=False)
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([{"id": "stub", "tier": "lookup", "question": "What is Eastport, the settlement, like?",
                                   "required": ["01 World/06 Settlements/Eastport.md"]}]))
    result = CliRunner().invoke(cli, ["okf", "evaluate", str(tmp_path / "p.db"), str(golden), "--modes", "keyword",
                                      "--by-question", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert ("missed: 01 World/06 Settlements/Eastport.md — an unfilled template (is_stub) without frontmatter links: "
            "never a seed nor a walked note") in result.output



def test_evaluate_refuses_a_bad_golden_set_or_mode_with_a_message_not_a_traceback(tmp_path, campaign_db):
    """hotpotqa-mini's own questions.json (no tiers), a JSON object, text that is no JSON, "vector:x", "vector:0":
    each was a Python traceback; now one line naming the file or the option, and what is wrong."""
    cases = {
        "tierless.json": (json.dumps([{"id": "q1", "question": "Who?"}]), "question 'q1': tier must be one of"),
        "object.json": (json.dumps({"questions": []}), "a golden set is a JSON list of questions, not a dict"),
        "text.json": ("not json", "not a JSON golden set"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_text(content)
        result = CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(tmp_path / name)])
        assert result.exit_code == 1 and f"Error: {tmp_path / name}: " in result.output, result.output
        assert message in result.output and "Traceback" not in result.output
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([{"id": "q", "tier": "lookup", "question": "Who?", "required": []}]))
    for spec, message in [("foo", "a mode is one of"), ("vector:x", "must be a whole number"), ("vector:0", "k")]:
        result = CliRunner().invoke(cli, ["okf", "evaluate", str(campaign_db), str(golden), "--modes", f"hybrid,{spec}"])
        assert result.exit_code == 2 and "Invalid value for --modes" in result.output and message in result.output


def test_commands_reading_a_database_refuse_one_that_is_no_datasette_okf_database(tmp_path):
    """lint, evaluate and rebuild-candidates on another SQLite file or on a file that is no SQLite at all: one line
    naming the file ("no such table: link_issues", "file is not a database" were tracebacks)."""
    import sqlite3

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("create table t (x)")
    text = tmp_path / "notes.db"
    text.write_text("not a database\n")
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([{"id": "q", "tier": "lookup", "question": "Who?", "required": []}]))
    for path in (other, text):
        for args in (["lint", str(path)], ["evaluate", str(path), str(golden)], ["rebuild-candidates", str(path)]):
            result = CliRunner().invoke(cli, ["okf", *args])
            assert result.exit_code == 1, (args, result.output)
            assert f"Error: {path}: this is not a datasette-okf database" in result.output, (args, result.output)
