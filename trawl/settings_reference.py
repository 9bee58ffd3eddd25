"""Write docs/settings.md, the reference of every setting, from the settings model itself.

``python -m trawl.settings_reference > docs/settings.md`` regenerates the page;
``python -m trawl.settings_reference --check docs/settings.md`` exits 1 when the page differs.
Each setting's row gives its TOML key, its environment variable, its default (the model's, as it
would be written in ``trawl.toml``) and its meaning: the field's ``description=`` when it has one,
else the comment beside it in the source (the lines just above the field, and a comment at the
end of its line), found in the class that declares the field or the nearest base that does.
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import re
import sys
import textwrap
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from trawl.settings import Settings
from trawl.sizes import parse_size

PAGE = "docs/settings.md"
_NOT_MEANINGS = re.compile(r"^(type: ignore|noqa|pragma)\b")


@dataclass(frozen=True)
class Row:
    """One setting: where it lives in ``trawl.toml`` and the environment, its default, its meaning."""

    table: str  # the TOML table, "" for the top level, "[[sources]]" for a sources entry
    name: str
    env: str
    default: str
    meaning: str

    @property
    def path(self) -> str:
        """The dotted name error messages use (``net.allow_private``, ``sources.name``)."""
        table = self.table.strip("[]")
        return f"{table}.{self.name}" if table else self.name


@cache
def _comments(cls: type) -> dict[str, str]:
    """The comments beside each annotated field in ``cls``'s own body, keyed by field name."""
    try:
        lines, _ = inspect.getsourcelines(cls)
    except (OSError, TypeError):  # made by create_model: its fields are sections, described by theirs
        return {}
    source = textwrap.dedent("".join(lines))
    comment_at: dict[int, tuple[int, str]] = {}  # line -> (column, text)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comment_at[token.start[0]] = (token.start[1], token.string.lstrip("#").strip())
    text_lines = source.splitlines()
    found: dict[str, str] = {}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    for node in body.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above: list[str] = []
        line = node.lineno - 1
        while line >= 1 and text_lines[line - 1].lstrip().startswith("#"):
            above.insert(0, comment_at[line][1])
            line -= 1
        last = node.end_lineno or node.lineno
        column, beside = comment_at.get(last, (0, ""))
        if not text_lines[last - 1][:column].strip():  # a comment line of its own, not beside code
            beside = ""
        parts = [part for part in (" ".join(above), beside) if part and not _NOT_MEANINGS.match(part)]
        found[node.target.id] = " ".join(parts)
    return found


def meaning(model: type[BaseModel], name: str) -> str:
    """The field's description, else its comment in the nearest class of ``model``'s MRO declaring it."""
    info = model.model_fields[name]
    text = info.description or ""
    for cls in model.__mro__ if not text else ():
        if name in getattr(cls, "__annotations__", {}) and _comments(cls).get(name):
            text = _comments(cls)[name]
            break
    if text and text[-1] not in ".)":
        text += "."
    choices = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
    if choices:
        text += (" " if text else "") + "One of " + ", ".join(f"`{choice}`" for choice in choices) + "."
    return text


def _is_size(info: FieldInfo) -> bool:
    return any(getattr(meta, "func", None) is parse_size for meta in info.metadata)


def _duration(value: timedelta) -> str:
    seconds = value.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds * 1000)}ms" if seconds else "0s"


def _size(value: int) -> str:
    for unit, size in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)


def toml_value(value: Any, info: FieldInfo) -> str:
    """``value`` as it would be written in ``trawl.toml`` (sizes and durations with units)."""
    if value is None:
        return "(none)"
    if isinstance(value, timedelta):
        return json.dumps(_duration(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and _is_size(info):
        return json.dumps(_size(value)) if value else "0"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v, info)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v, info) for v in value) + "]"
    return json.dumps(str(value))


def _is_section(value: Any) -> bool:
    return isinstance(value, BaseModel)


