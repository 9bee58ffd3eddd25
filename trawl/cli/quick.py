"""Hand a one-shot command to the warm process of its data directory's background server.

When the data directory has one (:mod:`trawl.cli.zygote`, ``<data_dir>/run/commands.sock``),
``trawl crawl URL`` and the other one-shot commands send it their arguments, environment,
working directory and standard streams, and wait for the exit status of the child it forks to
run them; the child reads the same settings and writes to the same terminal. Signals this
process gets (Ctrl-C, SIGTERM, SIGHUP) are forwarded to that child. When there is no such
process, or it refuses (another trawl, say), the command runs here as usual: nothing is lost but
time. Standard library only: the point is not to import what the warm process has imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import Any

import trawl
from trawl.paths import data_dir

SOCKET = "commands.sock"
HEADER = struct.Struct("!I")
HANDSHAKE_S = 10.0  # the warm process forks at once; one that does not answer is not used
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The commands handed over: those that start, read or steer work and return.
ONE_SHOT = frozenset({"crawl", "resolve", "items", "status", "crawls", "crawl-status", "pause", "resume", "cancel",
                      "export", "fsck"})


def identity() -> dict[str, str]:
    """What a command and the warm process must share: the same interpreter and the same trawl code."""
    return {"python": sys.prefix, "trawl": str(Path(trawl.__file__).resolve().parent),
            "version": trawl.__version__}


def command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option or --log-level's value)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--log-level":
            skip = True
        elif word in ("-h", "--help", "--version"):
            return None
        elif not word.startswith("-"):
            return word
    return None


def _connect(run_dir: Path) -> socket.socket | None:
    if not (run_dir / SOCKET).exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HANDSHAKE_S)
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(run_dir)  # by a relative name: a socket's path is limited to about 100 bytes
        sock.connect(SOCKET)
    except OSError:
        sock.close()
        return None
    finally:
        os.fchdir(here)
        os.close(here)
    return sock


def _streams() -> list[int]:
    """Descriptors 0, 1 and 2, each opened on /dev/null first if it was closed."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    return [0, 1, 2]


def delegate(argv: list[str]) -> int | None:
    """The exit status of ``argv`` run by the warm process; None to run it here instead."""
    name = command_of(argv)
    if name is None or not (name in ONE_SHOT or name.startswith(("http://", "https://"))):
        return None
    try:
        here = Path.cwd()
        sock = _connect((here / data_dir()) / "run")
    except OSError:
        return None
    if sock is None:
        return None
    with sock:
        umask = os.umask(0)
        os.umask(umask)
        body = json.dumps({"identity": identity(), "argv": argv, "env": dict(os.environ), "cwd": str(here),
                           "umask": umask, "encoding": sys.stdout.encoding}).encode()
        try:
            socket.send_fds(sock, [HEADER.pack(len(body))], _streams())
            sock.sendall(body)
            reader = sock.makefile("rb")
            first = _message(reader.readline())
        except OSError:
            return None
        pid = first.get("pid")
        if not isinstance(pid, int):
            return None  # refused: run it here
        return _follow(sock, reader, pid)


def _message(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _follow(sock: socket.socket, reader: Any, pid: int) -> int:
    """Wait for the child's exit status, forwarding signals to it."""
    got: list[int] = []

    def forward(signum: int, frame: object) -> None:
        got.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    sock.settimeout(None)
    while True:
        try:
            line = reader.readline()
        except InterruptedError:
            continue
        except OSError:
            line = b""
        if not line:
            break
        code = _message(line).get("exit")
        if isinstance(code, int):
            return code
    if got:  # it ended on the signal forwarded to it, as this command would have
        return 128 + got[-1]
    print("trawl: the command's process ended without an exit status", file=sys.stderr)
    return 1
