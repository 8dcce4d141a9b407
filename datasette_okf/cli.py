"""`datasette okf ...` commands: thin wrappers that print what the core returns."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import click
import yaml

from .embed import DEFAULT_MODEL, EmbeddingError
from .evaluate import as_table, load_golden, misses, parse_mode
from .evaluate import evaluate as run_evaluation
from .lint import PROFILES, choose_profile, link_problem_words, run_lint
from .options import MODES, BadOption, ContextOptions
from .retrieve import connection, context_for
from .schema import OutdatedDatabase, check_format
from .store import BuildError, BuildRefused, BuildReport, Progress
from .store import build as build_database


def okf_connection(database: Path):
    """A connection to DATABASE, or one line saying it is no datasette-okf database of this format (a file that is
    not SQLite, another SQLite file, an older build), never a traceback."""
    conn = connection(str(database))
    try:
        check_format(conn)
    except OutdatedDatabase as error:
        raise click.ClickException(f"{database}: {error}") from None
    return conn


class Refused(click.ClickException):
    """A request the user must change (another file at -o, a file in use): exit 2, as for a usage error."""

    exit_code = 2


DEFAULTS = ContextOptions()
LINT_ROWS = 20  # rows of each check `lint` prints; a check with more hits gets its counts by folder


@click.group()
def okf():
    """Index OKF bundles and Obsidian vaults into SQLite, and query them."""


class _Bars(Progress):
    """Progress bars on stderr: files read, then chunks embedded (with chunks/s)."""

    def __init__(self) -> None:
        self.bar = None
        self.started = 0.0

    def _open(self, total: int, label: str, **extra) -> None:
        self.close()
        self.bar = click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True, **extra)
        self.bar.__enter__()

    def waiting(self, message: str) -> None:
        click.echo(message, err=True)

    def files(self, total: int) -> None:
        self._open(total, "Reading bundle files")

    def file(self, path: str) -> None:
        self.bar.update(1)

    def embedding(self, total: int, model: str) -> None:
        self.started = time.perf_counter()
        done = [0]

        def rate(_):
            elapsed = time.perf_counter() - self.started
            return f"{done[0] / elapsed:.1f} chunks/s" if elapsed > 0 and done[0] else ""

        self.done = done
        self._open(total, f"Embedding with {model}", item_show_func=rate)

    def embedded(self, count: int) -> None:
        self.done[0] += count
        self.bar.update(count, current_item=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


@okf.command()
@click.argument(
    "bundles", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
    help="Database to write (default: build/<first bundle's folder name>.db)",
)
@click.option("--prune", is_flag=True, help="Remove concepts whose files are gone (only within these bundles)")
@click.option("--strict", is_flag=True, help="Exit 1 if the build reported any error or warning")
@click.option(
    "-m", "--model",
    help=f"llm embedding model id (default: the one the file was built with, else {DEFAULT_MODEL})",
)
@click.option("--no-embed", is_flag=True, help="Build without vectors (chunks are still written)")
@click.option(
    "--link-mentions", is_flag=True,
    help="Also add an edge (kind mention) for each unlinked mention of another concept's title or alias",
)
@click.option(
    "--write-bundle-files", is_flag=True,
    help="Also write timeline.md and wiki-trigger-keywords.txt into each bundle's root",
)
@click.option("--force", is_flag=True, help="Overwrite -o even if it is not a datasette-okf database")
@click.option(
    "--lock-timeout", type=click.FloatRange(min=0), default=60, show_default=True,
    help="Seconds to wait for another build of the same database to finish",
)
@click.option(
    "--embedding-cache", type=click.Path(dir_okay=False, path_type=Path),
    help="Vector cache shared by every build (default: $DATASETTE_OKF_CACHE, else ~/.cache/datasette-okf/vectors.db)",
)
@click.option("--no-embedding-cache", is_flag=True, help="Neither read nor write the shared vector cache")
@click.option(
    "--watch", is_flag=True,
    help="Then keep the database following the folders: rebuild on every change (deleted files are pruned), "
         "vectors computed behind, newest first; Ctrl-C stops",
)
@click.option(
    "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
    help="Batches sent to a remote embedding model at once (an Ollama or OpenAI-compatible server, or a pool of "
         "them behind a load balancer); a failed batch is retried once. The default model ignores it",
)
@click.option("--serve", is_flag=True, help="With --watch: serve the database in Datasette as soon as its text is in")
@click.option("--host", default="127.0.0.1", show_default=True, help="With --serve")
@click.option("--port", default=8001, show_default=True, help="With --serve")
@click.option("--metadata", "metadata", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --serve: Datasette's metadata file")
def build(
    bundles: tuple[Path, ...], output: Path | None, prune: bool, strict: bool, model: str | None, no_embed: bool,
    link_mentions: bool, write_bundle_files: bool, force: bool, lock_timeout: float, embedding_cache: Path | None,
    no_embedding_cache: bool, watch: bool, jobs: int, serve: bool, host: str, port: int, metadata: Path | None,
):
    """Build BUNDLE folders (OKF bundles or Obsidian vaults) into one SQLite file.

    Unchanged input leaves the database untouched; the database is replaced
    only when the whole build succeeded. Only an empty file or a database
    this command built is written to (--force overrides); builds of one
    database wait for each other.
    """
    output = output or Path("build") / f"{bundles[0].resolve().name}.db"
    if embedding_cache and no_embedding_cache:
        raise click.UsageError("--embedding-cache and --no-embedding-cache exclude each other")
    if serve and not watch:
        raise click.UsageError("--serve goes with --watch (to serve a built file: datasette serve FILE)")
    cache = False if no_embedding_cache else embedding_cache or True

    def run_build(progress: Progress) -> BuildReport:
        return build_database(
            bundles, output, prune=prune or watch, embed=not no_embed, model=model, progress=progress,
            link_mentions=link_mentions, force=force, lock_timeout=lock_timeout, derived_files=True,
            into_bundles=[path.resolve().name for path in bundles] if write_bundle_files else [],
            embedding_cache=cache, vectors_behind=watch, jobs=jobs,
        )

    bars = _Bars()
    try:
        report = run_build(bars)
    except BuildRefused as error:
        raise Refused(str(error))
    except (BuildError, EmbeddingError) as error:
        raise click.ClickException(str(error))
    finally:
        bars.close()
    click.echo(summary(report))
    if watch:
        watch_and_serve(bundles, output, lambda: run_build(Progress()), cache, no_embed,
                        (host, port, metadata) if serve else None, report.vectors_pending)
        return
    if report.derived:
        click.echo("derived: " + ", ".join(str(path) for path in report.derived))
    for problem in (report.wal_pending, report.derived_error):
        if problem:
            click.echo(f"Error: {problem}", err=True)
    if report.wal_pending or report.derived_error or (strict and any(b.errors or b.warnings for b in report.bundles)):
        sys.exit(1)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def watch_and_serve(bundles: tuple[Path, ...], output: Path, rebuild, cache, no_embed: bool,
                    serve: tuple[str, int, Path | None] | None, pending: int) -> None:
    """build --watch (and --serve): Datasette on the file as it is, then vectors behind and a rebuild per change."""
    import subprocess

    from .embed import canonical_id, get_model
    from .schema import stored_model
    from .watch import Watcher
    from .web import FOLLOW

    model_id = None if no_embed else canonical_id(stored_model(connection(str(output))))
    server = None
    if serve:
        host, port, metadata = serve
        command = [sys.executable, "-m", "datasette", "serve", str(output), "--host", host, "--port", str(port)]
        server = subprocess.Popen(command + (["--metadata", str(metadata)] if metadata else []),
                                  env={**os.environ, FOLLOW: "1"})  # it prepares again after each rebuild
        click.echo(f"serving http://{host}:{port}/ (ask at http://{host}:{port}/-/context_for)"
                   + (f"; {pending:,} chunks still to embed, answers use the vectors written so far" if pending else ""))
    click.echo(f"watching {', '.join(str(b) for b in bundles)}: every change is rebuilt, deleted files are removed "
               "from the database; Ctrl-C stops")
    watcher = Watcher([Path(b) for b in bundles], output, rebuild, click.echo,
                      get_model(model_id) if model_id else None, model_id, cache, pending)
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it as Ctrl-C does: the server with it
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        click.echo("stopped watching")


@okf.command()
@click.argument("databases", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print the whole JSON response")
@click.option("--mode", type=click.Choice(MODES), default=DEFAULTS.mode, show_default=True)
@click.option("-k", type=int, default=DEFAULTS.k, show_default=True, help="Results per list (and for vector/keyword modes)")
@click.option("--budget", type=int, default=DEFAULTS.budget, show_default=True, help="Token budget of the context")
@click.option("--seeds", "max_seeds", type=int, default=DEFAULTS.max_seeds, show_default=True, help="Seeds kept after fusion")
@click.option("--hops", type=int, default=DEFAULTS.hops, show_default=True)
def context(databases: tuple[Path, ...], question: str, as_json: bool, mode: str, k: int, budget: int,
            max_seeds: int, hops: int):
    """Print the context DATABASES give an LLM for QUESTION (several: their notes fused into one budget, each
    naming its database)."""
    try:
        options = ContextOptions(mode=mode, k=k, budget=budget, max_seeds=max_seeds, hops=hops)
        if len(databases) > 1:
            from .across import ask_files

            result = ask_files([str(d) for d in databases], question, options)
        else:
            result = context_for(str(databases[0]), question, options)
    except BadOption as error:
        raise click.BadParameter(str(error), param_hint="--seeds" if error.parameter == "max_seeds" else f"--{error.parameter}")
    except (EmbeddingError, ValueError) as error:
        raise click.ClickException(str(error))
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    click.echo(result["context"])
    click.echo(
        f"\n-- {mode}, intent {result.get('intent') or 'per database'}, {'confident' if result['confident'] else 'NOT confident'}: "
        f"{result['reason']}; {len(result['nodes'])} notes in {result['timings_ms']['total']:.0f} ms",
        err=True,
    )


@okf.command()
@click.argument("database", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("golden", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--modes", default="hybrid,vector:5,vector:10,vector:15,graph-walk", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
@click.option("--by-question", is_flag=True,
              help="Also list every miss: the notes that came instead, and why each came")
def evaluate(database: Path, golden: Path, modes: str, fmt: str, by_question: bool):
    """Run GOLDEN questions against DATABASE in several modes, side by side.

    GOLDEN is a JSON list of {id, tier: lookup|synthesis|temporal|out, question,
    required: [bundle-relative .md paths or concept ids]}. "rejected" is the
    rejection rate for tier out and the false-rejection rate for the others.
    """
    okf_connection(database).close()
    try:
        questions = load_golden(golden)
        for spec in (m.strip() for m in modes.split(",") if m.strip()):
            mode, extra = parse_mode(spec)
            ContextOptions(mode=mode, **extra)  # "vector:0": k out of its bounds, said before any question runs
    except BadOption as error:
        raise click.BadParameter(str(error), param_hint="--modes")
    except ValueError as error:
        raise click.ClickException(str(error))
    report = run_evaluation(str(database), questions, [m.strip() for m in modes.split(",") if m.strip()])
    if fmt == "json":
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(as_table(report, markdown=fmt == "markdown"))
        gate = report["calibration"]
        if gate:
            off = gate["off_topic"]
            click.echo(f"\nGate: vector threshold {gate['vector_threshold']} for {gate['model']}, calibrated at build time on "
                       f"{off['questions']} off-topic questions (their best chunk: median {off['median']}, "
                       f"p95 {off['p95']}, max {off['max']}) over {gate['chunks']:,} chunks")
        if by_question:
            click.echo("\n" + misses(report))


@okf.command()
@click.argument("database", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--profile", type=click.Choice(PROFILES),
              help="okf: the spec's rules (a concept without a type in its frontmatter is an error, OKF §11); "
                   "vault: a plain Obsidian vault's (it is a warning). Default: okf when every bundle's root "
                   "index.md declares okf_version (OKF §12), else vault")
def lint(database: Path, fmt: str, profile: str | None):
    """Run every lint check on DATABASE; exit 1 if a check at error level (under the profile) has hits.

    Counts first (per check, errors first, and per folder where a check has more hits than it shows rows),
    then up to LINT_ROWS rows of each check: a vault's thousands of hits never bury the summary."""
    conn = okf_connection(database)
    chosen = choose_profile(conn, profile)
    results = run_lint(conn, profile=chosen.name)
    if fmt == "json":
        click.echo(json.dumps({"profile": chosen.name, "profile_reason": chosen.reason, "checks": results},
                              indent=2, ensure_ascii=False))
    else:
        click.echo(f"profile: {chosen.name} ({chosen.reason})")
        for check in results:
            mark = "ok " if not check["rows"] else ("ERR" if check["level"] == "error" else "warn")
            click.echo(f"{mark:4} {check['title']}: {check['count']}")
            if check["folders"] and check["count"] > LINT_ROWS:
                width = len(str(max(check["folders"].values())))
                for folder, hits in check["folders"].items():
                    click.echo(f"       {hits:>{width}}  {folder}")
        for check in (c for c in results if c["rows"]):
            click.echo(f"\n{check['title']} ({check['count']}):")
            for row in check["rows"][:LINT_ROWS]:
                click.echo("       " + " | ".join("" if v is None else " ".join(str(v).split()) for v in row))
            if check["count"] > LINT_ROWS:
                click.echo(f"       … and {check['count'] - LINT_ROWS} more (datasette okf lint --format json)")
    if any(c["rows"] and c["level"] == "error" for c in results):
        sys.exit(1)


