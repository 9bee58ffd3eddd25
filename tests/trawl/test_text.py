"""Refused input made safe to show (trawl.text): escaped as repr escapes, cut with its length said."""

from __future__ import annotations

import pytest

from trawl.text import escaped, shown


@pytest.mark.parametrize(("given", "expected"), [
    ("http://a.example/x", "http://a.example/x"),
    ("\x1b[2J\x07", "\\x1b[2J\\x07"),  # terminal escapes, a bell
    ("a\u202ebc", "a\\u202ebc"),  # a right-to-left override
    ("\u2066x\u2069", "\\u2066x\\u2069"),  # bidi isolates
    ("a\tb\nc\rd\x7f", "a\\tb\\nc\\rd\\x7f"),
    ("\udcff", "\\udcff"),  # a lone surrogate (an undecodable byte)
    ("\U000e0001", "\\U000e0001"),  # a tag character
    ("春天 #trawl#", "春天 #trawl#"),  # printable text of any script stays as it is
])
def test_characters_a_terminal_acts_on_are_escaped(given: str, expected: str) -> None:
    assert shown(given) == escaped(given) == expected


def test_escaping_twice_changes_nothing() -> None:
    once = escaped("http://a/\x1b[31m\u202e\\x")
    assert escaped(once) == once


def test_long_input_is_cut_with_its_length_said() -> None:
    assert shown("x" * 10_000_000) == "x" * 200 + "… (10000000 chars)"
    assert shown("x" * 200) == "x" * 200
    assert shown("abcdef", limit=3) == "abc… (6 chars)"


def test_an_escape_is_kept_whole_or_not_at_all() -> None:
    assert shown("ab\x1bcd", limit=4) == "ab… (5 chars)"
