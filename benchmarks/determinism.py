"""Does a question get the same context in every process, and a vault the same database from every build?

    python benchmarks/determinism.py [--shared ../shared] [--work build/golden] [--sets examples,thellade,...]
                                     [--modes hybrid,vector:10,keyword:10,graph-walk] [--seeds 1,3]
                                     [--build-vault thellade-campaign-vault]

Python seeds string hashing afresh in each process, so anything that follows the order of a set of strings can
change between a server's restarts. This asks every question of each golden set in each mode in one process per
PYTHONHASHSEED and prints the questions whose contexts differ (stop 41: Thellade-check4's thf21 had two contexts).
With --build-vault it also builds that vault of ../shared/corpora twice without vectors, under the first two
seeds, and compares every table row by row in rowid order (stop 41: edges, headings, external links and link
issues were written in a set's order). Reads the databases `golden_sets.py` built in --work; musique-mini is never
read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def contexts(work: str, names: list[str], modes: list[str], shared: str) -> dict[str, str]:
    """question key -> md5 of its context, in this process."""
    from golden_sets import sets, vault_of

    from datasette_okf.evaluate import parse_mode
    from datasette_okf.retrieve import context_for

    available = sets(Path(shared))
    hashes = {}
    for name in names:
        for mode in modes:
            mode_name, options = parse_mode(mode)
            for question in available[name][1]:
                result = context_for(f"{work}/{vault_of(name)}.db", question["question"], mode=mode_name, **options)
                hashes[f"{name} {mode} {question['id']}"] = hashlib.md5(result["context"].encode()).hexdigest()
    return hashes


def in_process(seed: str, *arguments: str) -> str:
    """This script's own output, run with PYTHONHASHSEED=seed."""
    environment = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run([sys.executable, __file__, *arguments], env=environment, check=True,
                          capture_output=True, text=True).stdout


def tables(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows in rowid order, the build's time left out."""
    with sqlite3.connect(path) as conn:
        names = [row[0] for row in conn.execute(
            "select name from sqlite_master where type = 'table' and name not like 'sqlite%'"
            " and sql not like '%without rowid%' and sql not like 'create virtual%'")]
        return {name: [row for row in conn.execute(f"select rowid, * from [{name}] order by rowid")
                       if name != "meta" or row[1] not in ("built_at", "bundles")] for name in names}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(HERE.parent.parent / "shared"))
    parser.add_argument("--work", default="build/golden")
    parser.add_argument("--sets", default="examples,thellade,13th-age,okf-samples,thellade-check,13th-age-check,"
                        "thellade-check2,13th-age-check2,thellade-check3,13th-age-check3,thellade-check4,13th-age-check4,"
                        "thellade-check5,13th-age-check5,thellade-check6,13th-age-check6,thellade-check7,13th-age-check7,"
                        "thellade-check8,13th-age-check8")
    parser.add_argument("--modes", default="hybrid,vector:10,keyword:10,graph-walk")
    parser.add_argument("--seeds", default="1,3")
    parser.add_argument("--build-vault", help="a vault folder of ../shared/corpora to build twice and compare")
    parser.add_argument("--emit", choices=["contexts", "build"], help=argparse.SUPPRESS)  # one seed's process
    parser.add_argument("--into", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.emit == "contexts":
        print(json.dumps(contexts(args.work, args.sets.split(","), args.modes.split(","), args.shared)))
        return
    if args.emit == "build":
        from datasette_okf.store import build
        build([Path(args.shared) / "corpora" / args.build_vault / "vault"], Path(args.into), embed=False)
        return
    seeds = args.seeds.split(",")
    common = ["--shared", args.shared, "--work", args.work, "--sets", args.sets, "--modes", args.modes]
    runs = {seed: json.loads(in_process(seed, "--emit", "contexts", *common)) for seed in seeds}
    first = runs[seeds[0]]
    differ = sorted(key for key in first if any(runs[seed].get(key) != first[key] for seed in seeds[1:]))
    print(f"contexts: {len(first):,} questions x modes, PYTHONHASHSEED {', '.join(seeds)}: {len(differ)} differ")
    for key in differ:
        print(f"  {key}")
    if args.build_vault:
        with tempfile.TemporaryDirectory() as folder:
            built = []
            for seed in seeds[:2]:
                path = Path(folder) / f"seed{seed}.db"
                in_process(seed, "--emit", "build", "--shared", args.shared, "--build-vault", args.build_vault,
                           "--into", str(path))
                built.append(tables(path))
            differing = [name for name in built[0] if built[0][name] != built[1].get(name)]
            print(f"builds of {args.build_vault} under PYTHONHASHSEED {', '.join(seeds[:2])}: "
                  f"{len(built[0])} tables, differing in rowid order: {', '.join(differing) or 'none'}")


if __name__ == "__main__":
    main()