@okf.command()
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--type-map", "type_map", multiple=True, metavar="FOLDER=Type", help="Type for notes in FOLDER (repeatable)")
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="YAML with type_map: {Folder: Type} and generated_at")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Markdown report (default: OUT/conversion-report.md)")
@click.option("--report-json", type=click.Path(dir_okay=False, path_type=Path), help="Also write the report as JSON")
@click.option("--generated-at", help="generated.at for every note (default: each file's modification time)")
@click.option("--force", is_flag=True, help="Replace OUT if it is not empty")
def convert(vault, out, type_map, config, report_path, report_json, generated_at, force):
    """Convert an Obsidian VAULT into an OKF v0.2 bundle in OUT, with a report of links left as written."""
    from .convert import ConvertError, notes_count, write_report
    from .convert import convert as run_convert

    settings = yaml.safe_load(config.read_text()) if config else {}
    mapping = dict(settings.get("type_map") or {})
    for item in type_map:
        folder, _, type_name = item.partition("=")
        if not folder or not type_name:
            raise click.BadParameter(f"{item!r} is not FOLDER=Type", param_hint="--type-map")
        mapping[folder] = type_name
    started = time.perf_counter()
    try:
        report = run_convert(vault, out, mapping, force=force, generated_at=generated_at or settings.get("generated_at"))
    except ConvertError as error:
        raise click.ClickException(str(error))
    report_path = report_path or out / "conversion-report.md"
    write_report(report, report_path, report_json)
    counts = ", ".join(f"{value} {name.replace('_', ' ')}" for name, value in report.counts.items())
    click.echo(f"{out}: {counts} in {time.perf_counter() - started:.1f}s")
    suggestions = report.type_map_suggestions()
    if suggestions:
        notes = sum(s["notes"] for s in suggestions)
        click.echo(f"{notes_count(notes)} in folders with no type mapping {'was' if notes == 1 else 'were'} typed Note; "
                   "to type them, convert again with (each type guessed from the folder's name):")
        for suggestion in suggestions[:10]:
            click.echo(f"  {notes_count(suggestion['notes']):>10}  {suggestion['option']}")
        if len(suggestions) > 10:
            click.echo(f"  … {len(suggestions) - 10} more in the report")
    if report.type_fallbacks.get(""):
        root = len(report.type_fallbacks[""])
        click.echo(f"{notes_count(root)} at the vault root {'was' if root == 1 else 'were'} typed Note (no folder to map).")
    click.echo(f"Report: {report_path}")


