"""The reference pages are complete: docs/commands.md names every command the parser declares and
no other, and docs/settings.md is what ``python -m trawl.settings_reference`` generates, with a row
for every field of the settings model."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from pydantic import BaseModel

from trawl.cli.args import build_parser
from trawl.settings import Settings
from trawl.settings_reference import render, rows

REPO = Path(__file__).resolve().parent.parent
COMMANDS_PAGE = REPO / "docs" / "commands.md"
SETTINGS_PAGE = REPO / "docs" / "settings.md"


# --- docs/commands.md and the parser ---------------------------------------------------------

def parser_commands(parser: argparse.ArgumentParser, prefix: str = "") -> set[str]:
    """Every command and subcommand the parser declares: ``crawl``, ``watch add``, ``logs triage``."""
    found: set[str] = set()
    for action in parser._actions:  # argparse offers no public walk of its subparsers
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                path = f"{prefix}{name}"
                inner = parser_commands(sub, path + " ")
                found |= inner or {path}
                if inner:
                    found.add(path)  # a group (``watch``) is a command too
    return found


def page_headings(text: str) -> set[str]:
    """The commands the page's headings name: ``### trawl watch add`` -> ``watch add``."""
    return {m[1].strip() for m in re.finditer(r"^#{2,6} `?trawl ([a-z][a-z -]*?)`?\s*$", text, re.M)}


def page_mentions(text: str) -> set[str]:
    """The commands the page runs or quotes: `trawl X ...` in code, ``$ trawl X``, ``VAR=v trawl X`` lines."""
    blocks = re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S)
    lines = re.findall(r"`(trawl [^`\n]+)`", text) + [line for block in blocks for line in block.splitlines()]
    command = re.compile(r"(?:\$ )?(?:[A-Z_]+=\S+ )*trawl ([a-z][a-z-]*)")
    return {m[1] for line in lines if (m := command.match(line.strip()))}


def missing_and_unknown(text: str, commands: set[str]) -> tuple[list[str], list[str]]:
    """Parser commands without a heading on the page; commands the page names that the parser lacks."""
    leaves = {c for c in commands if not any(other.startswith(c + " ") for other in commands)}
    headings = page_headings(text)
    named = headings | page_mentions(text)
    top = {c.split()[0] for c in commands}
    missing = sorted(leaves - headings)
    unknown = sorted(n for n in named if n not in commands and n.split()[0] not in top)
    unknown += sorted(h for h in headings if h not in commands)
    return missing, unknown


def test_the_parser_walk_finds_every_command() -> None:
    commands = parser_commands(build_parser())
    assert {"crawl", "export", "fsck", "watch", "watch add", "watch remove", "logs triage"} <= commands
    assert len(commands) > 20


def test_commands_page_has_every_command_and_no_other() -> None:
    missing, unknown = missing_and_unknown(COMMANDS_PAGE.read_text(encoding="utf-8"), parser_commands(build_parser()))
    assert missing == [], f"docs/commands.md has no heading (### trawl COMMAND) for {missing}"
    assert unknown == [], f"docs/commands.md names commands the parser does not declare: {unknown}"


def test_every_command_heading_has_an_example() -> None:
    text = COMMANDS_PAGE.read_text(encoding="utf-8")
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    without = [section.splitlines()[0] for section in sections if section.startswith("trawl ")
               and not any(re.search(rf"\b{re.escape(section.splitlines()[0])}\b", block)
                           for block in re.findall(r"^```\w*\n(.*?)^```", section, re.M | re.S))]
    assert without == [], f"sections of docs/commands.md without an example of their command: {without}"


def test_the_commands_check_bites() -> None:
    commands = {"crawl", "export", "watch", "watch add", "watch list"}
    page = "### trawl crawl\n```sh\ntrawl crawl URL\n```\n### trawl watch add\n### trawl export\n"
    assert missing_and_unknown(page, commands) == (["watch list"], [])
    page += "### trawl watch list\nRun `trawl expor DIR` or `trawl frobnicate`.\n### trawl watch nap\n"
    assert missing_and_unknown(page, commands) == ([], ["expor", "frobnicate", "watch nap"])
    # And on the real page: without export's section, export is missing.
    real = COMMANDS_PAGE.read_text(encoding="utf-8")
    cut = re.sub(r"^### trawl export\n", "### Export\n", real, flags=re.M)
    assert missing_and_unknown(cut, parser_commands(build_parser()))[0] == ["export"]


# --- docs/settings.md and the settings model -------------------------------------------------

def model_fields(model: type[BaseModel], path: tuple[str, ...] = ()) -> set[str]:
    """Every leaf setting's dotted name, walking section models (``[[sources]]`` as ``sources.*``)."""
    found: set[str] = set()
    for name, info in model.model_fields.items():
        default = info.get_default(call_default_factory=True) if not info.is_required() else None
        if isinstance(default, BaseModel):
            found |= model_fields(type(default), (*path, name))
        elif name == "sources" and not path:
            entry = info.annotation.__args__[0]
            found |= {f"sources.{field}" for field in entry.model_fields}
        else:
            found.add(".".join((*path, name)))
    return found


def test_settings_page_is_generated_from_the_model() -> None:
    assert SETTINGS_PAGE.read_text(encoding="utf-8") == render(), (
        "docs/settings.md differs from the settings model: run python -m trawl.settings_reference > docs/settings.md")


def test_every_setting_has_a_row_on_the_page() -> None:
    fields = model_fields(Settings)
    assert {"data_dir", "net.allow_private", "retry.fetch.initial_interval", "platforms.bilibili.quality",
            "platforms.generic.requests_per_second", "sources.kind", "export.template"} <= fields
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    documented = {row.path for row in rows()}
    assert sorted(fields - documented) == []
    missing = [row.path for row in rows() if f"| `{row.name}` | `{row.env}` |" not in page]
    assert missing == [], f"docs/settings.md has no row for {missing}"


def test_every_setting_has_a_meaning() -> None:
    assert [row.path for row in rows() if not row.meaning] == []


def test_the_settings_check_bites() -> None:
    class Extra(BaseModel):
        added_later: int = 3  # a new setting

    extended = type("Extended", (Settings,), {"__annotations__": {"extra": Extra}, "extra": Extra()})
    assert "extra.added_later" in model_fields(extended) - {row.path for row in rows()}
    assert render(extended) != SETTINGS_PAGE.read_text(encoding="utf-8")
    assert any(row.path == "extra.added_later" and row.meaning == "a new setting." and
               row.env == "TRAWL_EXTRA__ADDED_LATER" for row in rows(extended))
