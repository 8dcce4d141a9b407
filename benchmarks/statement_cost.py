"""One stage's statement, re-run as `context_for` ran it, on a built database.

    python benchmarks/statement_cost.py DB STAGE "QUESTION" ["QUESTION" ...] [--runs N]

For each question, `context_for` runs once; then the statement it kept for STAGE (`sql[STAGE]` with
`params[STAGE]`: seeds, walk, facts…) runs N times (default 100) on the same connection, and the median is
printed in milliseconds. Run it with PYTHONPATH pointing at another checkout, alternating, for a same-run
baseline: the machine's speed moves more between runs than many changes do.
"""

from __future__ import annotations

import argparse
import statistics
import time

from datasette_okf.retrieve import connection, context_for


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("stage")
    parser.add_argument("questions", nargs="+")
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    conn = connection(args.db)
    for question in args.questions:
        result = context_for(conn, question)
        if args.stage not in result["sql"]:
            print(f"{question}: no {args.stage} statement ran")
            continue
        sql, params = result["sql"][args.stage], result["params"][args.stage]
        times, rows = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            rows = len(conn.execute(sql, params).fetchall())
            times.append((time.perf_counter() - start) * 1000)
        print(f"{question}: {args.stage} {statistics.median(times):.2f} ms median of {args.runs}, {rows} rows")


if __name__ == "__main__":
    main()
