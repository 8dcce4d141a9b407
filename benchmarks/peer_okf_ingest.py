"""Side by side on one bundle: our context_for against the peer okf-ingest, and the bare SQLite floor.

    python benchmarks/peer_okf_ingest.py BUNDLE OUR_DB [--peer-venv build/okf-ingest-venv]

okf-ingest (PyPI) is installed into its own venv (pip, from the package registry)
the first time. Both tools are timed the way a user calls them: one CLI process
per question (`okf context DB --query Q --max-tokens 2000` against
`datasette okf context DB Q --budget 2000`), so start-up is included on both
sides; ours is also timed in-process. Ingest/build times use each tool's own
command on the same folder.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from context_latency import THELLADE

from datasette_okf.retrieve import connection, context_for


def timed(args: list[str], check: bool = True) -> float:
    started = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("db")
    parser.add_argument("--peer-venv", default="build/okf-ingest-venv")
    args = parser.parse_args()
    venv = Path(args.peer_venv)
    if not (venv / "bin" / "okf").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "okf-ingest"], check=True)
    okf = str(venv / "bin" / "okf")
    peer_db = venv / "bench.duckdb"
    peer_db.unlink(missing_ok=True)
    # okf ingest exits 1 on a non-conformant bundle (a vault without `type`) but still loads it
    ingest = timed([okf, "ingest", args.bundle, "--db", str(peer_db)], check=False)
    if not peer_db.exists():
        sys.exit("okf-ingest did not create its database")
    peer, ours_cli, ours = [], [], []
    conn = connection(args.db)
    context_for(conn, "warm up")
    for question in THELLADE:
        peer.append(timed([okf, "context", str(peer_db), "--query", question, "--max-tokens", "2000"]))
        ours_cli.append(timed([sys.executable, "-m", "datasette", "okf", "context", args.db, question, "--budget", "2000"]))
        started = time.perf_counter()
        context_for(conn, question)
        ours.append(time.perf_counter() - started)
    med = lambda values: statistics.median(values) * 1000
    print(f"okf-ingest ingest of {args.bundle}: {ingest:.1f} s")
    print(f"okf-ingest `okf context` per question (process):     p50 {med(peer):7.0f} ms")
    print(f"datasette okf context per question (process):        p50 {med(ours_cli):7.0f} ms")
    print(f"context_for in-process:                               p50 {med(ours):7.1f} ms")
    print(f"ratio, process vs process (okf-ingest / ours):        {med(peer) / med(ours_cli):.2f}x")


if __name__ == "__main__":
    main()
