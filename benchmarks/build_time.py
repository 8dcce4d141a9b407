"""Time `datasette okf build` on a bundle: full build, then a no-change rebuild.

A baseline runs in the same process on the same files so shared-machine noise
shows up in both: reading every .md file and parsing its YAML with plain
yaml.safe_load (the least any indexer must do).

    python benchmarks/build_time.py ../shared/corpora/thellade-campaign-vault/vault
"""

from __future__ import annotations

import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from datasette_okf.store import build


def baseline(root: Path) -> float:
    started = time.perf_counter()
    for path in root.rglob("*.md"):
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.startswith("---\n"):
            end = text.find("\n---", 4)
            try:
                yaml.safe_load(text[4:end])
            except yaml.YAMLError:
                pass
    return time.perf_counter() - started


def main(root: Path, repeats: int = 3) -> None:
    full, again, base = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.db"
            base.append(baseline(root))
            started = time.perf_counter()
            report = build([root], db, embed=False)
            full.append(time.perf_counter() - started)
            started = time.perf_counter()
            build([root], db, embed=False)
            again.append(time.perf_counter() - started)
    b = report.bundles[0]
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, {sys.platform}")
    print(f"bundle: {root} ({b.concepts} concepts, {sum(b.edges_by_kind.values())} edges)")
    print(f"baseline read + yaml.safe_load: median {statistics.median(base):.2f}s")
    print(f"full build (no embeddings):      median {statistics.median(full):.2f}s  (runs: {', '.join(f'{x:.2f}' for x in full)})")
    print(f"no-change rebuild:               median {statistics.median(again):.3f}s")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
