"""`llm okf`, the OKF toolbox and the okf: fragment loader, offline: llm-echo and a scripted test model."""

import json
import time

import llm
import pytest
from click.testing import CliRunner
from llm.cli import cli as llm_cli

from datasette_okf import context_for
from datasette_okf.answer import SYSTEM_PROMPT, OKF, AnswerError, parse_fragment_argument

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
    import sqlite3

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
