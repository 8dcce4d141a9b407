"""context_for's cost by stage on a built database, over a golden set's questions (warm: each asked once first).

    python benchmarks/stage_costs.py DB GOLDEN.json [PASSES]

Prints the median of each stage's `timings_ms` over every question and pass. Run it with PYTHONPATH pointing at
another checkout, on a database that checkout built, for a same-run baseline. One connection, as Datasette keeps:
until issue 17's stop 32 each question opened its own, so every figure also paid for loading sqlite-vec and
building the title index (4.6 ms on Thellade then), which a server does once.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from datasette_okf.retrieve import connection, context_for


def main() -> None:
    path, golden = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
    db = connection(path)
    passes = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for question in golden:  # warm: question vectors cached, pages read
        context_for(db, question["question"])
    stages: dict[str, list[float]] = {}
    for _ in range(passes):
        for question in golden:
            for stage, ms in context_for(db, question["question"])["timings_ms"].items():
                stages.setdefault(stage, []).append(ms)
    print(path, {stage: round(statistics.median(values), 1) for stage, values in stages.items()})


if __name__ == "__main__":
    main()
