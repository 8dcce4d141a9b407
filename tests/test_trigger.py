"""The prompt-submit hook: whole words, wrapper markup stripped, always exit 0, fail open."""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.parse

import pytest

from datasette_okf import trigger
from datasette_okf.trigger import WRAPPER_TAGS, matches, prompt_text, run, strip_wrappers

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


# The printed command is quoted for the shell: running it runs `llm` with the question, nothing else.

HOSTILE_PROMPTS = [
    "Tell me about Teodor Vask $(touch PWNED)",
    "Teodor Vask `touch PWNED`",
    "Teodor Vask; touch PWNED",
    "Teodor Vask && touch PWNED",
    "Teodor Vask | touch PWNED",
    "Teodor Vask > PWNED",
    "Teodor Vask\ntouch PWNED\n",
    "Teodor Vask's \"plan\" $(touch PWNED)",
    "Teodor Vask '$(touch PWNED)'",
    "Teodor Vask \"; touch PWNED; echo \"",
    "Teodor Vask \\\"$(touch PWNED)\\\"",
    "Teodor Vask ${IFS}$(touch${IFS}PWNED) $HOME ~ * !!",
    "--url=http://127.0.0.1:9/ -d /tmp/other.db Teodor Vask",  # options smuggled in as the question
    "Teodor Vask " + "x" * 187 + "\\$(touch PWNED)",  # the 200-character cut ends on a backslash
    "Teodor Vask — café, 東京, 🚀",
]
DATABASES = ["/data/campaign.db", "/data/my campaign $(touch PWNED).db", "/data/it's \"here\"; touch PWNED.db", None]


@pytest.fixture
def fake_llm(tmp_path):
    """A directory for PATH whose `llm` only records its arguments (NUL-separated), and that record."""
    bin_dir, argv_file = tmp_path / "bin", tmp_path / "llm-argv"
    bin_dir.mkdir()
    (bin_dir / "llm").write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > {shlex.quote(str(argv_file))}\n")
    (bin_dir / "llm").chmod(0o755)
    return bin_dir, argv_file


def run_the_printed_command(said: str, bin_dir, workdir) -> None:
    """What an agent does with the nudge: run its shell command (everything before the HTTP alternative)."""
    command = said[said.index("llm okf context") : said.rindex("  (or GET ")]
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", command], cwd=workdir, env=env, capture_output=True, timeout=30)


def nudge_for(tmp_path, prompt: str, database: str | None) -> str:
    path = tmp_path / "wiki-trigger-keywords.txt"
    path.write_text((f"# database: {database}\n" if database else "") + "Teodor Vask\n", encoding="utf-8")
    return hook(path, {"prompt": prompt})


def assert_runs_llm_with(said: str, question: str, database: str | None, fake_llm, tmp_path) -> None:
    bin_dir, argv_file = fake_llm
    workdir = tmp_path / "work"
    workdir.mkdir()
    run_the_printed_command(said, bin_dir, workdir)
    assert sorted(p.name for p in workdir.iterdir()) == []  # the payload created nothing
    assert argv_file.read_text(encoding="utf-8").split("\0")[:-1] == [
        "okf", "context", "-d", database or "DATABASE.db", "--", question]
    url = said[said.rindex("(or GET ") + len("(or GET ") : said.rindex(" on its Datasette")]
    assert " " not in url and urllib.parse.parse_qs(urllib.parse.urlsplit(url).query) == {"q": [question]}


@pytest.mark.parametrize("database", DATABASES)
@pytest.mark.parametrize("prompt", HOSTILE_PROMPTS)
def test_the_printed_command_passes_the_question_as_one_argument_and_runs_nothing_else(
        tmp_path, fake_llm, prompt, database):
    said = nudge_for(tmp_path, prompt, database)
    question = " ".join(prompt.split())[:200]  # whitespace normalised, capped
    assert_runs_llm_with(said, question, database, fake_llm, tmp_path)


def test_control_characters_become_spaces_in_the_question(tmp_path, fake_llm):
    """A NUL cannot be passed to a command at all, and escape sequences have no place in a one-line nudge."""
    said = nudge_for(tmp_path, "Teodor Vask\x00$(touch PWNED)\x1b[2J\x07 done\x7f\x9b", "/data/campaign.db")
    assert_runs_llm_with(said, "Teodor Vask $(touch PWNED) [2J done", "/data/campaign.db", fake_llm, tmp_path)


# Wrapper stripping and keyword matching keep today's results, in linear time.

OLD_WRAPPERS = re.compile(r"<(%s)(\s[^>]*)?>.*?</\1\s*>" % "|".join(map(re.escape, WRAPPER_TAGS)), re.DOTALL | re.IGNORECASE)
OLD_TIMEZONES = re.compile(
    r"\b(?:Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)/[A-Za-z_+\-]+(?:/[A-Za-z_\-]+)?"
    r"|\b(?:UTC|GMT)\s*[+\-]\d{1,2}(?::?\d{2})?\b|\btime ?zone\s*[:=]\s*\S+", re.IGNORECASE)


