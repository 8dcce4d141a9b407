"""A live vault, measured (issue 20): first answer after starting, full vectors, and edits while 8 clients ask.

    python benchmarks/live_vault.py VAULT [--edits 5] [--clients 8] [--question "Who is Vaust Hadrinel?"]

On a fresh copy of VAULT, with an empty vector cache (nothing is reused from earlier runs), in one run:

1. baseline: `datasette okf build COPY -o base.db` (what `make serve` waited for before serving), timed;
2. `datasette okf build COPY -o live.db --watch --serve`: seconds from the start of the command to the first
   confident /-/context_for.json answer, and to "vectors": "used" (every chunk embedded);
3. with CLIENTS threads asking a fixed question mix over HTTP all the while, EDITS times: append a sentence to a
   note, and time until /-/context_for.json returns that sentence and the chunk holding it has its vector (the
   issue's measure: "with vectors for the edited chunks"), and until every chunk of the note has one again (an edit
   that changes a note's description changes every chunk's embedded text). Client errors are counted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

QUESTIONS = ["Who is Vaust Hadrinel?", "Where is Blackwater Crossing?", "What happened in session 9?",
             "Who leads the Ashen Vanguard?", "What is the Embermoon Surge?", "Who is Kraya Feldrum?"]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)


def ask(base: str, question: str) -> dict:
    return get(base + "-/context_for.json?" + urllib.parse.urlencode({"q": question}))


def sql(base: str, db: str, query: str, **params: str) -> list[dict]:
    return get(base + f"{db}.json?" + urllib.parse.urlencode({"sql": query, "_shape": "array", **params}))


def wait_for(check, timeout: float = 900, every: float = 0.1) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        try:
            if check():
                return time.perf_counter()
        except OSError:
            pass
        time.sleep(every)
    raise SystemExit("timed out")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vault", type=Path)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--question", default=QUESTIONS[0])
    parser.add_argument("--port", type=int, default=8097)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="live-vault-"))
    copy = work / "vault"
    shutil.copytree(args.vault, copy)
    env = {**os.environ, "DATASETTE_OKF_CACHE": str(work / "empty-cache.db")}
    datasette = [sys.executable, "-m", "datasette"]

    started = time.perf_counter()
    subprocess.run(datasette + ["okf", "build", str(copy), "-o", str(work / "base.db")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    baseline = time.perf_counter() - started
    print(f"baseline build (then serve): {baseline:.1f} s to the first answer and to full vectors")
    (work / "empty-cache.db").unlink(missing_ok=True)  # the live run embeds everything again too

    base = f"http://127.0.0.1:{args.port}/"
    log = (work / "watch.log").open("w")
    started = time.perf_counter()
    process = subprocess.Popen(datasette + ["okf", "build", str(copy), "-o", str(work / "live.db"), "--watch",
                                            "--serve", "--port", str(args.port)], env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        first = wait_for(lambda: ask(base, args.question)["confident"]) - started
        print(f"--watch --serve: first confident answer after {first:.1f} s")
        # once a second, as a person would look: asking ten times a second would take CPU from the embedding
        full = wait_for(lambda: ask(base, args.question)["vectors"] == "used", every=1.0) - started
        print(f"--watch --serve: every vector after {full:.1f} s (baseline {baseline:.1f} s)")

        stop = threading.Event()
        counts = {"ok": 0, "errors": 0}
        lock = threading.Lock()

        def client(n: int) -> None:
            i = n
            while not stop.is_set():
                try:
                    ask(base, QUESTIONS[i % len(QUESTIONS)])
                    key = "ok"
                except Exception:  # noqa: BLE001 - counted, not raised
                    key = "errors"
                with lock:
                    counts[key] += 1
                i += 1

        threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(args.clients)]
        for thread in threads:
            thread.start()
        notes = sql(base, "live", "select id, path, title from concepts where not is_index and not is_stub"
                                  " order by degree desc limit :n", n=str(args.edits))
        latencies, wholes = [], []
        for n, note in enumerate(notes):
            title = note["title"]
            sentence = f"The Quillon{n}zed lantern hangs in {title}."
            path = copy / note["path"]
            saved = time.perf_counter()
            with open(path, "a", encoding="utf-8") as file:
                file.write(f"\n\n{sentence}\n")

            def edited(sentence: str = sentence, note: dict = note) -> bool:
                # the question names the note, so that what is measured is freshness, not ranking; and the
                # sentence itself is looked for (a context with no match repeats the question)
                if sentence not in ask(base, f"Which lantern hangs in {note['title']}?")["context"]:
                    return False
                rows = sql(base, "live", "select count(*) as n from chunks where concept_id = :id"
                                         " and instr(text, :sentence) and embedded_with is not null",
                           id=note["id"], sentence=sentence)
                return rows[0]["n"] > 0  # the edited chunk has its vector

            def whole(note: dict = note) -> bool:
                rows = sql(base, "live", "select count(*) as n from chunks where concept_id = :id"
                                         " and embedded_with is null", id=note["id"])
                return rows[0]["n"] == 0

            latencies.append(wait_for(edited, timeout=120) - saved)
            wholes.append(wait_for(whole, timeout=120) - saved)
            print(f"  edit {n + 1}: {note['path']}: new text and the edited chunk's vector served after "
                  f"{latencies[-1]:.2f} s, every chunk of the note after {wholes[-1]:.2f} s")
            time.sleep(1)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        print(f"edits: median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s (every chunk of the "
              f"note: median {statistics.median(wholes):.2f} s, max {max(wholes):.2f} s), while "
              f"{args.clients} clients asked {counts['ok']:,} questions ({counts['errors']} errors)")
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
        print(f"watch log: {work / 'watch.log'}")


if __name__ == "__main__":
    main()
