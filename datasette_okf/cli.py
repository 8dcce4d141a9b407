"""`datasette okf ...` commands: thin wrappers that print what the core returns."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .store import BuildError, BuildReport, build as build_database


@click.group()
def okf():
    """Index OKF bundles and Obsidian vaults into SQLite, and query them."""


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
def build(bundles: tuple[Path, ...], output: Path | None, prune: bool, strict: bool):
    """Build BUNDLE folders (OKF bundles or Obsidian vaults) into one SQLite file.

    Unchanged input leaves the database untouched; the database is replaced
    only when the whole build succeeded.
    """
    output = output or Path("build") / f"{bundles[0].resolve().name}.db"
    bar = None

    def started(total: int) -> None:
        nonlocal bar
        bar = click.progressbar(length=total, label="Reading bundle files", file=sys.stderr, show_pos=True)
        bar.__enter__()

    def on_file(path: str) -> None:
        if bar is not None:
            bar.update(1)

    try:
        report = build_database(bundles, output, prune=prune, on_file=on_file, on_scanned=started)
    except BuildError as error:
        raise click.ClickException(str(error))
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    click.echo(summary(report))
    if strict and any(b.errors or b.warnings for b in report.bundles):
        sys.exit(1)


def summary(report: BuildReport) -> str:
    """One screen: per bundle, concepts, edges by kind, link problems, issues."""
    lines = []
    for b in report.bundles:
        state = "up to date, file not touched" if b.up_to_date else f"{b.changed} written, {b.unchanged} unchanged"
        lines.append(f"{b.name}: {b.concepts} concepts + {b.index_nodes} index nodes ({state})")
        edges = ", ".join(f"{n} {kind}" for kind, n in b.edges_by_kind.items()) or "none"
        lines.append(f"  edges: {sum(b.edges_by_kind.values())} ({edges})")
        problems = b.link_problems
        lines.append(
            f"  links: {problems.get('dead', 0)} dead, {problems.get('ambiguous', 0)} ambiguous"
            + "".join(f", {n} {p}" for p, n in problems.items() if p not in ("dead", "ambiguous"))
        )
        lines.append(f"  issues: {b.errors} errors, {b.warnings} warnings")
        if b.kept_missing:
            lines.append(f"  {b.kept_missing} concepts no longer on disk were kept (use --prune to remove them)")
        if b.pruned:
            lines.append(f"  pruned {b.pruned} concepts no longer on disk")
    db = report.output
    lines.append(f"{db} in {report.seconds:.2f}s")
    if any(b.errors or b.warnings or b.link_problems for b in report.bundles):
        lines.append("Details: select * from build_issues / link_issues (or browse them in Datasette)")
    return "\n".join(lines)
