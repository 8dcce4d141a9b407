"""`llm okf`, the OKF toolbox and the okf: fragment loader, offline: llm-echo and a scripted test model."""

import contextlib
import json
import shutil
import socket
import sqlite3
import threading
import time
from pathlib import Path

import llm
import pytest
from click.testing import CliRunner
from llm.cli import cli as llm_cli

from datasette_okf import context_for
from datasette_okf.answer import OKF, SYSTEM_PROMPT, AnswerError, check_database, parse_fragment_argument

from .conftest import closed_port

QUESTION = "Who does the Tinker work for?"


class Scripted(llm.Model):
    """Answers with a fixed text and counts its calls."""

    model_id = "okf-test-scripted"
    can_stream = True

    def __init__(self):
        self.answer = ""
        self.prompts = []

    def execute(self, prompt, stream, response, conversation):
        self.prompts.append((prompt.system, prompt.prompt))
        yield self.answer


class _Plugin:
    def __init__(self):
        self.model = Scripted()

    @llm.hookimpl
    def register_models(self, register):
        register(self.model)


@pytest.fixture(autouse=True)
def offline_llm(monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{closed_port()}")


@pytest.fixture
def scripted():
    plugin = _Plugin()
    llm.plugins.pm.register(plugin, name="okf-test-scripted")
    yield plugin.model
    llm.plugins.pm.unregister(name="okf-test-scripted")


def run(*args):
    return CliRunner().invoke(llm_cli, list(args), catch_exceptions=False)


def test_the_model_gets_the_system_prompt_the_question_and_the_context(campaign_db):
    result = run("okf", QUESTION, "-d", str(campaign_db), "-m", "echo", "--json")
    assert result.exit_code == 0, result.output
    echoed = json.loads(json.loads(result.output)["answer"])
    assert echoed["system"] == SYSTEM_PROMPT
    assert echoed["prompt"] == f"Question: {QUESTION}\n\n" + context_for(campaign_db, QUESTION)["context"]


def test_answer_is_streamed_and_cited_notes_are_printed_with_paths(campaign_db, scripted):
    scripted.answer = "Teodor Vask works for the Sable Accord [campaign/people/teodor-vask][campaign/organisations/sable-accord]."
    result = run("okf", QUESTION, "-d", str(campaign_db), "-m", "okf-test-scripted")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(scripted.answer)
    assert "Cited notes:\n  - Teodor Vask (campaign/people/teodor-vask) people/teodor-vask.md\n" \
           "  - The Sable Accord (campaign/organisations/sable-accord) organisations/sable-accord.md" in result.output


def test_explicit_ask_and_json_citations(campaign_db, scripted):
    scripted.answer = "The Sable Accord [campaign/organisations/sable-accord] [not/in/context]."
    result = run("okf", "ask", QUESTION, "-d", str(campaign_db), "-m", "okf-test-scripted", "--json")
    data = json.loads(result.output)
    assert [c["id"] for c in data["cited"]] == ["campaign/organisations/sable-accord"]


def test_not_confident_never_calls_the_model(campaign_db, scripted):
    result = run("okf", "How do I descale an espresso machine?", "-d", str(campaign_db), "-m", "okf-test-scripted")
    assert result.exit_code == 0
    assert result.output.startswith("The bundle has no confident match for this question")
    assert "Nearest notes, which may not be relevant:" in result.output
    assert scripted.prompts == []


def test_a_session_its_series_lacks_lists_the_series_members_instead(scripted, tmp_path):
    """"What happened in Group 4's third session?" (Thellade): refused, and the notes listed are Group 4's own."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {c}{n}.md":
             f"What happened in session {n}: the group fought.\n" for c, numbers in ((2, (3, 6, 7)), (4, (5, 6, 7)))
             for n in numbers}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = run("okf", "What happened in Group 4's third session?", "-d", str(tmp_path / "v.db"), "-m",
                 "okf-test-scripted")
    assert "(the question names session 3, and its series has session 5, 6, 7 only)" in result.output
    listed = result.output.split("The members its series has, nearest the one asked:\n")[1].splitlines()
    assert [line.split(" (")[0].strip() for line in listed] == [
        "- Campaign 4 - Session 05 - Part 45", "- Campaign 4 - Session 06 - Part 46", "- Campaign 4 - Session 07 - Part 47"]
    assert scripted.prompts == []


def test_the_exchange_is_logged_by_llm(campaign_db, scripted, tmp_path):
    scripted.answer = "Yes [campaign/people/teodor-vask]."
    run("okf", QUESTION, "-d", str(campaign_db), "-m", "okf-test-scripted")
    logs = run("logs", "list", "--json", "-n", "1")
    [entry] = json.loads(logs.output)
    assert entry["model"] == "okf-test-scripted" and entry["response"] == "Yes [campaign/people/teodor-vask]."
    assert entry["system"] == SYSTEM_PROMPT


def test_context_subcommand_prints_just_the_context(campaign_db):
    result = run("okf", "context", QUESTION, "-d", str(campaign_db))
    assert result.output.strip() == context_for(campaign_db, QUESTION)["context"].strip()


def test_clear_errors(campaign_db, tmp_path):
    missing = run("okf", QUESTION, "-d", str(tmp_path / "nope.db"), "-m", "echo")
    assert missing.exit_code == 1 and "no such database file" in missing.output
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("create table t (x)").connection.commit()
    wrong = run("okf", QUESTION, "-d", str(plain), "-m", "echo")
    assert "is not a datasette-okf database" in wrong.output
    started = time.perf_counter()
    ollama = run("okf", QUESTION, "-d", str(campaign_db), "-m", "ollama/llama3")
    assert ollama.exit_code == 1 and "no Ollama server answered at" in ollama.output
    assert time.perf_counter() - started < 10
    unknown = run("okf", QUESTION, "-d", str(campaign_db), "-m", "no-such-model")
    assert "unknown model 'no-such-model'" in unknown.output
    nowhere = run("okf", QUESTION)
    assert "-d DATABASE.db" in nowhere.output
    unreachable = run("okf", QUESTION, "--url", f"http://127.0.0.1:{closed_port()}/", "-m", "echo")
    assert "could not reach http://127.0.0.1:" in unreachable.output


def test_toolbox_calls_and_bounded_results(campaign_db):
    tool = OKF(str(campaign_db))
    model = llm.get_model("echo")
    calls = json.dumps({"tool_calls": [
        {"name": "OKF_context_for", "arguments": {"question": QUESTION}},
        {"name": "OKF_concept", "arguments": {"id": "campaign/people/teodor-vask"}},
        {"name": "OKF_concept", "arguments": {"id": "teodor"}},
    ]})
    chain = model.chain(calls, tools=[tool])
    chain.text()
    results = [r for response in chain._responses for r in response.prompt.tool_results]
    assert [r.name for r in results] == ["OKF_context_for", "OKF_concept", "OKF_concept"]
    assert results[0].output.startswith(f"# Context for: {QUESTION}")
    assert len(results[0].output) <= 1500 * 4 + 200  # the toolbox's budget bounds it
    assert results[1].output.startswith("# Teodor Vask (campaign/people/teodor-vask)")
    assert "links to: " in results[1].output and "campaign/organisations/sable-accord (works_for)" in results[1].output
    assert results[2].output == "no concept with id 'teodor'; did you mean: campaign/people/teodor-vask"


def test_toolbox_from_the_command_line(campaign_db):
    calls = json.dumps({"tool_calls": [{"name": "OKF_context_for", "arguments": {"question": QUESTION}}]})
    result = run("-m", "echo", "-T", f"OKF({json.dumps(str(campaign_db))})", calls, "--chain-limit", "3")
    assert result.exit_code == 0, result.output
    assert "Teodor Vask works_for The Sable Accord" in result.output


def test_fragment_loader(campaign_db):
    result = run("-m", "echo", "-f", f"okf:{campaign_db}:{QUESTION}", "Answer from the context.")
    echoed = json.loads(result.output)
    assert context_for(campaign_db, QUESTION)["context"] in echoed["prompt"]
    assert parse_fragment_argument("C:/kb/x.db:What: is it?") == ("C:/kb/x.db", "What: is it?")
    assert parse_fragment_argument("dir:with:colons/notes::Who?") == ("dir:with:colons/notes", "Who?")
    with pytest.raises(AnswerError):
        parse_fragment_argument("notes-without-extension:Who?")


def test_remote_url_uses_the_json_api(campaign_db, datasette_server, scripted):
    result = run("okf", "context", QUESTION, "--url", datasette_server)
    assert result.output.strip() == context_for(campaign_db, QUESTION)["context"].strip()
    scripted.answer = "Remote [campaign/people/teodor-vask]."
    asked = run("okf", QUESTION, "--url", datasette_server, "-d", "campaign", "-m", "okf-test-scripted")
    assert "Cited notes:\n  - Teodor Vask" in asked.output
    bad = run("okf", QUESTION, "--url", datasette_server, "-d", "nope", "-m", "echo")
    assert "answered 400: unknown OKF database 'nope'" in bad.output


AUTH_PLUGIN = '''
from datasette import hookimpl

@hookimpl
def actor_from_request(datasette, request):
    if request.headers.get("authorization") == "Bearer s3cret-gm-token":
        return {"id": "gm"}
'''


def test_a_private_database_needs_the_right_actor_through_url(campaign_db, tmp_path, monkeypatch):
    """--url against a database only the GM may see: refused without a token, answered with one."""
    import yaml

    from .conftest import running_datasette

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "bearer.py").write_text(AUTH_PLUGIN)
    metadata = tmp_path / "metadata.yml"
    metadata.write_text(yaml.safe_dump({"databases": {"campaign": {"allow": {"id": "gm"}}}}))
    with running_datasette(str(campaign_db), "--metadata", str(metadata), "--plugins-dir", str(plugins)) as url:
        monkeypatch.delenv("OKF_DATASETTE_TOKEN", raising=False)
        refused = run("okf", "context", QUESTION, "--url", url, "-d", "campaign")
        assert refused.exit_code == 1 and "answered 403: forbidden" in refused.output
        assert "Teodor" not in refused.output
        monkeypatch.setenv("OKF_DATASETTE_TOKEN", "wrong")
        assert "answered 403" in run("okf", "context", QUESTION, "--url", url, "-d", "campaign").output
        monkeypatch.setenv("OKF_DATASETTE_TOKEN", "s3cret-gm-token")
        allowed = run("okf", "context", QUESTION, "--url", url, "-d", "campaign")
        assert allowed.exit_code == 0
        assert allowed.output.strip() == context_for(campaign_db, QUESTION)["context"].strip()


def test_file_back_writes_the_answer_into_the_bundle_and_rebuilds(tmp_path, scripted):
    import shutil

    from datasette_okf.store import build

    from .conftest import EXAMPLES

    bundle = tmp_path / "campaign"
    shutil.copytree(EXAMPLES, bundle)
    db = tmp_path / "campaign.db"
    build([bundle], db, embed=False)
    scripted.answer = "Teodor Vask builds clockwork locks for the Sable Accord [campaign/people/teodor-vask]."
    question = "What does Teodor Vask build for the Sable Accord?"
    result = run("okf", question, "-d", str(db), "-m", "okf-test-scripted", "--file-back", str(bundle))
    assert result.exit_code == 0, result.output
    page = bundle / "syntheses" / "what-does-teodor-vask-build-for-the-sable-accord.md"
    assert f"Filed back: {page}" in result.output
    assert "by: okf-test-scripted" in page.read_text() and "[Teodor Vask](/people/teodor-vask.md)" in page.read_text()
    assert context_for(db, question)["nodes"][0]["id"] == "campaign/syntheses/what-does-teodor-vask-build-for-the-sable-accord"
    again = run("okf", question, "-d", str(db), "-m", "okf-test-scripted", "--file-back", str(bundle))
    assert again.exit_code == 1 and "answered, but not filed back" in again.output and "refusing to overwrite" in again.output
    remote = run("okf", question, "--url", "http://127.0.0.1:9/", "--file-back", str(bundle), "-m", "echo")
    assert remote.exit_code == 1 and "needs the local database" in remote.output


def test_datasette_okf_file_back_reads_the_answer_from_stdin(tmp_path):
    import shutil

    from datasette.cli import cli as datasette_cli

    from datasette_okf.store import build

    from .conftest import EXAMPLES

    bundle = tmp_path / "campaign"
    shutil.copytree(EXAMPLES, bundle)
    db = tmp_path / "campaign.db"
    build([bundle], db, embed=False)
    result = CliRunner().invoke(datasette_cli, [
        "okf", "file-back", str(db), str(bundle), "-q", "Who keeps the old lighthouse?", "--by", "human:gm",
        "--title", "Keepers of the Old Lighthouse"],
        input="The Lantern Keepers maintain it [campaign/organisations/lantern-keepers].\n")
    assert result.exit_code == 0, result.output
    page = bundle / "syntheses" / "keepers-of-the-old-lighthouse.md"
    assert result.output.strip() == f"filed back: {page}"
    assert "/organisations/lantern-keepers.md" in page.read_text()


# --url against servers that are not a Datasette with datasette-okf: one line saying what came back


@contextlib.contextmanager
def raw_server(*chunks: bytes, pause: float = 0.0):
    """A stub server on 127.0.0.1 that reads each request, sends `chunks` `pause` seconds apart, then hangs up.

    Raw bytes, so it can also send what no HTTP library would: a broken status line, a body cut short."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                request = b""
                while b"\r\n\r\n" not in request and (part := conn.recv(65536)):
                    request += part
                for i, chunk in enumerate(chunks):
                    if i and stop.wait(pause):
                        break
                    try:
                        conn.sendall(chunk)
                    except OSError:  # the client gave up
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def http_response(body: bytes, content_type: str = "application/json", length: int | None = None) -> bytes:
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


@pytest.mark.parametrize("answer, said", [
    (http_response(b"<!doctype html><title>Welcome to nginx!</title>", "text/html"), "answered 200 with an HTML page"),
    (http_response(b"{}"), "answered 200 with JSON that lacks question, context, nodes, seeds, confident, reason;"),
    (http_response(b"[1, 2]"), "answered 200 with a JSON array"),
    (http_response(b'{"question": "Q", "context": "C", "nodes": [], "seeds": [], "confident": false, "reason": "R",'
                   b' "nearest": [{"id": 1}]}'), "answered 200 with JSON that lacks nearest[0].id, nearest[0].title"),
    (http_response(b'{"question": "Who', "text/plain"), "answered 200 with invalid JSON (Unterminated string"),
    (b"HTTP/1.1 OOPS\r\n\r\n", "answered with a broken HTTP response (BadStatusLine: HTTP/1.1 OOPS)"),
    (http_response(b'{"question": "Who', length=1000), "closed the connection after 17 bytes of a 1000-byte answer"),
    (b"", "closed the connection without answering"),
], ids=["html", "empty-object", "array", "bad-nearest", "invalid-json", "broken-status-line", "cut-short", "hang-up"])
def test_url_that_does_not_answer_context_for_json_is_one_line_saying_what_it_answered(answer, said):
    with raw_server(answer) as url:
        result = run("okf", "context", QUESTION, "--url", url)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith(f"Error: {url}-/context_for.json ")
    assert said in result.output
    assert result.output.endswith("; expected context_for JSON from a Datasette with datasette-okf\n")


def test_url_that_drips_its_headers_is_given_up_after_timeout_seconds():
    """urllib's timeout is per socket read, and each line arrives well within it: only a total deadline ends this."""
    drip = [b"HTTP/1.1 200 OK\r\n"] + [b"X-Drip-%d: .\r\n" % i for i in range(60)]  # 60 s at 1 s a line
    with raw_server(*drip, pause=1) as url:
        started = time.perf_counter()
        result = run("okf", "context", QUESTION, "--url", url, "--timeout", "3")
        waited = time.perf_counter() - started
    assert result.exit_code == 1 and f"{url}-/context_for.json sent no complete answer within 3 s;" in result.output
    assert waited < 15


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf"])
def test_timeout_must_be_a_positive_number_of_seconds(seconds):
    result = run("okf", "ask", QUESTION, "--url", "http://127.0.0.1:9/", "--timeout", seconds)
    assert result.exit_code == 2 and "must be a positive number of seconds" in result.output


def test_timeout_is_only_for_url(campaign_db):
    result = run("okf", "context", QUESTION, "-d", str(campaign_db), "--timeout", "5")
    assert result.exit_code == 1 and "--timeout bounds the --url request" in result.output


# database paths with characters that mean something in a file: URI (#, ?, %, spaces)

AWKWARD_NAMES = ["notes#1.db", "what?.db", "100%25.db", "my notes/campaign.db"]


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("name", AWKWARD_NAMES)
def test_a_database_named_with_uri_characters_answers_and_creates_nothing(campaign_db, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    Path(name).parent.mkdir(exist_ok=True)
    shutil.copyfile(campaign_db, name)
    with contextlib.closing(sqlite3.connect(name)) as conn:  # builds are WAL files, whose readers keep -wal and -shm:
        conn.execute("pragma journal_mode = delete")  # with a rollback journal, any new file here is a stray
    before = listing(tmp_path)
    result = run("okf", "context", QUESTION, "-d", name)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == context_for(campaign_db, QUESTION)["context"].strip()
    assert OKF(name).concept("campaign/people/teodor-vask").startswith("# Teodor Vask (campaign/people/teodor-vask)")
    assert listing(tmp_path) == before  # no empty `notes`, `what` or `100%.db` beside it


@pytest.mark.parametrize("name", AWKWARD_NAMES)
def test_a_missing_database_named_with_uri_characters_is_reported_missing(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    Path("my notes").mkdir()
    result = run("okf", "context", QUESTION, "-d", name)
    assert result.exit_code == 1 and result.output == f"Error: no such database file: {name}\n"
    assert OKF(name).concept("campaign/people/teodor-vask") == f"error: no such database file: {name}"
    assert listing(tmp_path) == ["my notes"]


def test_checking_a_wal_database_creates_no_files(campaign_db, tmp_path):
    """A read-only (mode=ro) connection to a WAL database leaves -wal and -shm behind; the check opens it immutable."""
    path = tmp_path / "wal.db"
    shutil.copyfile(campaign_db, path)
    conn = sqlite3.connect(path)
    conn.execute("pragma journal_mode = wal")
    conn.close()
    assert listing(tmp_path) == ["wal.db"]
    assert check_database(path) == path
    assert listing(tmp_path) == ["wal.db"]


# ids no note can have, through the toolbox: a message saying what to pass, never an SQLite error


@pytest.mark.parametrize("concept_id, answer", [
    ("x" * 60_000, ("error: id is 60,000 characters; concept ids are at most 4,096 characters, "
                   "as context_for returns them, e.g. campaign/people/mira-vell")),
    ("mira\0vell", ("error: id contains a NUL character, which no concept id has; "
                   "pass one as context_for returns them, e.g. campaign/people/mira-vell")),
    ("%", "no concept with id '%'"),  # matched literally: not a wildcard that suggests every note
    ("_", "no concept with id '_'"),
    ("\\", "no concept with id '\\\\'"),
])
def test_toolbox_concept_answers_any_id_with_a_message(campaign_db, concept_id, answer):
    assert OKF(str(campaign_db)).concept(concept_id) == answer


def test_several_databases_are_asked_at_once_and_their_notes_cited(campaign_db, tmp_path, scripted):
    from datasette_okf.store import build

    from .conftest import VAULT

    vault = tmp_path / "myvault.db"
    build([VAULT], vault)
    context = run("okf", "context", "Who is Marrek Tindall?", "-d", str(campaign_db), "-d", str(vault))
    assert "### Marrek Tindall (vault/People/Marrek Tindall) [db: myvault]" in context.output
    assert "[db: campaign]" in context.output  # its Marrek Sallow
    answer = run("okf", "Who is Marrek Tindall?", "-d", str(campaign_db), "-d", str(vault),
                 "-m", "okf-test-scripted", "--json")
    data = json.loads(answer.output)
    assert data["confident"] and "[db: myvault]" in data["context"]
    refused = run("okf", "Who?", "-d", str(campaign_db), "-d", str(vault), "--file-back", str(tmp_path), "-m", "echo")
    assert refused.exit_code == 1 and "needs the local database it rebuilds (one)" in refused.output
