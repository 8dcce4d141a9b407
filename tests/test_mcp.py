"""The OKF tools over MCP, with the mcp package's own client over streamable HTTP against a real Datasette."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

pytest.importorskip("datasette_mcp", reason="the [mcp] extra is not installed (make test installs it)")

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from datasette_okf import context_for
from datasette_okf.lint import checks

from .conftest import running_datasette

QUESTION = "Who does the Tinker work for?"
CONFIGURED_BUDGET = 700  # the server's plugin configuration, which the MCP tool must apply as the JSON API does
AUTH_PLUGIN = '''
from datasette import hookimpl

@hookimpl
def actor_from_request(datasette, request):
    if request.headers.get("authorization") == "Bearer gm-token":
        return {"id": "gm"}
'''


@pytest.fixture(scope="module")
def server(campaign_db, tmp_path_factory):
    """Datasette on 127.0.0.1 with the example and a private copy only the GM may view."""
    import yaml

    folder = tmp_path_factory.mktemp("mcp")
    secret = folder / "gm_notes.db"
    shutil.copyfile(campaign_db, secret)
    (folder / "plugins").mkdir()
    (folder / "plugins" / "bearer.py").write_text(AUTH_PLUGIN)
    (folder / "metadata.yml").write_text(yaml.safe_dump({"databases": {"gm_notes": {"allow": {"id": "gm"}}},
                                                        "plugins": {"datasette-okf": {"budget": CONFIGURED_BUDGET}}}))
    with running_datasette(str(campaign_db), str(secret), "--metadata", str(folder / "metadata.yml"),
                           "--plugins-dir", str(folder / "plugins")) as url:
        yield url + "-/mcp"


def session_run(url: str, steps, token: str | None = None):
    """Open an MCP session (optionally as an actor) and run `steps(session)` in it."""
    async def go():
        import httpx2

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return await steps(session)

    return asyncio.run(go())


def call(url, name, arguments, token=None):
    return session_run(url, lambda s: s.call_tool(name, arguments), token)


def test_initialize_lists_our_tools_and_datasette_mcps(server):
    async def steps(session):
        return {tool.name: tool for tool in (await session.list_tools()).tools}

    tools = session_run(server, steps)
    assert {"list_databases", "get_database_schema", "execute_sql"} <= set(tools)  # datasette-mcp's own
    assert {"context_for", "concept", "lint", "related"} <= set(tools)
    for name in ("context_for", "concept", "lint", "related"):
        assert tools[name].annotations.read_only_hint is True
        assert len(tools[name].description) > 150  # written for an agent: when to call it, what comes back


def test_context_for_returns_the_context_and_the_notes(server, campaign_db):
    result = call(server, "context_for", {"question": QUESTION, "db": "campaign", "budget": 1200})
    assert not result.is_error
    data = result.structured_content
    direct = context_for(campaign_db, QUESTION, budget=1200)
    assert data["context"] == direct["context"] and data["confident"]
    assert [n["id"] for n in data["nodes"]] == [n["id"] for n in direct["nodes"]]
    assert set(data["nodes"][0]) == {"id", "title", "via", "why", "trust"}
    assert data["nodes"][0]["why"] == direct["nodes"][0]["why"] and data["nodes"][0]["why"]["kind"] == "seed"


def test_context_for_applies_the_servers_configuration_as_the_json_api_does(server, campaign_db):
    import urllib.parse
    import urllib.request

    over_mcp = call(server, "context_for", {"question": QUESTION, "db": "campaign"}).structured_content
    api = server.removesuffix("-/mcp") + "-/context_for.json?" + urllib.parse.urlencode({"q": QUESTION, "db": "campaign"})
    with urllib.request.urlopen(api, timeout=60) as response:
        over_json = json.loads(response.read())
    direct = context_for(campaign_db, QUESTION, budget=CONFIGURED_BUDGET)
    assert over_mcp["context"] == over_json["context"] == direct["context"]
    assert context_for(campaign_db, QUESTION)["context"] != direct["context"]  # the configuration made a difference


def test_concept_related_and_lint(server):
    note = call(server, "concept", {"id": "campaign/people/teodor-vask", "db": "campaign"}).structured_content
    assert note["title"] == "Teodor Vask" and note["frontmatter"]["type"] == "Person"
    assert any(e["id"] == "campaign/organisations/sable-accord" for e in note["links_to"])
    assert note["linked_from_total"] >= len(note["linked_from"]) > 0
    around = call(server, "related", {"id": "campaign/people/teodor-vask", "db": "campaign", "hops": 2}).structured_content
    assert 0 < len(around["related"]) <= 25 and around["related"][0]["hop"] in (1, 2)
    every = call(server, "lint", {"db": "campaign"}).structured_content
    names = {c["name"]: c for c in every["checks"]}
    assert names["dead_links"]["count"] == 1 and len(names) == len(checks())
    one = call(server, "lint", {"db": "campaign", "check": "ambiguous_links"}).structured_content
    assert [c["name"] for c in one["checks"]] == ["ambiguous_links"] and one["checks"][0]["count"] == 1


@pytest.mark.parametrize("name, arguments, message", [
    ("context_for", {"question": "", "db": "campaign"}, "question is empty"),
    ("context_for", {"question": "x" * 2001, "db": "campaign"}, "at most 2000"),
    ("context_for", {"question": "hi", "db": "campaign", "mode": "psychic"}, "mode must be one of"),
    ("context_for", {"question": "hi", "db": "campaign", "budget": 10**6}, "budget must be between"),
    ("concept", {"id": "campaign/people/teodor", "db": "campaign"}, "Did you mean: campaign/people/teodor-vask"),
    ("related", {"id": "campaign/people/teodor-vask", "db": "campaign", "hops": 9}, "hops must be between 1 and 3"),
    ("lint", {"db": "campaign", "check": "spelling"}, "Unknown check 'spelling'"),
    ("lint", {"db": "nope"}, "No OKF database named 'nope'"),
    ("concept", {"id": "x" * 60_000, "db": "campaign"},
     "id is 60,000 characters; concept ids are at most 4,096 characters, as context_for returns them, e.g. campaign/"),
    ("related", {"id": "x" * 60_000, "db": "campaign"}, "id is 60,000 characters; concept ids are at most 4,096"),
    ("concept", {"id": "mira\0vell", "db": "campaign"}, "id contains a NUL character, which no concept id has"),
    ("related", {"id": "", "db": "campaign"}, "id is empty; pass a concept id as context_for returns them"),
])
def test_bad_arguments_are_tool_errors_that_say_what_to_do(server, name, arguments, message):
    result = call(server, name, arguments)
    assert result.is_error and message in result.content[0].text


@pytest.mark.parametrize("name", ["concept", "related"])
def test_ids_with_like_wildcards_are_matched_literally(server, name):
    """% and _ are no wildcards here: an unknown id gets no made-up suggestions."""
    for concept_id in ["%", "_", "\\", "campaign/people/%"]:
        result = call(server, name, {"id": concept_id, "db": "campaign"})
        assert result.is_error and result.content[0].text.endswith(f": No note with id {concept_id!r}.")


def test_a_private_database_needs_the_right_actor(server):
    denied = call(server, "context_for", {"question": QUESTION, "db": "gm_notes"})
    assert denied.is_error and "No OKF database named 'gm_notes' that you may view" in denied.content[0].text
    assert "Teodor" not in denied.content[0].text
    for name, arguments in [("concept", {"id": "campaign/people/teodor-vask", "db": "gm_notes"}),
                            ("lint", {"db": "gm_notes"}), ("related", {"id": "campaign/people/teodor-vask", "db": "gm_notes"})]:
        assert call(server, name, arguments).is_error
    listed = call(server, "list_databases", {}).structured_content
    assert "gm_notes" not in json.dumps(listed)
    allowed = call(server, "context_for", {"question": QUESTION, "db": "gm_notes"}, token="gm-token")
    assert not allowed.is_error and allowed.structured_content["confident"]
    # without db: the anonymous caller sees one bundle and is answered from it alone; the GM sees two, and both
    # are asked, their notes sharing one budget, each naming its database
    assert call(server, "context_for", {"question": QUESTION}).structured_content["database"] == "campaign"
    both = call(server, "context_for", {"question": QUESTION}, token="gm-token").structured_content
    assert both["database"] == "*" and both["databases"] == ["campaign", "gm_notes"]
    assert {n["db"] for n in both["nodes"]} == {"campaign", "gm_notes"}


def test_without_datasette_mcp_the_plugin_has_no_mcp_hook_and_still_loads():
    import subprocess
    import sys

    code = """
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *args: None if name == "datasette_mcp" else real(name, *args)
import datasette_okf
print(hasattr(datasette_okf, "register_mcp_tools"))
importlib.util.find_spec = real
print(hasattr(importlib.reload(datasette_okf), "register_mcp_tools"))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_mcp_tools_work_on_an_immutable_file(campaign_db, tmp_path):
    """`datasette serve -i FILE`, as a replica behind a load balancer runs it."""
    copy = tmp_path / "campaign.db"
    shutil.copyfile(campaign_db, copy)
    with running_datasette("-i", str(copy)) as url:
        result = call(url + "-/mcp", "context_for", {"question": QUESTION, "db": "campaign"})
        lint = call(url + "-/mcp", "lint", {"db": "campaign"})
    assert not result.is_error and result.structured_content["nodes"][0]["title"] == "Teodor Vask"
    assert not lint.is_error
