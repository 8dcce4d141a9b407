"""The prompt-submit hook: whole words, wrapper markup stripped, always exit 0, fail open."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from datasette_okf.trigger import matches, prompt_text, run, strip_wrappers

KEYWORDS = "# database: /data/campaign.db\n# comment\n\nai\nMira Vell\nParis\nHarbour Council\nft\n"


@pytest.fixture
def keywords(tmp_path):
    path = tmp_path / "wiki-trigger-keywords.txt"
    path.write_text(KEYWORDS)
    return path


def hook(path, payload) -> str:
    return run(str(path), payload if isinstance(payload, str) else json.dumps(payload))


def test_whole_words_only_and_case_insensitive(keywords):
    assert hook(keywords, {"prompt": "Tell me again, how often does it rain?"}) == ""  # ai, ft inside words
    said = hook(keywords, {"prompt": "what did MIRA VELL tell the harbour council about AI?"})
    assert said.startswith("The wiki has notes on Mira Vell, Harbour Council, ai.")
    assert '-d /data/campaign.db' in said and "/-/context_for.json?q=" in said


def test_wrapper_markup_and_timezones_are_stripped_before_matching(keywords):
    wrapped = "<context>\ntimezone: Europe/Paris\nuser: mira\n</context>\nWhat's the weather like?"
    assert hook(keywords, {"prompt": wrapped}) == ""  # Paris only inside the wrapper
    assert strip_wrappers("<system-reminder>Paris</system-reminder>x UTC+02:00 y") .split() == ["x", "y"]
    assert hook(keywords, {"prompt": wrapped + " And Paris?"}).startswith("The wiki has notes on Paris")


@pytest.mark.parametrize("payload, expected", [
    ({"prompt": "a"}, "a"),
    ({"user_prompt": "b"}, "b"),
    ({"message": {"content": "c"}}, "c"),
    ({"message": {"content": [{"type": "text", "text": "d"}]}}, "d"),
    ({"session_id": "x", "input": "e"}, "e"),
    ({"unknown": "f"}, ""),
])
def test_the_prompt_is_found_under_other_field_names(payload, expected):
    assert prompt_text(payload) == expected


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", "null", '{"prompt": 42}', '{"prompt": ""}'])
def test_anything_odd_means_no_nudge(keywords, stdin):
    assert hook(keywords, stdin) == ""


def test_a_missing_keywords_file_means_no_nudge(tmp_path):
    assert hook(tmp_path / "missing.txt", {"prompt": "Mira Vell"}) == ""


def test_multiword_keywords_need_every_word_in_order():
    assert matches("vell mira", ["Mira Vell"]) == []
    assert matches("Mira  Vell's boat", ["Mira Vell"]) == ["Mira Vell"]


@pytest.mark.parametrize("stdin", ['{"prompt": "Mira Vell?"}', "garbage", ""])
def test_the_command_always_exits_0(keywords, stdin):
    for command in ([sys.executable, "-m", "datasette_okf.trigger", str(keywords)],
                    [sys.executable, "-m", "datasette", "okf", "trigger", str(keywords)]):
        result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0
        assert ("Mira Vell" in result.stdout) == ("Mira" in stdin)


def test_the_hook_module_does_not_load_datasette_or_the_models():
    code = ("import sys, datasette_okf.trigger; "
            "print(sorted(m for m in ('datasette', 'onnxruntime', 'llm', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "[]"
