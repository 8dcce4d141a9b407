"""YAML frontmatter without the YAML 1.1 traps.

PyYAML's SafeLoader follows YAML 1.1: `on`, `no` and `yes` become booleans and
`2026-08-09` becomes a `datetime.date`. OKF frontmatter is written by people and
agents who mean the strings they typed (OKF §5: every timestamp is an ISO 8601
string), and a datetime is not even JSON-serialisable — a peer tool silently
dropped concepts over exactly that. So we load with a SafeLoader subclass that
keeps only `true`/`false` as booleans and leaves dates as the text written.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml


class FrontmatterError(ValueError):
    """The frontmatter block exists but is not a usable YAML mapping."""


# libyaml's C parser when PyYAML has it (about ten times faster); the resolvers
# below are Python either way, so both loaders read the same values.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class OKFLoader(_Base):  # type: ignore[misc, valid-type]
    """SafeLoader minus YAML 1.1's surprises.

    Dropped: yes/no/on/off booleans, timestamps, base-60 numbers (`12:30` -> 750)
    and leading-zero octals (`0123` -> 83). Those scalars stay the strings written.
    """


_REPLACED = {
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
}
OKFLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _REPLACED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
OKFLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)
OKFLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
OKFLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
# An explicit `!!timestamp` tag still asks for a datetime; keep it as its text.
OKFLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", OKFLoader.construct_yaml_str
)

MAX_NODES = 50_000
MAX_CHARACTERS = 256 * 1024  # a frontmatter block longer than this is not metadata (OKF §4)

_FENCE = re.compile(r"\A---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """Split a document into (yaml text or None, body, line number where the body starts).

    Frontmatter is a `---` line at the very start and a closing `---` (or `...`)
    line (OKF §4). A document with an opening fence but no closing one has no
    frontmatter: the whole text is body.
    """
    opening = _FENCE.match(text)
    if not opening:
        return None, text, 1
    closing = _CLOSE.search(text, opening.end())
    if not closing:
        return None, text, 1
    yaml_text = text[opening.end() : closing.start()]
    body_start = closing.end()
    if text.startswith("\n", body_start):
        body_start += 1
    elif text.startswith("\r\n", body_start):
        body_start += 2
    return yaml_text, text[body_start:], text.count("\n", 0, body_start) + 1


def parse_frontmatter(yaml_text: str) -> dict[str, Any]:
    """Parse a frontmatter block into a JSON-safe dict, or raise FrontmatterError."""
    if len(yaml_text) > MAX_CHARACTERS:
        raise FrontmatterError(
            f"frontmatter is {len(yaml_text):,} characters, over the {MAX_CHARACTERS:,}-character limit"
        )
    try:
        data = yaml.load(yaml_text, Loader=OKFLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at frontmatter line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise FrontmatterError(f"malformed YAML{where}: {problem}") from None
    except RecursionError:
        raise FrontmatterError("malformed YAML: nested too deeply") from None
    except (ValueError, TypeError) as error:  # a constructor choking on a scalar
        raise FrontmatterError(f"malformed YAML: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError(
            f"frontmatter is a {type(data).__name__}, not a mapping of keys to values"
        )
    try:
        return json_safe(data)
    except RecursionError:
        raise FrontmatterError("frontmatter is nested too deeply") from None


def json_safe(value: Any, budget: list[int] | None = None) -> Any:
    """Make a YAML value JSON-serialisable: string keys, lists for sets, text for the rest.

    YAML aliases can build self-referencing or exponentially large values
    ("billion laughs"); a node budget turns those into a FrontmatterError.
    """
    budget = [MAX_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise FrontmatterError(
            f"frontmatter expands to more than {MAX_NODES:,} values (recursive or repeated YAML aliases?)"
        )
    if isinstance(value, dict):
        return {_key(k): json_safe(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v, budget) for v in value]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # NaN and infinity are not JSON
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return json.dumps(json_safe(key)) if isinstance(key, (list, dict)) else str(key)