def rows(model: type[BaseModel] = Settings) -> Iterator[Row]:
    """Every setting of ``model``, sections depth first, in declaration order."""
    yield from _rows(model, _defaults(model), (), "")


def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    # Field defaults, not Settings(): that would read this machine's trawl.toml and environment.
    return {name: info.get_default(call_default_factory=True) for name, info in model.model_fields.items()}


def _rows(model: type[BaseModel], values: dict[str, Any], path: tuple[str, ...], table: str) -> Iterator[Row]:
    scalars = []
    sections = []
    for name, info in model.model_fields.items():
        value = values[name]
        if _is_section(value):
            sections.append((name, value))
        elif name == "sources" and not path:
            continue  # below, as [[sources]]
        else:
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            shown = str(extra["shown_default"]) if "shown_default" in extra else toml_value(value, info)
            scalars.append(Row(table, name, "TRAWL_" + "__".join((*path, name)).upper(), shown, meaning(model, name)))
    yield from scalars
    for name, value in sections:
        inner = (*path, name)
        yield from _rows(type(value), dict(value), inner, "[" + ".".join(inner) + "]")
    if not path and "sources" in model.model_fields:
        entry = model.model_fields["sources"].annotation.__args__[0]  # list[SourceSettings]
        for name, info in entry.model_fields.items():
            default = "(required)" if info.is_required() else toml_value(info.get_default(), info)
            yield Row("[[sources]]", name, "TRAWL_SOURCES", default, meaning(entry, name))


def _cell(text: str) -> str:
    """Text for a table cell: HTML-like and table characters escaped outside `code` spans."""
    pieces = re.split(r"(`[^`]*`)", text)
    out = []
    for i, piece in enumerate(pieces):
        if i % 2:
            out.append(piece.replace("|", "\\|"))
        else:
            out.append(piece.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                       .replace("|", "\\|").replace("*", "\\*").replace("[", "\\[").replace("]", "\\]"))
    return "".join(out)


INTRO = """\
# Settings reference

<!-- Generated by `python -m trawl.settings_reference > docs/settings.md` from trawl/settings.py
     (and each platform's settings model); tests/test_reference.py fails when this page differs. -->

Every setting trawl reads, generated from the settings model (`trawl/settings.py` and each
platform's settings model) by `python -m trawl.settings_reference > docs/settings.md`; a test
regenerates it and fails when this page differs, so a setting cannot be added without appearing
here. How the files and the environment combine is in [Configuration](configuration.md).

- **TOML key**: the table and the name in `trawl.toml` (`[net]` then `allow_private = true`).
- **Environment variable**: `TRAWL_` then the names joined by `__`, upper case
  (`TRAWL_NET__ALLOW_PRIVATE=true`). A list or a table is given as JSON
  (`TRAWL_NET__ALLOWED_NETWORKS='["10.20.0.0/16"]'`); `[[sources]]` is one variable,
  `TRAWL_SOURCES`, a JSON list of objects with the keys below.
- **Default**: as written in `trawl.toml`; sizes take units (`"10G"`, `"500MiB"`, or a number of
  bytes), durations too (`"500ms"`, `"2s"`, `"5m"`, `"1h"`, `"1d"`, or a number of seconds).
- **Meaning**: the comment beside the setting in the source; empty where the source has none.
"""


def render(model: type[BaseModel] = Settings) -> str:
    out = [INTRO]
    table = None
    for row in rows(model):
        if row.table != table:
            table = row.table
            title = row.table or "Top level"
            out.append(f"\n## {title}\n\n| TOML key | environment variable | default | meaning |\n|---|---|---|---|")
        key = f"`{row.name}`"
        out.append(f"| {key} | `{row.env}` | `{row.default}` | {_cell(row.meaning)} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    page = render()
    if args[:1] == ["--check"]:
        path = Path(args[1] if len(args) > 1 else PAGE)
        if path.read_text(encoding="utf-8") != page:
            print(f"{path} is out of date: run python -m trawl.settings_reference > {path}", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
