"""Frontmatter is read as written: YAML 1.1's surprises are switched off."""

import json

import pytest

from datasette_okf.frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter


def test_yaml_11_traps_stay_strings():
    fm = parse_frontmatter(
        "on: yes\nopen: no\ncountry: NO\nfirst_seen: 2026-08-09\ntime: 12:30\nzip: 01234\n"
        "stale_after: 2026-09-23T00:00:00Z\nflag: true\nother: False\ncount: 42\nratio: 0.5\n"
    )
    assert fm == {
        "on": "yes",
        "open": "no",
        "country": "NO",
        "first_seen": "2026-08-09",
        "time": "12:30",
        "zip": "01234",
        "stale_after": "2026-09-23T00:00:00Z",
        "flag": True,
        "other": False,
        "count": 42,
        "ratio": 0.5,
    }


def test_unquoted_nested_timestamp_is_json_serialisable():
    # Regression: a peer silently dropped this concept (datetime not JSON-serialisable).
    fm = parse_frontmatter("type: Person\ngenerated: {by: human:a, at: 2026-08-09T10:00:00Z}\n")
    assert json.loads(json.dumps(fm))["generated"]["at"] == "2026-08-09T10:00:00Z"


def test_unknown_keys_are_preserved():
    fm = parse_frontmatter("type: Metric\nnot:\n  - {when: x, value: 1}\n")
    assert fm["not"] == [{"when": "x", "value": 1}]


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("type: [unclosed\n", "malformed YAML at frontmatter line"),
        ("- just\n- a list\n", "is a list, not a mapping"),
        ("just a string\n", "is a str, not a mapping"),
        ("a: &x [*x]\n", "nested too deeply"),
        ("? [a, b]\n: c\n", "malformed YAML"),
    ],
)
def test_bad_frontmatter_raises_a_clear_error(yaml_text, message):
    with pytest.raises(FrontmatterError, match=message.replace("[", r"\[")):
        parse_frontmatter(yaml_text)


def test_alias_bomb_is_refused():
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcde", "bcdef"):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(FrontmatterError, match="expands to more than"):
        parse_frontmatter("\n".join(levels))


def test_split_frontmatter_reports_body_line():
    yaml_text, body, line = split_frontmatter("---\ntype: X\ntitle: T\n---\n# Heading\n")
    assert yaml_text == "type: X\ntitle: T\n"
    assert body == "# Heading\n"
    assert line == 5


def test_unclosed_fence_means_no_frontmatter():
    assert split_frontmatter("---\ntype: X\nno closing fence\n") == (None, "---\ntype: X\nno closing fence\n", 1)


def test_empty_frontmatter_is_an_empty_mapping():
    assert parse_frontmatter("") == {}
