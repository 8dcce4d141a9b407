"""What Datasette's own pages cost on a built database: a concept's row page (its "Links from other tables"
counts), the edges table page with and without facets (foreign-key labels), the question page (its examples), the
database page (which asks for the canned queries dozens of times).

    python benchmarks/datasette_pages.py DB [BASELINE_DB]

BASELINE_DB, timed in the same run, is the same bundle built by other code (say, before a schema change).
Medians in milliseconds over Datasette's in-process client; hubs are the five notes with the most incoming edges.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import statistics
import sys
import time
from pathlib import Path

from datasette.app import Datasette


def quoted(concept_id: str) -> str:
    return concept_id.replace("~", "~7E").replace("/", "~2F").replace(" ", "~20").replace(".", "~2E")


async def timed(ds: Datasette, url: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = await ds.client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return statistics.median(times)


async def measure(paths: list[Path]) -> None:
    ds = Datasette([str(p) for p in paths])
    for path in paths:
        name = path.stem
        conn = sqlite3.connect(path)
        hubs = [r[0] for r in conn.execute(
            "select dst from edges where dst is not null group by dst order by count(*) desc limit 5")]
        notes = [r[0] for r in conn.execute("select id from concepts where not is_index order by id limit 15")]
        conn.close()
        rows = [await timed(ds, f"/{name}/concepts/{quoted(i)}", 3) for i in notes]
        hub_rows = [await timed(ds, f"/{name}/concepts/{quoted(i)}", 3) for i in hubs]
        print(f"{name}: row page p50 {statistics.median(rows):.1f} ms, hubs {statistics.median(hub_rows):.1f} ms; "
              f"edges page {await timed(ds, f'/{name}/edges', 6):.1f} ms, without facets "
              f"{await timed(ds, f'/{name}/edges?_nofacet=1', 6):.1f} ms; "
              f"question page {await timed(ds, f'/-/context_for?db={name}', 6):.1f} ms; "
              f"database page (its canned queries) {await timed(ds, f'/{name}', 10):.1f} ms")


if __name__ == "__main__":
    logging.disable(logging.INFO)  # the client logs every request
    asyncio.run(measure([Path(p) for p in sys.argv[1:]]))
