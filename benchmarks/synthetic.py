"""A deterministic synthetic OKF bundle of any size, shaped like a campaign vault.

    python benchmarks/synthetic.py 10000 build/synthetic-10k [--seed 7]

People, places, organisations, sessions and monsters in folders with index.md
files; power-law link degrees (a few hubs everyone links to, a long tail linked
once); typed relations asserted both ways (member_of / has_member, located_in /
hosts); sessions that link the places they visit; bodies of 3-5 headed sections.
The same size and seed always give byte-identical files.
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

TYPES = [("people", "Person", 0.40), ("places", "Place", 0.25), ("organisations", "Organization", 0.15),
         ("sessions", "Session", 0.10), ("monsters", "Monster", 0.10)]
SYLLABLES = ["ka", "ri", "vel", "dor", "an", "mo", "sel", "tha", "ur", "en", "bra", "gol", "mi", "ne", "os", "pa", "qui", "ra", "sto", "tu", "vy", "wen", "xa", "yo", "zer"]
HEADINGS = ["Appearance", "History", "Secrets", "Relationships", "Notes", "Rumours", "Goals", "Description"]


def _name(rng: random.Random, parts: int) -> str:
    return " ".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize() for _ in range(parts))


def _zipf_pick(rng: random.Random, count: int, exponent: float = 1.1) -> int:
    """An index in [0, count) with P(i) roughly proportional to 1 / (i + 1) ** exponent."""
    u = rng.random()
    if exponent == 1.0:
        return min(int(count ** u) - 1, count - 1)
    value = ((count ** (1 - exponent) - 1) * u + 1) ** (1 / (1 - exponent))
    return min(int(value) - 1, count - 1)


def generate(size: int, out: Path, seed: int = 7) -> Path:
    """Write `size` concepts (plus index.md files) into `out`, replacing what is there."""
    rng = random.Random(seed)
    vocabulary = [("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))) for _ in range(3000)]
    if out.exists():
        shutil.rmtree(out)
    concepts: list[dict] = []
    titles: set[str] = set()
    for folder, type_name, share in TYPES:
        for _ in range(max(1, round(size * share))):
            while True:
                title = _name(rng, 2 if type_name in ("Person", "Monster") else rng.randint(1, 3))
                if title not in titles:
                    titles.add(title)
                    break
            concepts.append({"folder": folder, "type": type_name, "title": title,
                             "file": title.lower().replace(" ", "-") + ".md", "relations": []})
    concepts = concepts[:size]
    rng.shuffle(concepts)  # hub rank is independent of type
    by_type: dict[str, list[int]] = {}
    for i, c in enumerate(concepts):
        by_type.setdefault(c["type"], []).append(i)

    def path(i: int) -> str:
        return f"/{concepts[i]['folder']}/{concepts[i]['file']}"

    for i, c in enumerate(concepts):
        if c["type"] == "Person" and by_type.get("Organization"):
            org = by_type["Organization"][_zipf_pick(rng, len(by_type["Organization"]))]
            c["relations"].append(("member_of", org))
            concepts[org]["relations"].append(("has_member", i))
        if c["type"] in ("Person", "Organization", "Monster") and by_type.get("Place"):
            place = by_type["Place"][_zipf_pick(rng, len(by_type["Place"]))]
            c["relations"].append(("located_in", place))
            concepts[place]["relations"].append(("hosts", i))

    for i, c in enumerate(concepts):
        links = {_zipf_pick(rng, len(concepts)) for _ in range(rng.randint(3, 8))} - {i}
        if c["type"] == "Session" and by_type.get("Place"):
            links |= {by_type["Place"][_zipf_pick(rng, len(by_type["Place"]))] for _ in range(3)}
        sections = []
        link_list = sorted(links)
        for s in range(rng.randint(3, 5)):
            words = [rng.choice(vocabulary) for _ in range(rng.randint(40, 120))]
            for j in link_list[s::4]:
                words.insert(rng.randrange(len(words)), f"[{concepts[j]['title']}]({path(j)})")
            sections.append(f"## {HEADINGS[(i + s) % len(HEADINGS)]}\n\n" + " ".join(words).capitalize() + ".")
        relations = "".join(
            f"\n  - {{predicate: {p}, object: {path(j)}}}" for p, j in sorted(c["relations"], key=lambda r: (r[0], r[1]))[:20]
        )
        description = " ".join(rng.choice(vocabulary) for _ in range(10)).capitalize() + "."
        trust = "\nverified: {by: human:gm, at: '2026-09-01T10:00:00Z'}" if i % 5 == 0 else ""
        front = (f"---\ntype: {c['type']}\ntitle: {c['title']}\ndescription: {description}\n"
                 f"tags: [{c['folder']}, {rng.choice(vocabulary)}]{trust}"
                 + (f"\nrelations:{relations}" if relations else "") + "\n---\n")
        target = out / c["folder"] / c["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(front + f"# {c['title']}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")

    lines = ['---\nokf_version: "0.2"\n---\n# Synthetic bundle\n']
    for folder, _, _ in TYPES:
        lines.append(f"* [{folder}]({folder}/)")
        members = sorted((c for c in concepts if c["folder"] == folder), key=lambda c: c["title"])
        (out / folder).mkdir(parents=True, exist_ok=True)
        (out / folder / "index.md").write_text(
            f"# {folder}\n\n" + "\n".join(f"* [{c['title']}]({c['file']})" for c in members) + "\n", encoding="utf-8")
    (out / "index.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 7
    print(generate(int(sys.argv[1]), Path(sys.argv[2]), seed))
