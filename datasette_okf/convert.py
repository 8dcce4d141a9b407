"""Obsidian vault -> OKF v0.2 bundle, with a report of every link that could not be converted honestly.

The vault is only read. Links are resolved by the same code the build uses
(bundle.parse_bundle), so the report's dead and ambiguous counts are exactly the
build's link_issues for the vault. A wikilink becomes a relative markdown link
only when it resolves to one note (and, with #Heading, to a heading that
exists); everything else stays as written and is listed.

The converter never changes what a note says: a converted link shows the text
Obsidian showed, frontmatter properties stay as written (the build turns their
wikilinks into `property` edges), and a frontmatter block that does not parse is
kept verbatim in the body.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
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
from .folder_types import DEFAULT_TYPES, FALLBACK_TYPE, folder_key, folder_name, type_for
from .frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter
from .links import wikilink_spans
from .markdown import decode, shown_text, slug

RESERVED_RENAMES = {"index.md": "index-note.md", "log.md": "log-note.md"}  # OKF §3.1 names, and what a note so named becomes


@dataclass
class Problem:
    file: str
    line: int | None
    target: str
    problem: str
    candidates: list[str] = field(default_factory=list)


UNPARSED_HEADING = "## Original frontmatter (did not parse)"


@dataclass
class Report:
    vault: str
    out: str
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    type_fallbacks: dict[str, list[str]] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)
    unparsed_frontmatter: dict[str, str] = field(default_factory=dict)  # path -> why it did not parse

    def type_map_suggestions(self) -> list[dict[str, Any]]:
        """One `--type-map` option per folder name that fell back to `Note`, most notes first.

        A name maps every folder so called (type_for), so folders of one name share a line.
        Notes at the vault root have no folder to map and get no line.
        """
        groups: dict[str, dict[str, Any]] = {}
        for folder, notes in self.type_fallbacks.items():
            if not folder:
                continue
            name = folder_name(posixpath.basename(folder))
            group = groups.setdefault(folder_key(name), {"folder": name, "notes": 0, "folders": []})
            group["notes"] += len(notes)
            group["folders"].append(folder)
        suggestions = []
        for group in sorted(groups.values(), key=lambda g: (-g["notes"], g["folder"].casefold())):
            type_name = suggested_type(group["folder"])
            suggestions.append({"option": type_map_option(group["folder"], type_name), "type": type_name,
                                **group, "folders": sorted(group["folders"])})
        return suggestions

    def as_json(self) -> dict[str, Any]:
        return {
            "vault": self.vault, "out": self.out, "counts": self.counts,
            "problems": [p.__dict__ for p in self.problems],
            "type_fallbacks": self.type_fallbacks, "type_map_suggestions": self.type_map_suggestions(),
            "renamed": self.renamed, "unparsed_frontmatter": self.unparsed_frontmatter,
        }

    def as_markdown(self) -> str:
        """The report as an OKF concept of its own, so the bundle it sits in stays conformant."""
        lines = ["---", "type: Conversion Report", f"title: Conversion report for {Path(self.vault).name}",
                 (f"description: Links the converter left as written, and why ({self.counts.get('dead', 0)} dead, "
                  f"{self.counts.get('ambiguous', 0)} ambiguous)."), "---", "",
                 f"# Conversion report: {self.vault} -> {self.out}", "", "## Counts", ""]
        lines += [f"- {name}: {value}" for name, value in self.counts.items()]
        if self.type_fallbacks:
            notes = sum(len(n) for n in self.type_fallbacks.values())
            lines += ["", f"## Folders with no type mapping (type `{FALLBACK_TYPE}` used)", "",
                      (f"{notes_count(notes)} in {len(self.type_fallbacks)} folders got the fallback type `{FALLBACK_TYPE}`. "
                       "To type them, convert again with these options; each type is a guess from the folder's "
                       "name, so edit it as you like. A name maps every folder so called and the unmapped folders "
                       "below it (the nearest mapped folder wins), so one line for a parent folder can stand for "
                       "several below it."), ""]
            for s in self.type_map_suggestions():
                folders = ", ".join(f"`{f}`" for f in s["folders"])
                lines.append(f"- {notes_count(s['notes'])}: `{s['option']}` ({folders})")
            root = self.type_fallbacks.get("")
            if root:
                lines.append(f"- {notes_count(len(root))} at the vault root, which has no folder name to map: give them a "
                             f"`type:` in their frontmatter ({', '.join(f'`{p}`' for p in sorted(root))})")
        if self.renamed:
            lines += ["", "## Renamed (OKF reserves index.md and log.md)", ""]
            lines += [f"- `{old}` -> `{new}`" for old, new in sorted(self.renamed.items())]
        if self.unparsed_frontmatter:
            lines += ["", "## Frontmatter that does not parse", "",
                      ("Each of these notes got a new frontmatter (type from its folder, title from its file name, "
                       "the build's description); its original block is kept verbatim at the top of the body, in a "
                       f"`yaml` code block under `{UNPARSED_HEADING}`, so nothing it said is lost. Fix the YAML in "
                       "the vault and convert again to get its properties back."), ""]
            lines += [f"- `{path}`: {why}" for path, why in sorted(self.unparsed_frontmatter.items())]
        lines += ["", "## Links left as written", "", "| file | line | target | problem | candidates |", "|---|---|---|---|---|"]
        for p in self.problems:
            lines.append(f"| {p.file} | {p.line or ''} | `{p.target}` | {p.problem} | {', '.join(p.candidates)} |")
        return "\n".join(lines) + "\n"


class ConvertError(Exception):
    pass


def notes_count(n: int) -> str:
    return f"{n} note" if n == 1 else f"{n} notes"


_UNCHANGED_PLURALS = ("ss", "us", "is", "series", "species", "news")


def suggested_type(folder: str) -> str:
    """A type name for a folder of notes: its last word made singular, simply.

    "NPCs" -> "NPC", "Factions" -> "Faction", "Galaxies" -> "Galaxy", "Reaches" -> "Reach",
    "Classes" -> "Class"; "Misc", "Lore", "Status" and "Series" stay as they are.
    """
    name = folder_name(folder)
    head, _, word = name.rpartition(" ")
    lower = word.casefold()
    if lower.endswith(_UNCHANGED_PLURALS) or len(word) < 3:
        singular = word
    elif lower.endswith("ies"):
        singular = word[:-3] + ("Y" if word[-3:].isupper() else "y")
    elif lower.endswith(("ches", "shes", "sses", "xes", "zes")):
        singular = word[:-2]
    elif lower.endswith("s"):
        singular = word[:-1]
    else:
        singular = word
    return f"{head} {singular}" if head else singular


def type_map_option(folder: str, type_name: str) -> str:
    """`--type-map "Folder=Type"`, quoted so that it pastes into a shell as one argument."""
    value = f"{folder}={type_name}"
    quoted = f'"{value}"' if not re.search(r'["$`\\!]', value) else shlex.quote(value)
    return f"--type-map {quoted}"


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
    types = {**DEFAULT_TYPES, **{folder_key(k): v for k, v in (type_map or {}).items()}}

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
    concepts = {c.path: c for c in bundle.concepts}
    path_of = {c.id: c.path for c in bundle.concepts}
    headings: dict[str, set[str]] = defaultdict(set)
    for heading in bundle.headings:
        headings[path_of[heading.concept_id]].add(heading.slug)

    counts = Counter()
    descriptions: dict[str, tuple[str, str | None]] = {}
    for source in scanned.files:
        if not source.readable:
            continue
        target = out / moved(source.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text, _ = decode(source.read())  # as the build reads it; written back as UTF-8
        yaml_text, body, body_line = split_frontmatter(text)
        unparsed = None
        try:
            fm = parse_frontmatter(yaml_text) if yaml_text is not None else {}
        except FrontmatterError as error:
            # Written afresh (a concept needs a type, OKF §4.1, §11); the block itself is kept below.
            fm, unparsed = {}, yaml_text
            report.unparsed_frontmatter[source.path] = str(error)
        stem = posixpath.basename(source.path)[:-3]
        if not fm.get("type"):
            fm_type, fallback = type_for(source.path, types)
            fm = {"type": fm_type, **fm}
            if fallback is not None:
                report.type_fallbacks.setdefault(fallback, []).append(source.path)
                counts["type_fallbacks"] += 1
        fm.setdefault("title", stem)  # OKF §4.1: title and description are recommended
        concept = concepts.get(source.path)
        if not fm.get("description") and concept is not None and concept.description and (
            getattr(concept, "description_source", None) != "folder"
        ):
            # The build's description (OKF §4.1: recommended), so the converted bundle reads as the vault did; not
            # one the build made up from the note's folder, which names its own guess at the type: the build of
            # the converted bundle makes that again, from the type written here.
            fm["description"] = concept.description
        if "generated" not in fm:  # OKF §5.2
            mtime = datetime.fromtimestamp((vault / source.path).stat().st_mtime, UTC)
            fm["generated"] = {"by": f"datasette-okf/{__version__}",
                               "at": generated_at or mtime.isoformat(timespec="seconds")}
        # Properties stay as written, a vault's own `relations` included, and none are made from them: the
        # build reads their wikilinks as `property` edges (a link's kind is its context, OKF §6.1). `relations`
        # is not OKF core (an extra key, §4.1) but the graph-wiki convention (seed 003 §4.3), whose hard rule
        # is to assert both directions in one pass (§7.1; the asymmetric-relations lint, §7.3): one made here
        # per property would be one-way (6,292 lint warnings on the Thellade vault).
        new_body, converted, embeds, missing, via_alias = _rewrite_body(body, body_line, source.path, index, headings, moved)
        counts["links_converted"] += converted
        counts["alias_links"] += via_alias
        counts["embeds_left"] += embeds
        report.problems.extend(missing)
        counts["missing_heading"] += len(missing)
        if unparsed is not None:
            new_body = _original_frontmatter(unparsed) + new_body
        front = yaml.dump(fm, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1000)
        target.write_text(f"---\n{front}---\n{new_body}", encoding="utf-8")
        descriptions[moved(source.path)] = (fm.get("title") or stem, fm.get("description"))
        counts["notes"] += 1
    for path in scanned.other_files:
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vault / path, out / path)
    _write_indexes(out, descriptions)

    # named as the build summary and the lint checks name them (lint.LINK_PROBLEMS)
    for problem, name in (("dead", "dead_note_links"), ("missing-file", "missing_attachments"), ("ambiguous", "ambiguous_links")):
        counts[name] = sum(1 for p in report.problems if p.problem == problem)
    counts["unparsed_frontmatter"] = len(report.unparsed_frontmatter)
    report.counts = {k: counts.get(k, 0) for k in
                     ("notes", "links_converted", "alias_links", "dead_note_links", "missing_attachments",
                      "ambiguous_links", "missing_heading", "embeds_left", "type_fallbacks", "unparsed_frontmatter")}
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
    """Body wikilinks that resolve to one note (and heading) become relative markdown links
    whose text is what Obsidian showed for them (shown_text)."""
    out, last, converted, embeds, missing, via_alias = [], 0, 0, 0, [], 0
    for start, end, link in wikilink_spans(body):
        if link.kind == "embed":
            embeds += 1
            continue
        resolution = index.resolve_wikilink(source, link.target)
        shown = shown_text(body[start + 2:end - 2]).replace("[", "\\[").replace("]", "\\]")
        replacement = None
        if resolution.status == "self" and resolution.anchor:
            if slug(resolution.anchor) in headings.get(source, set()):
                replacement = f"[{shown}](#{slug(resolution.anchor)})"
        elif resolution.status in ("note", "file"):
            anchor = None
            if resolution.anchor:
                if resolution.anchor.startswith("^") or slug(resolution.anchor) not in headings.get(resolution.path, set()):
                    line = body_line + body.count("\n", 0, start)
                    missing.append(Problem(source, line, link.target, "missing-heading", [resolution.path]))
                    continue
                anchor = slug(resolution.anchor)
            if resolution.status == "note" and _through_alias(link.target, resolution.path):
                via_alias += 1
            replacement = f"[{shown}]({_link_to(moved(source), moved(resolution.path), anchor)})"
        if replacement is not None:
            out.append(body[last:start])
            out.append(replacement)
            last = end
            converted += 1
    out.append(body[last:])
    return "".join(out), converted, embeds, missing, via_alias


def _through_alias(target: str, path: str) -> bool:
    """Whether `[[target]]` reached `path` by one of its aliases rather than by its path or name
    (PathIndex.resolve_wikilink: every step before the alias one matches the path's end)."""
    name = target.partition("#")[0].strip().replace("\\", "/").lstrip("/").casefold()
    wanted = name.removesuffix(".md") + ".md"
    path = path.casefold()
    return path != wanted and not path.endswith("/" + wanted)


def _original_frontmatter(yaml_text: str) -> str:
    """The frontmatter block that did not parse, verbatim in a fence longer than any inside it."""
    longest = max((len(run) for run in re.findall(r"`{3,}", yaml_text)), default=2)
    fence = "`" * (longest + 1)
    block = yaml_text if yaml_text.endswith("\n") else yaml_text + "\n"
    return f"{UNPARSED_HEADING}\n\n{fence}yaml\n{block}{fence}\n\n"


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
