"""Input that trawl refused, made safe to show: escaped and cut.

A refused URL is whatever a file, a request or a person handed in, so it may carry terminal escape
sequences, a bell, a right-to-left override or ten megabytes on one line. :func:`shown` turns it
into text a terminal, a log line or a JSON error can carry as it is: each character that is not
printable (controls, bidi and other format characters, separators other than the space, lone
surrogates) is written as Python's ``repr`` writes it (``\\x1b``, ``\\u202e``), and the result is
cut to ``limit`` characters with the full length said. A backslash stays as it is, so escaping
what was escaped already changes nothing: a refusal passes through a crawl's state, the API and
the CLI, and each may show it.
"""

from __future__ import annotations

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escaped(value: str) -> str:
    """``value`` with each character that is not printable escaped, uncut (for text already bounded,
    such as a URL trawl accepted)."""
    return "".join(_escaped(ch) for ch in value)


def _escaped(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(value: str, limit: int = 200) -> str:
    """``value`` escaped and cut to at most ``limit`` characters, for showing input that was refused.

    Args:
        value: the text as it was given.
        limit: the most characters kept of the escaped form; an escape is kept whole or not at all.

    Returns:
        The escaped text; if it was longer than ``limit``, its first characters followed by
        ``"… (N chars)"``, N being the length of ``value`` as given.
    """
    kept: list[str] = []
    used = 0
    for ch in value:
        piece = _escaped(ch)
        if used + len(piece) > limit:
            return "".join(kept) + f"… ({len(value)} chars)"
        kept.append(piece)
        used += len(piece)
    return "".join(kept)
