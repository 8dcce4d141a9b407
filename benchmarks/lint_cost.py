"""Each lint check's statement on a built database, slowest first: what its canned query costs in Datasette.

    python benchmarks/lint_cost.py DB [--runs 3]

Medians of `--runs` runs of each check (all folders), with its row count. Datasette stops a query after
`sql_time_limit_ms` (1,000 ms unless set), so a check over that shows an error page instead of its rows. Run it with
PYTHONPATH pointing at another checkout, alternating, for a same-run baseline.
"""

from __future__ import annotations

import argparse
import statistics
import time

from datasette_okf.lint import checks
from datasette_okf.retrieve import connection


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    conn = connection(args.db)
    timed = []
    for check in checks(None):
        times, rows = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            rows = len(conn.execute(check.sql, {"folder": ""}).fetchall())
            times.append((time.perf_counter() - start) * 1000)
        timed.append((statistics.median(times), check.name, rows))
    for ms, name, rows in sorted(timed, reverse=True):
        print(f"{ms:9.1f} ms  {name}  ({rows} rows)")


if __name__ == "__main__":
    main()
