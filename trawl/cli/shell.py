"""``trawl completion SHELL`` and ``trawl manpage``: shell completion and a manual page, both
generated from the parser (:mod:`trawl.cli.args`), so they list every command and flag there is.

Completion scripts come from shtab (static scripts: a tab never starts Python), the manual page
from argparse-manpage; both pinned. Options that name files or directories complete paths.
Neither needs settings, a server or the archive: the dispatcher runs them before loading any.
"""

from __future__ import annotations

import argparse

from trawl import __version__
from trawl.cli.args import EXAMPLES, build_parser

# Options (by dest) and positionals whose values are paths: completed as such.
FILE_DESTS = frozenset({"file", "cookies"})
DIRECTORY_DESTS = frozenset({"dir", "export"})
SUMMARY = "a durable media crawler on Temporal"


def completing_parser() -> argparse.ArgumentParser:
    """The parser, its path arguments marked for shtab."""
    import shtab

    parser = build_parser()

    def mark(part: argparse.ArgumentParser) -> None:
        for action in part._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in dict.fromkeys(action.choices.values()):
                    mark(child)
            elif action.dest in FILE_DESTS:
                action.complete = shtab.FILE  # type: ignore[attr-defined]
            elif action.dest in DIRECTORY_DESTS:
                action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]

    mark(parser)
    return parser


def completion_script(shell: str) -> str:
    import shtab

    return shtab.complete(completing_parser(), shell=shell)


def manual_page() -> str:
    """The roff manual page: every command with its options, then examples."""
    from argparse_manpage.manpage import Manpage

    parser = build_parser()
    parser.epilog = None  # the examples get a section of their own, below
    page = Manpage(parser)
    page.source = f"trawl {__version__}"
    page.manual = "trawl manual"
    page.description = SUMMARY
    lines = EXAMPLES.splitlines()[1:]
    examples = "\n".join(".TP\n.B " + _roff(command) + "\n" + _roff(what)
                         for command, what in (_split(line) for line in lines if line.startswith("  ")))
    page.add_section("examples", "=", examples)
    page.add_section("see also", "=", "docs/commands.md in trawl's source: every command, with an example; "
                                      "\\fBtrawl config\\fR: where the archive, the settings and the logs are.")
    return str(page)


def _roff(text: str) -> str:
    """Plain text as roff: hyphens as minus signs (options), backslashes escaped, and a leading
    dot or quote made text, not a request."""
    text = text.strip().replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def _split(line: str) -> tuple[str, str]:
    """An example's command and what it does (two columns, at least two spaces apart)."""
    command, _, what = line.strip().partition("   ")
    return command, what


def cmd_completion(args: argparse.Namespace) -> int:
    print(completion_script(args.shell), end="")
    return 0


def cmd_manpage(args: argparse.Namespace) -> int:
    print(manual_page(), end="")
    return 0
