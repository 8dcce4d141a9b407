"""The built file opens in Datasette: search box, facets on JSON arrays."""

import asyncio

from datasette.app import Datasette

from datasette_okf.store import build

from .conftest import write_bundle


def get_json(db_path, path):
    async def fetch():
        ds = Datasette([str(db_path)])
        response = await ds.client.get(path)
        assert response.status_code == 200, response.text
        return response.json()

    return asyncio.run(fetch())


def test_search_and_tag_facets_work(tmp_path):
    bundle = write_bundle(
        tmp_path / "lore",
        {
            "a.md": "---\ntype: Person\ntags: [npc, smuggler]\n---\nSmuggles brandy past the harbour watch.\n",
            "b.md": "---\ntype: Person\ntags: [npc]\n---\nKeeps the lighthouse.\n",
        },
    )
    db_path = tmp_path / "lore.db"
    build([bundle], db_path, embed=False)
    rows = get_json(db_path, "/lore/concepts.json?_search=brandy&_shape=array")
    assert [r["id"] for r in rows] == ["lore/a"]
    data = get_json(db_path, "/lore/concepts.json?_facet_array=tags")
    counts = {f["value"]: f["count"] for f in data["facet_results"]["tags"]["results"]}
    assert counts == {"npc": 2, "smuggler": 1}