def summary(report: BuildReport) -> str:
    """One screen: per bundle, concepts, edges by kind, link problems, issues."""
    lines = []
    for b in report.bundles:
        untouched = "folded in the write-ahead log an earlier build left" if report.wal_folded else "file not touched"
        state = f"up to date, {untouched}" if b.up_to_date else f"{b.changed} written, {b.unchanged} unchanged"
        lines.append(f"{b.name}: {b.concepts} concepts + {b.index_nodes} index nodes, {b.chunks} chunks ({state})")
        edges = ", ".join(f"{n} {kind}" for kind, n in b.edges_by_kind.items()) or "none"
        lines.append(f"  edges: {sum(b.edges_by_kind.values())} ({edges})")
        problems, words = b.link_problems, link_problem_words()  # the lint checks' titles (lint.LINK_PROBLEMS)
        lines.append(
            "  links: " + ", ".join(f"{problems.get(p, 0)} {w}" for p, w in words.items())
            + "".join(f", {n} {p}" for p, n in problems.items() if p not in words)
        )
        lines.append(f"  issues: {b.errors} errors, {b.warnings} warnings")
        if b.kept_missing:
            lines.append(f"  {b.kept_missing} concepts no longer on disk were kept (use --prune to remove them)")
        if b.pruned:
            lines.append(f"  pruned {b.pruned} concepts no longer on disk")
    e = report.embedding
    if e is not None:
        if e.model_changed_from:
            lines.append(f"embedding model changed from {e.model_changed_from} to {e.model}: every chunk was re-embedded")
        rate = f" ({e.embedded / e.seconds:.1f} chunks/s)" if e.embedded and e.seconds else ""
        lines.append(f"vectors: {e.embedded:,} chunks embedded{f', {e.cached:,} from the cache,' if e.cache else ''} with {e.model} ({e.dimensions}-d) in {e.seconds:.1f}s{rate}")
    if report.vectors_pending:
        lines.append(f"vectors: {report.vectors_pending:,} chunks to embed behind (the file answers meanwhile)")
    lines.append(f"{report.output} in {report.seconds:.2f}s")
    if any(b.errors or b.warnings or b.link_problems for b in report.bundles):
        lines.append("Details: select * from build_issues / link_issues (or browse them in Datasette)")
    return "\n".join(lines)


