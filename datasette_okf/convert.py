"""Obsidian vault -> OKF v0.2 bundle, with a report of every link that could not be converted honestly.

The vault is only read. Links are resolved by the same code the build uses
(bundle.parse_bundle), so the report's dead and ambiguous counts are exactly the
build's link_issues for the vault. A wikilink becomes a relative markdown link
only when it resolves to one note (and, with #Heading, to a heading that
exists); everything else stays as written and is listed.
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from . import __version__
from .bundle import parse_bundle, scan_bundle
from .frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter
from .links import find_wikilinks, wikilink_spans
from .markdown import decode, mask_code, slug

DEFAULT_TYPES = {
    "people": "Person", "person": "Person", "npcs": "Person", "npc": "Person", "characters": "Person",
    "pcs": "Person", "players": "Person",
    "places": "Place", "locations": "Place", "settlements": "Place", "regions": "Place", "districts": "Place",
    "points of interest": "Place", "cities": "Place",
    "sessions": "Session Log", "session notes": "Session Log", "session logs": "Session Log",
    "bad guys": "Antagonist", "villains": "Antagonist", "antagonists": "Antagonist",
    "organisations": "Organization", "organizations": "Organization", "factions": "Organization",
    "guilds": "Organization",
    "monsters": "Monster", "bestiary": "Monster", "creatures": "Monster",
    "items": "Item", "magic items": "Item", "quests": "Quest", "deities": "Deity", "gods": "Deity",
    "lore": "Lore", "spells": "Spell", "encounters": "Encounter", "religions": "Religion",
}
FALLBACK_TYPE = "Note"
RESERVED_RENAMES = {"index.md": "index-note.md", "log.md": "log-note.md"}  # OKF §3.1 names, and what a note so named becomes


@dataclass
class Problem:
    file: str
    line: int | None
    target: str
    problem: str
    candidates: list[str] = field(default_factory=list)


@dataclass
class Report:
    vault: str
    out: str
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    type_fallbacks: dict[str, list[str]] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)
    unparsed_frontmatter: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "vault": self.vault, "out": self.out, "counts": self.counts,
            "problems": [p.__dict__ for p in self.problems],
            "type_fallbacks": self.type_fallbacks, "renamed": self.renamed,
            "unparsed_frontmatter": self.unparsed_frontmatter,
        }

    def as_markdown(self) -> str:
        """The report as an OKF concept of its own, so the bundle it sits in stays conformant."""
        lines = ["---", "type: Conversion Report", f"title: Conversion report for {Path(self.vault).name}",
                 (f"description: Links the converter left as written, and why ({self.counts.get('dead', 0)} dead, "
                  f"{self.counts.get('ambiguous', 0)} ambiguous)."), "---", "",
                 f"# Conversion report: {self.vault} -> {self.out}", "", "## Counts", ""]
        lines += [f"- {name}: {value}" for name, value in self.counts.items()]
        if self.type_fallbacks:
            lines += ["", f"## Folders with no type mapping (type `{FALLBACK_TYPE}` used)", ""]
            lines += [f"- `{folder or '(vault root)'}`: {len(notes)} notes" for folder, notes in sorted(self.type_fallbacks.items())]
        if self.renamed:
            lines += ["", "## Renamed (OKF reserves index.md and log.md)", ""]
            lines += [f"- `{old}` -> `{new}`" for old, new in sorted(self.renamed.items())]
        if self.unparsed_frontmatter:
            lines += ["", "## Frontmatter that does not parse (copied unchanged)", ""]
            lines += [f"- `{path}`" for path in self.unparsed_frontmatter]
        lines += ["", "## Links left as written", "", "| file | line | target | problem | candidates |", "|---|---|---|---|---|"]
        for p in self.problems:
            lines.append(f"| {p.file} | {p.line or ''} | `{p.target}` | {p.problem} | {', '.join(p.candidates)} |")
        return "\n".join(lines) + "\n"


class ConvertError(Exception):
    pass


def type_for(path: str, type_map: dict[str, str]) -> tuple[str, str | None]:
    """(type, None) from the nearest mapped folder, or (fallback, the note's folder) when none is mapped."""
    folder = posixpath.dirname(path)
    current = folder
    while current:
        name = re.sub(r"^[\d\s._-]+", "", posixpath.basename(current)).strip().casefold()
        if name in type_map:
            return type_map[name], None
        current = posixpath.dirname(current)
    return FALLBACK_TYPE, folder


_SKIP_LINE = re.compile(r"^\s*(#|>|\||!\[|\[\[|[-*+]\s*$|---|```|~~~|%%|<)")
_PLUGIN = re.compile(r"`?(?:INPUT|VIEW|BUTTON)\[[^\]]*\][^`]*`?|`=[^`]*`")


def first_sentence(body: str) -> str | None:
    """The body's first prose sentence: no headings, callouts, tables, embeds, code, comments or plugin markup."""
    for line, outside_code in zip(body.split("\n"), mask_code(body).split("\n")):
        if not outside_code.strip() or _SKIP_LINE.match(line) or _PLUGIN.search(line):
            continue
        text = re.sub(r"\[\[([^\]|]+\|)?([^\]]+)\]\]", r"\2", line)
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
        text = re.sub(r"[*_`]+", "", text).strip().lstrip("-*+ ").strip()
        if len(text.split()) < 3:
            continue
        match = re.match(r"(.+?[.!?])(\s|$)", text)
        sentence = (match.group(1) if match else text).strip()
        return sentence if len(sentence) <= 200 else sentence[:197].rstrip() + "..."
    return None


class _Dumper(yaml.SafeDumper):
    """Keeps keys in the order written and never emits YAML 1.1 booleans or dates for strings."""


_Dumper.add_representer(dict, lambda d, data: d.represent_dict(data.items()))


def convert(
    vault: Path | str,
    out: Path | str,
    type_map: dict[str, str] | None = None,
    force: bool = False,
    generated_at: str | None = None,
) -> Report:
    """Write an OKF bundle for `vault` into `out`; return the report (the vault is never modified)."""
    vault, out = Path(vault).resolve(), Path(out).resolve()
    if not vault.is_dir():
        raise ConvertError(f"{vault} is not a folder")
    if out == vault or vault in out.parents or out in vault.parents:
        raise ConvertError("OUT must be outside the vault, and the vault outside OUT")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise ConvertError(f"{out} is not empty; pass --force to replace what is there")
        shutil.rmtree(out)
    types = {**DEFAULT_TYPES, **{k.casefold(): v for k, v in (type_map or {}).items()}}

    scanned = scan_bundle(vault)
    bundle = parse_bundle(scanned)
    index = bundle.index
    report = Report(str(vault), str(out))
    report.problems = [
        Problem(i.file, i.line, i.target, i.problem, i.candidates) for i in bundle.link_issues
        if i.problem in ("dead", "ambiguous", "missing-file")
    ]
    renamed = {f.path: _renamed(f.path, index.files) for f in scanned.files if posixpath.basename(f.path).lower() in RESERVED_RENAMES}
    report.renamed = renamed
    moved = lambda path: renamed.get(path, path)
    path_of = {c.id: c.path for c in bundle.concepts}
    headings: dict[str, set[str]] = defaultdict(set)
    for heading in bundle.headings:
        headings[path_of[heading.concept_id]].add(heading.slug)

    counts = Counter()
    descriptions: dict[str, tuple[str, str | None]] = {}
    for source in scanned.files:
        if source.data is None:
            continue
        target = out / moved(source.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text, _ = decode(source.data)  # as the build reads it; written back as UTF-8
        yaml_text, body, body_line = split_frontmatter(text)
        try:
            fm = parse_frontmatter(yaml_text) if yaml_text is not None else {}
        except FrontmatterError:
            report.unparsed_frontmatter.append(source.path)
            target.write_text(text, encoding="utf-8")
            counts["notes"] += 1
            continue
        stem = posixpath.basename(source.path)[:-3]
        if not fm.get("type"):
            fm_type, fallback = type_for(source.path, types)
            fm = {"type": fm_type, **fm}
            if fallback is not None:
                report.type_fallbacks.setdefault(fallback, []).append(source.path)
                counts["type_fallbacks"] += 1
        fm.setdefault("title", stem)
        description = first_sentence(body)
        if description and not fm.get("description"):
            fm["description"] = description
        if "generated" not in fm:
            mtime = datetime.fromtimestamp((vault / source.path).stat().st_mtime, UTC)
            fm["generated"] = {"by": f"datasette-okf/{__version__}",
                               "at": generated_at or mtime.isoformat(timespec="seconds")}
        relations = _frontmatter_relations(fm, source.path, index, moved)
        if relations:
            fm["relations"] = list(fm.get("relations") or []) + relations
        new_body, converted, embeds, missing = _rewrite_body(body, body_line, source.path, index, headings, moved)
        counts["links_converted"] += converted
        counts["embeds_left"] += embeds
        report.problems.extend(missing)
        counts["missing_heading"] += len(missing)
        front = yaml.dump(fm, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1000)
        target.write_text(f"---\n{front}---\n{new_body}", encoding="utf-8")
        descriptions[moved(source.path)] = (fm.get("title") or stem, fm.get("description"))
        counts["notes"] += 1
    for path in scanned.other_files:
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vault / path, out / path)
    _write_indexes(out, descriptions)

    counts["dead"] = sum(1 for p in report.problems if p.problem == "dead")
    counts["ambiguous"] = sum(1 for p in report.problems if p.problem == "ambiguous")
    report.counts = {k: counts.get(k, 0) for k in
                     ("notes", "links_converted", "dead", "ambiguous", "missing_heading", "embeds_left", "type_fallbacks")}
    report.problems.sort(key=lambda p: (p.file, p.line or 0, p.target))
    return report


def _renamed(path: str, existing: set[str]) -> str:
    folder, name = posixpath.split(path)
    base = RESERVED_RENAMES[name.lower()][:-3]
    candidate, n = posixpath.join(folder, base + ".md"), 2
    while candidate in existing:
        candidate, n = posixpath.join(folder, f"{base}-{n}.md"), n + 1
    return candidate


def _link_to(source: str, target: str, anchor: str | None) -> str:
    relative = posixpath.relpath(target, posixpath.dirname(source) or ".")
    return quote(relative) + (f"#{anchor}" if anchor else "")


def _rewrite_body(body, body_line, source, index, headings, moved):
    """Body wikilinks that resolve to one note (and heading) become relative markdown links."""
    out, last, converted, embeds, missing = [], 0, 0, 0, []
    for start, end, link in wikilink_spans(body):
        if link.kind == "embed":
            embeds += 1
            continue
        resolution = index.resolve_wikilink(source, link.target)
        replacement = None
        if resolution.status == "self" and resolution.anchor:
            if slug(resolution.anchor) in headings.get(source, set()):
                replacement = f"[{link.text.lstrip('#')}](#{slug(resolution.anchor)})"
        elif resolution.status in ("note", "file"):
            anchor = None
            if resolution.anchor:
                if resolution.anchor.startswith("^") or slug(resolution.anchor) not in headings.get(resolution.path, set()):
                    line = body_line + body.count("\n", 0, start)
                    missing.append(Problem(source, line, link.target, "missing-heading", [resolution.path]))
                    continue
                anchor = slug(resolution.anchor)
            shown = link.text if link.text != link.target else posixpath.basename(resolution.path).rsplit(".", 1)[0]
            shown = shown.replace("[", "\\[").replace("]", "\\]")
            replacement = f"[{shown}]({_link_to(moved(source), moved(resolution.path), anchor)})"
        if replacement is not None:
            out.append(body[last:start])
            out.append(replacement)
            last = end
            converted += 1
    out.append(body[last:])
    return "".join(out), converted, embeds, missing


def _frontmatter_relations(fm, source, index, moved) -> list[dict[str, str]]:
    """Wikilinks in frontmatter values become relations: predicate = the key, object = the bundle path."""
    relations = []

    def walk(key: str, value: Any) -> None:
        if isinstance(value, str):
            for link in find_wikilinks(value):
                resolution = index.resolve_wikilink(source, link.target)
                if resolution.status == "note":
                    relations.append({"predicate": key, "object": "/" + moved(resolution.path)})
        elif isinstance(value, list):
            for item in value:
                walk(key, item)
        elif isinstance(value, dict):
            for sub, item in value.items():
                walk(f"{key}.{sub}", item)

    for key, value in fm.items():
        if key not in ("relations", "superseded_by", "supersedes"):
            walk(key, value)
    return relations


def _write_indexes(out: Path, descriptions: dict[str, tuple[str, str | None]]) -> None:
    """One index.md per folder (OKF §8); the root one carries okf_version (§12)."""
    by_folder: dict[str, list[str]] = defaultdict(list)
    folders: set[str] = {""}
    for path in descriptions:
        folder = posixpath.dirname(path)
        by_folder[folder].append(path)
        while folder:
            folders.add(folder)
            folder = posixpath.dirname(folder)
    for folder in sorted(folders):
        name = posixpath.basename(folder) or out.name
        lines = ['---\nokf_version: "0.2"\n---\n' if not folder else "", f"# {name}\n"]
        subfolders = sorted(f for f in folders if f and posixpath.dirname(f) == folder)
        if subfolders:
            lines.append("\n## Folders\n")
            for sub in subfolders:
                lines.append(f"* [{posixpath.basename(sub)}]({quote(posixpath.basename(sub))}/)")
        notes = sorted(by_folder.get(folder, []), key=str.casefold)
        if notes:
            lines.append("\n## Notes\n")
            for path in notes:
                title, description = descriptions[path]
                entry = f"* [{title}]({quote(posixpath.basename(path))})"
                lines.append(entry + (f" - {description}" if description else ""))
        (out / folder / "index.md").write_text("\n".join(lines).lstrip("\n") + "\n", encoding="utf-8")


def write_report(report: Report, markdown_path: Path | None, json_path: Path | None) -> None:
    if markdown_path:
        markdown_path.parent.mkdir(parents=True, exist_ok=True)
        markdown_path.write_text(report.as_markdown(), encoding="utf-8")
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report.as_json(), indent=2, ensure_ascii=False), encoding="utf-8")
