"""Shell completion, the manual page and the examples in ``--help`` (issue 43, point 10): all
generated from the parser, so they cannot miss a command. Real ``trawl`` and real bash and man."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_cli import run, trawl_env
from tests.test_reference import parser_commands
from trawl.cli.args import build_parser

COMMANDS = sorted(parser_commands(build_parser()))


def bash_completes(script: Path, words: list[str]) -> list[str]:
    """What the script offers for the last of ``words`` (a command line being typed), in bash."""
    line = " ".join(words)
    program = (f"source {script}; COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
               f"COMP_LINE={line!r}; COMP_POINT={len(line)}; "
               f"_shtab_trawl trawl {words[-1]!r} {words[-2]!r}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture
def broken_env(tmp_path: Path) -> dict[str, str]:
    """Settings that do not load: completion and the manual page need none."""
    return trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS="nonsense")


def test_bash_completes_commands_flags_choices_and_paths(tmp_path: Path, broken_env: dict[str, str]) -> None:
    made = run(["completion", "bash"], broken_env, tmp_path)
    assert made.returncode == 0, made.stderr
    script = tmp_path / "trawl.bash"
    script.write_text(made.stdout)
    assert bash_completes(script, ["trawl", "cr"]) == ["crawl", "crawls", "crawl-status"]
    assert bash_completes(script, ["trawl", "crawl", "--limit-"]) == ["--limit-rate"]
    assert bash_completes(script, ["trawl", "completion", ""]) == ["bash", "zsh", "fish", "tcsh"]
    assert bash_completes(script, ["trawl", "watch", "pa"]) == ["pause"]
    (tmp_path / "videos-here").mkdir()
    assert bash_completes(script, ["trawl", "export", str(tmp_path / "videos-")]) == [str(tmp_path / "videos-here")]


@pytest.mark.parametrize("shell", ["zsh", "fish", "tcsh"])
def test_every_shells_script_names_every_command(shell: str, tmp_path: Path, broken_env: dict[str, str]) -> None:
    """No zsh or fish here to run them: each script at least offers every command and a flag of each."""
    made = run(["completion", shell], broken_env, tmp_path)
    assert made.returncode == 0, made.stderr
    for command in COMMANDS:
        assert command.split()[-1] in made.stdout, (shell, command)
    assert "limit-rate" in made.stdout and "write-info-json" in made.stdout  # tcsh lists them without "--"


def test_the_manual_page_has_every_command_and_the_examples(tmp_path: Path, broken_env: dict[str, str]) -> None:
    made = run(["manpage"], broken_env, tmp_path)
    assert made.returncode == 0, made.stderr
    roff = made.stdout
    assert roff.startswith('.TH TRAWL "1" ') and ".SH EXAMPLES" in roff
    if shutil.which("man") is None:
        pytest.skip("no man to render the page")
    shown = subprocess.run(["man", "-l", "-"], input=roff, capture_output=True, text=True, timeout=30,
                           env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin", "MAN_KEEP_FORMATTING": "0"})
    assert shown.returncode == 0, shown.stderr
    text = re.sub(".\x08", "", shown.stdout)  # bold and underline as a terminal overstrikes them
    for command in COMMANDS:
        assert f"trawl {command}" in text, command
    assert "trawl -o '%(title)s.%(ext)s' URL" in text and "...and write a copy of it here" in text
    assert "warning:" not in shown.stderr.lower(), shown.stderr


def test_help_shows_examples_as_written(tmp_path: Path) -> None:
    env = trawl_env(tmp_path)
    top = run(["--help"], env, tmp_path).stdout
    examples = top[top.index("examples:"):].splitlines()
    assert examples[1] == "  trawl URL                         crawl a page or a file into the archive"
    assert all(len(line) <= 80 for line in examples), examples
    for command in ("crawl", "status", "export", "completion"):
        shown = run([command, "--help"], env, tmp_path).stdout
        lines = shown[shown.index("examples:"):].splitlines()
        assert lines[1].startswith(f"  trawl {command} ") and all(len(line) <= 80 for line in lines), shown