def old_strip_wrappers(text: str) -> str:
    """The first implementation: clear, and quadratic on unclosed tags."""
    return OLD_TIMEZONES.sub(" ", OLD_WRAPPERS.sub(" ", text))


def old_matches(text: str, keywords: list[str]) -> list[str]:
    """The first implementation of matches() in spirit: clear, and quadratic on repeated first words."""
    words = re.findall(r"\w+", text.casefold())
    tokenised = [(re.findall(r"\w+", keyword.casefold()), keyword) for keyword in keywords]
    found: dict[str, None] = {}
    for i in range(len(words)):
        for tokens, keyword in tokenised:
            if tokens and words[i : i + len(tokens)] == tokens:
                found.setdefault(keyword)
    return list(found)


def test_wrapper_stripping_gives_the_old_result_on_random_markup():
    """Tag names as re.I reads them ("\u212a" is the Kelvin sign, "İ" lowercases to two characters). One
    difference, on purpose: "<ſystem>" (long s) is now closed by "</system>", as re.I matches both to "system"."""
    pieces = ["<context>", "</context>", "<CONTEXT a='x'>", "</Context >", "<context", "</context", "<system>",
              "</system>", "<system-reminder>", "</system-reminder\n>", "<env\tb>", "</env>", "<environment>",
              "</environment>", "<contextual>", "</\u212aontext>", "<\u212aontext>", "<SYSTEM-REMİNDER>",
              "</system-reminder>", "<", ">", "</", " ", "\n", "Paris", "x", "=", "'", "Europe/Paris", "UTC+2",
              "gmt -03:30", "timezone: x", "Time zone=", "/", "Aſia/ſ", "ıNDIAN/x", "Etc/GMT+2", "xEurope/Paris",
              "_utc+1", "1GMT-2", "America/Argentina/Salta", "PACIFIC/x/y/z", "3", ":"]
    rng = random.Random(7)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert strip_wrappers(text) == old_strip_wrappers(text), text
    assert strip_wrappers("<ſystem>Paris</system>").split() == []
    assert old_strip_wrappers("<ſystem>Paris</system>").split() == ["<ſystem>Paris</system>"]


def test_keyword_matching_gives_the_old_result_on_random_prompts():
    """Same keywords in the same order: overlapping, repeated, with punctuation, casefolding and odd spaces."""
    vocabulary = ["a", "b", "c", "the", "The", "x-y", "a.b", "_", "(c)", "Straße", "STRASSE", "İ", "ǅ", "é",
                  "\u3000", "a\x1cb", "1"]
    rng = random.Random(11)

    def phrase(most: int) -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, most)))

    for _ in range(3000):
        keywords = [phrase(4) for _ in range(rng.randint(0, 8))]
        text = phrase(12)
        assert matches(text, keywords) == old_matches(text, keywords), (text, keywords)


class TooSlow(BaseException):
    """Raised by the alarm, so a quadratic path fails the test in seconds instead of running for minutes."""


# A linear path on these 1 MB inputs takes a fifth of a second with Python's start-up, a quadratic one minutes (the
# alarm stops it at 10 s). The bound leaves a loaded machine room: at 0.2 s one CI run failed at 0.215 s while a
# benchmark shared the cores. How fast it is, is benchmarks/trigger.py's to say (README, "The prompt hook").
LINEAR = 2.0


def best_of_3(call, give_up_after: float = 10.0) -> float:
    """Seconds taken by the fastest of three calls: the machine is shared, the minimum is the signal."""
    def give_up(signum, frame):
        raise TooSlow(f"still running after {give_up_after} s")

    previous = signal.signal(signal.SIGALRM, give_up)
    try:
        times = []
        for _ in range(3):
            signal.setitimer(signal.ITIMER_REAL, give_up_after)
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
            signal.setitimer(signal.ITIMER_REAL, 0)
        return min(times)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


MB = 1_000_000
# Thousands of titles starting with "The" or "A", titles that are prefixes of others, long runs of one word.
MANY_KEYWORDS = ("# database: /data/campaign.db\nTeodor Vask\nThe\nA\n"
                 + "".join(f"The Name{i}\nA Name{i}\n" for i in range(3000))
                 + "".join("the " * n + "end\n" for n in range(1, 200, 7)))
