"""The prompt-submit trigger with 10,000 keywords: in-process and as the command a hook runs.

    python benchmarks/trigger.py [--keywords 10000] [--runs 20]

Baselines in the same run: starting Python and doing nothing (`python -c pass`), the floor of any
Python hook, and the same trigger through `datasette okf trigger` (Datasette's start-up included).
Then two adversarial 1 MB prompts (the slowest kinds tests/test_trigger.py knows): 110,000 unclosed
wrapper tags, and 500,000 one-letter words between non-ASCII spaces.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import machine

from datasette_okf.trigger import run


def in_process_ms(path: Path, stdin: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run(str(path), stdin)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def median_ms(command: list[str], stdin: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, text=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keywords", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(3)
    syllables = ["ka", "ra", "mo", "ven", "dor", "til", "sa", "ne", "qui", "thal", "os", "ur", "ban", "el", "ith"]
    words = {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))).capitalize() for _ in range(args.keywords * 3)}
    names = sorted(words)[: args.keywords]
    keywords = [f"{a} {b}" if i % 3 == 0 else a for i, (a, b) in enumerate(zip(names, reversed(names)))]
    path = Path(tempfile.mkdtemp()) / "wiki-trigger-keywords.txt"
    path.write_text("# database: /data/big.db\n" + "\n".join(keywords) + "\n")
    prompt = ("<context>timezone: Europe/Paris</context> " + " ".join(rng.choice(syllables) for _ in range(300))
              + f" and what about {keywords[4242]}?")
    stdin = json.dumps({"session_id": "abc", "prompt": prompt})
    assert keywords[4242] in run(str(path), stdin)
    in_process = in_process_ms(path, stdin, args.runs)
    print(f"machine: {machine()}\n{len(keywords):,} keywords, a {len(prompt):,}-character prompt, medians of {args.runs}\n")
    print("| what | ms |\n|---|---|")
    print(f"| in-process: read the keywords, strip, match | {in_process:.1f} |")
    print(f"| baseline: `python -c pass` | {median_ms([sys.executable, '-c', 'pass'], '', args.runs):.1f} |")
    print(f"| `python -m datasette_okf.trigger FILE` (what a hook runs) | "
          f"{median_ms([sys.executable, '-m', 'datasette_okf.trigger', str(path)], stdin, args.runs):.1f} |")
    print(f"| `datasette okf trigger FILE` | "
          f"{median_ms([sys.executable, '-m', 'datasette', 'okf', 'trigger', str(path)], stdin, max(3, args.runs // 4)):.1f} |")
    question = f" and what about {keywords[4242]}?"
    for what, filler in (("110,000 unclosed wrapper tags", "<context>" * 111_110),
                         ("500,000 one-letter words, non-ASCII spaces", "a\u3000" * 499_990)):
        adversarial = json.dumps({"prompt": filler + question})
        assert keywords[4242] in run(str(path), adversarial)
        print(f"| 1 MB prompt of {what}: in-process | {in_process_ms(path, adversarial, args.runs):.1f} |")
        print(f"| 1 MB prompt of {what}: `python -m datasette_okf.trigger FILE` | "
              f"{median_ms([sys.executable, '-m', 'datasette_okf.trigger', str(path)], adversarial, args.runs):.1f} |")


if __name__ == "__main__":
    main()
