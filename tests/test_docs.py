"""The docs' shell examples run, and what they show is what trawl prints.

Every fenced block tagged ``sh``/``bash``/``shell``/``console`` in README.md and docs/*.md runs,
unless the line before it is ``<!-- not run: <why> -->``; an untagged block with ``$ `` prompts
must say which it is. The blocks of one page run in order in one shell, in a fresh directory,
against the simulator the page starts itself (the ports a reader would use; Temporal, its UI,
the API and metrics get free ports here, invisibly, so a running `trawl up` is never touched).

In a ``console`` block, ``$ `` lines are commands and the lines after one are what it prints:
each shown line must match a line it printed (in any order: crawls print results as they
finish), ``...`` inside a line standing for anything and runs of spaces for any spacing; a
line that is only ``...`` shows that lines were left out. Every command must exit 0.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import new_postgres_database, postgres_mode
from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = {"sh", "bash", "shell", "console"}
NOT_RUN = re.compile(r"^<!-- not run: .+ -->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
PAGE_TIMEOUT = 420
MARK = "@@docs-test {}@@"


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    text: str
    runs: bool


@dataclass
class Command:
    line: int
    command: str
    shown: list[str] = field(default_factory=list)


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, lang = opening.groups()
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        text = "\n".join(line[len(indent):] for line in lines[i + 1:end])
        found.append(Block(page, i + 1, lang, text, runs=lang in SHELLS and not NOT_RUN.match(before)))
        i = end + 1
    return found


def commands(block: Block) -> list[Command]:
    """A console block's commands, each with the output shown under it; a sh block is one command."""
    if block.lang != "console":
        return [Command(block.line, block.text)]
    found: list[Command] = []
    pending = ""
    for offset, line in enumerate(block.text.splitlines(), 1):
        if pending or line.startswith("$ "):
            pending += (line[2:] if not pending else line)
            if pending.endswith("\\"):
                pending = pending[:-1] + "\n"
                continue
            found.append(Command(block.line + offset, pending))
            pending = ""
        elif found:
            found[-1].shown.append(line)
    return found


def _pattern(shown: str) -> re.Pattern[str]:
    parts = [r"\s+".join(re.escape(word) for word in piece.split()) for piece in shown.strip().split("...")]
    return re.compile(r"\s*" + ".*".join(parts) + r"\s*")


def shown_lines_missing(shown: list[str], printed: str) -> list[str]:
    """The shown lines that no printed line matches."""
    printed_lines = printed.splitlines()
    wanted = [line for line in shown if line.strip() and line.strip() != "..."]
    return [line for line in wanted if not any(_pattern(line).fullmatch(p) for p in printed_lines)]


def test_every_shell_example_runs_or_says_why_not() -> None:
    unmarked = []
    for page in PAGES:
        for block in blocks(page):
            prompts = any(line.startswith("$ ") for line in block.text.splitlines())
            if not block.lang and prompts:
                unmarked.append(f"{page.name}:{block.line}: a block with $ prompts is tagged console (or not run)")
            if block.lang == "console" and block.runs and not commands(block):
                unmarked.append(f"{page.name}:{block.line}: a console block without a $ command")
    assert not unmarked, "\n".join(unmarked)


def test_the_shown_output_check_bites() -> None:
    assert shown_lines_missing(["committed  A gull ...  4.0 MiB  ...  http://x/watch/gull"],
                               "committed  A gull, up close    4.0 MiB  19ecdce681c2  http://x/watch/gull") == []
    assert shown_lines_missing(["duplicate  A gull ..."], "committed  A gull, up close") == ["duplicate  A gull ..."]
    assert shown_lines_missing(["...", ""], "") == []


def _environment(home: Path) -> dict[str, str]:
    # The data directory is the default one, under this page's HOME (not the suite's XDG_DATA_HOME).
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_") and k != "XDG_DATA_HOME"}
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}", COLUMNS="200",
               TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{free_port()}", TRAWL_TEMPORAL__UI_PORT=str(free_port()),
               TRAWL_API__PORT=str(free_port()), TRAWL_WORKER__METRICS_PORT=str(free_port()))
    if postgres_mode():
        env["TRAWL_CATALOG__URL"] = new_postgres_database()
    return env


def _script(runnable: list[Block]) -> tuple[str, list[Command]]:
    steps: list[Command] = [c for block in runnable for c in commands(block)]
    lines = []
    for index, step in enumerate(steps):
        # A newline first: output without one (curl's) must not swallow the marker.
        lines += [f"printf '\\n%s\\n' '{MARK.format(index)}'", step.command,
                  f"status=$?; [ $status -eq 0 ] || {{ printf '\\n%s %s\\n' '{MARK.format('failed')}' $status; exit 1; }}"]
    return "\n".join(lines) + "\n", steps


def _background_logs(home: Path) -> str:
    """The last lines of what the page's background commands wrote (``trawl up > up.log``...): a
    server that never came up says why there."""
    shown = ""
    for path in sorted(home.glob("*.log")):
        shown += f"\n--- {path.name} (last lines) ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-30:])
    return shown


def _stop(proc: subprocess.Popen[str]) -> None:
    """End the page's shell and whatever it left in the background (a simulator, `trawl up`)."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


@pytest.mark.timeout(PAGE_TIMEOUT + 60)
@pytest.mark.parametrize("page", [p for p in PAGES if any(b.runs for b in blocks(p))], ids=lambda p: p.name)
def test_the_examples_of_a_page_run_and_print_what_they_show(page: Path, tmp_path: Path) -> None:
    script, steps = _script([b for b in blocks(page) if b.runs])
    (tmp_path / "docs-example.sh").write_text(script)
    log = tmp_path / "docs-example.out"
    # Output to a file, not a pipe: what a page leaves in the background keeps a pipe open.
    with open(log, "w") as out:
        proc = subprocess.Popen(["bash", str(tmp_path / "docs-example.sh")], cwd=tmp_path,
                                env=_environment(tmp_path), stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            proc.wait(timeout=PAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            _stop(proc)
            pytest.fail(f"{page.name}: the examples did not finish in {PAGE_TIMEOUT} s:\n{log.read_text()[-4000:]}"
                        + _background_logs(tmp_path))
        finally:
            _stop(proc)
    printed = log.read_text()
    outputs = re.split(r"^@@docs-test (\d+|failed)@@.*$\n?", printed, flags=re.M)
    by_step = {int(outputs[i]): outputs[i + 1] for i in range(1, len(outputs) - 1, 2) if outputs[i].isdigit()}
    failed = "@@docs-test failed@@" in printed
    last = max(by_step, default=0)
    assert not failed, (f"{page.name}:{steps[last].line}: `{steps[last].command}` failed:\n"
                        f"{by_step.get(last, printed)[-3000:]}" + _background_logs(tmp_path))
    for index, step in enumerate(steps):
        missing = shown_lines_missing(step.shown, by_step.get(index, ""))
        assert not missing, (f"{page.name}:{step.line}: `{step.command}` did not print\n  " + "\n  ".join(missing)
                             + f"\nit printed:\n{by_step.get(index, '')[-3000:]}")