ADVERSARIAL_PROMPTS = {
    "110,000 unclosed wrapper tags": "<context>" * (MB // 9),
    "unclosed tags with an attribute part and no >": "<context " * (MB // 9),
    "unclosed tags whose only > is at the very end": "<system-reminder a=1 " * (MB // 21) + ">",
    "alternating open and close tags that never pair": "<context><env></system>" * (MB // 23),
    "closing tags before 110,000 opening ones": "</context></env>" + "<context><env>" * (MB // 14),
    "mixed-case opening tags, closed once at the end": "<CoNtExT>" * (MB // 9) + "</context>",
    "90,000 tiny wrapper blocks": "<env></env>" * (MB // 11),
    "closing tags followed by whitespace and no >": ("</context" + " " * 40) * (MB // 49),
    "timezone look-alikes": ("UTC " + " " * 30 + "Europe/" + "a" * 30 + " timezone   ") * (MB // 83),
    "one word that starts thousands of keywords": "the " * (MB // 4),
    "500,000 one-letter words": "a " * (MB // 2 - 10),
    "500,000 one-letter words between non-ASCII spaces": "a\u3000" * (MB // 2 - 10),
    "plain words": " ".join(random.Random(5).choice(["the", "sable", "accord", "teodor", "harbour", "name7", "end"])
                            for _ in range(MB // 6))[:MB],
}


@pytest.fixture
def many_keywords(tmp_path):
    path = tmp_path / "many-keywords.txt"
    path.write_text(MANY_KEYWORDS)
    return path


@pytest.mark.parametrize("name", ADVERSARIAL_PROMPTS)
def test_a_1_mb_adversarial_prompt_is_read_in_linear_time(many_keywords, name):
    stdin = json.dumps({"prompt": ADVERSARIAL_PROMPTS[name] + " Teodor Vask?"})
    assert best_of_3(lambda: run(str(many_keywords), stdin)) < LINEAR
    assert "Teodor Vask" in run(str(many_keywords), stdin)


def nested(depth: int) -> list:
    """["x...", ["x...", [... ["Teodor Vask"]]]]: `depth` lists deep, 2,000 characters at each level."""
    inner: list = ["Teodor Vask"]
    for _ in range(depth):
        inner = ["x" * 2000, inner]
    return inner


@pytest.mark.parametrize("payload", [
    {"prompt": nested(450)},  # deep, yet well within what json.loads accepts
    {"message": {"content": [{"type": "text", "text": "words"}] * 30_000 + [{"type": "text", "text": "Teodor Vask"}]}},
    {"prompt": [[]] * 250_000 + ["Teodor Vask"]},
], ids=["lists 450 deep", "30,000 content parts", "250,000 empty lists"])
def test_a_1_mb_payload_of_any_shape_is_read_in_linear_time(many_keywords, payload):
    stdin = json.dumps(payload)
    assert best_of_3(lambda: run(str(many_keywords), stdin)) < LINEAR
    assert "Teodor Vask" in run(str(many_keywords), stdin)


def test_json_too_deep_to_read_means_no_nudge_quickly(many_keywords):
    too_deep = '{"prompt": ' + "[" * MB + "]" * MB + "}"
    assert best_of_3(lambda: run(str(many_keywords), too_deep)) < LINEAR
    assert run(str(many_keywords), too_deep) == ""


def test_only_the_first_MAX_PROMPT_characters_are_examined(keywords):
    cap = trigger.MAX_PROMPT
    filler = "word " * (cap // 5 + 1)
    assert "Mira Vell" in hook(keywords, {"prompt": filler[: cap - len(" Mira Vell")] + " Mira Vell"})
    assert hook(keywords, {"prompt": filler[:cap] + " Mira Vell"}) == ""
    ten_mb = json.dumps({"prompt": "<context " * (10 * MB // 9) + " Mira Vell"})
    assert best_of_3(lambda: run(str(keywords), ten_mb)) < LINEAR


def test_the_hook_command_on_a_1_mb_adversarial_prompt_runs_in_linear_time(many_keywords):
    """End to end, Python's start-up included (`python -c pass` alone takes 20-30 ms here)."""
    prompt = ADVERSARIAL_PROMPTS["500,000 one-letter words between non-ASCII spaces"] + " Teodor Vask?"
    command = [sys.executable, "-m", "datasette_okf.trigger", str(many_keywords)]
    stdin = json.dumps({"prompt": prompt})
    said = []
    assert best_of_3(lambda: said.append(subprocess.run(command, input=stdin, capture_output=True, text=True,
                                                        timeout=30).stdout)) < LINEAR
    assert all("Teodor Vask" in out for out in said)


def test_the_command_exits_0_when_stdout_cannot_take_the_nudge(keywords):
    command = [sys.executable, "-m", "datasette_okf.trigger", str(keywords)]
    stdin = '{"prompt": "Mira Vell \\u00e9t\\u00e9?"}'
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}  # cannot encode "été"
    assert subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, timeout=60).returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # a harness that stopped listening
    try:
        assert subprocess.run(command, input=stdin, stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60).returncode == 0
    finally:
        os.close(write_end)