@okf.command(name="trigger")
@click.argument("keywords_file", type=click.Path(dir_okay=False, path_type=Path))
def trigger_command(keywords_file: Path):
    """Prompt-submit hook: read the harness's JSON on stdin, print a nudge if it names the wiki.

    Always exits 0. For a hook that runs on every prompt prefer `python -m
    datasette_okf.trigger KEYWORDS_FILE`: same code, without Datasette's start-up.
    """
    from .trigger import main as trigger_main

    sys.exit(trigger_main([str(keywords_file)]))


@okf.command(name="file-back")
@click.argument("database", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("bundle", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-q", "--question", required=True, help="The question the answer answers")
@click.option("--answer", "answer_file", type=click.File("r"), default="-", show_default=True,
              help="File holding the answer (- for standard input); [concept/id] citations become links")
@click.option("--title", help="Page title (default: the question)")
@click.option("--by", "model_id", required=True, help="What wrote the answer, for generated.by (a model id)")
def file_back_command(database: Path, bundle: Path, question: str, answer_file, title: str | None, model_id: str):
    """File an answer back into BUNDLE as a new Concept page, list and log it, and rebuild DATABASE."""
    from .fileback import FileBackError, bracketed_ids, file_back

    answer = answer_file.read()
    try:
        page = file_back(database, bundle, question, answer, model_id, bracketed_ids(answer), title=title)
    except (FileBackError, BuildError, EmbeddingError) as error:
        raise click.ClickException(str(error))
    click.echo(f"filed back: {page}")


@okf.command(name="rebuild-candidates")
@click.argument("database", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON")
def rebuild_candidates_command(database: Path, as_json: bool):
    """Concepts derived from references/ that re-running ingest would recreate (docs/design.md §10.4), with what
    deleting each would lose, and the references/ files nothing cites yet. Changes nothing."""
    from .rebuild_candidates import rebuild_candidates

    report = rebuild_candidates(okf_connection(database))
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    click.echo(f"{len(report['candidates'])} rebuild candidates (cite a references/ document):")
    for item in report["candidates"]:
        click.echo(f"  {item['id']}  ({item['type'] or 'no type'}; cites {', '.join(item['references_cited'])})")
        for loss in item["would_lose"]:
            click.echo(f"      would lose: {loss}")
    click.echo(f"\n{len(report['unreviewed_references'])} unreviewed references (no concept cites them; "
               "lint check unreviewed_references):")
    for item in report["unreviewed_references"]:
        click.echo(f"  {item['path']}")
