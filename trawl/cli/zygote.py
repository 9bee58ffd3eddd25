"""A warm ``trawl`` for the commands of a data directory whose server runs in the background.

Most of a one-shot command's time goes to importing (Temporal's client, SQLAlchemy, the
platforms), not to its work. Beside the background server and worker (see
:mod:`trawl.starter.embedded`), the keeper runs this process: it imports what the commands use,
once, and listens on ``<data_dir>/run/commands.sock`` (mode 0600, and only this user's
connections are served). A command that finds it (:mod:`trawl.cli.quick`) sends its arguments,
environment, working directory and umask, and its standard input, output and error as
descriptors; this process forks, and the child becomes that command: same descriptors (so a
terminal is a terminal), same environment and directory, so it reads the same settings a
command started the usual way reads, and runs :func:`trawl.cli.main` on the arguments. The child
sends its pid first (the command forwards its signals to it: Ctrl-C stops it as it stops any
command) and its exit status last; when the command goes away first, the child is stopped as by
SIGTERM.

It serves only while single-threaded (a fork copies only the calling thread, so a lock another
thread held would stay held in the child), and only a command of the same trawl and Python.
Anything it refuses or cannot do, the command does itself the usual way.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from trawl.cli.quick import HEADER, SOCKET, identity

MAX_REQUEST = 16 << 20  # arguments and environment; a longer URL list goes through -a FILE


def _warm() -> None:
    """Import what the one-shot commands use (no module here starts a thread), and do once what
    each of them would do first: build the command-line parser, configure the catalog's mappers
    (SQLAlchemy does that at a session's first statement: 15-30 ms of every crawl's start)."""
    import sqlalchemy.dialects.sqlite  # noqa: F401
    from sqlalchemy.orm import configure_mappers

    import trawl.cli.catalog  # noqa: F401
    import trawl.cli.crawl  # noqa: F401
    import trawl.cli.crawl_status  # noqa: F401
    import trawl.cli.export  # noqa: F401
    import trawl.cli.resolve  # noqa: F401
    import trawl.cli.steering  # noqa: F401
    import trawl.settings
    import trawl.starter.kept_options  # noqa: F401 - crawls of an archive that used --limit-rate ask it
    import trawl.storage.catalog  # noqa: F401
    import trawl.worker.runtime  # noqa: F401
    from trawl.cli.args import command_parser
    from trawl.platforms.registry import build_registry

    build_registry(trawl.settings.PlatformsSettings())
    command_parser()
    configure_mappers()


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 16))
        if not chunk:
            raise ConnectionError("the command went away")
        data += chunk
    return bytes(data)


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _be_the_command(conn: socket.socket, fds: list[int], request: dict[str, Any]) -> None:
    """In the forked child: take over the command's descriptors, environment and directory, run it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the command waits for its own children (ffmpeg)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    encoding = request.get("encoding") or "utf-8"
    # The process's own streams, made as Python makes them at start-up.
    sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=encoding)  # noqa: SIM115
    sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), encoding=encoding,  # noqa: SIM115
                                  line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0, closefd=False), encoding=encoding,  # noqa: SIM115
                                  errors="backslashreplace", line_buffering=True, write_through=True)
    _send(conn, {"pid": os.getpid()})

    def watch() -> None:  # the command went away (killed): stop as a command does on SIGTERM
        with contextlib.suppress(OSError):
            while conn.recv(1 << 10):
                pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="command-watch").start()
    from trawl.cli import run_command

    code = run_command(request["argv"])
    with contextlib.suppress(OSError):
        _send(conn, {"exit": code})
    os._exit(code)


def _serve_one(conn: socket.socket, server: socket.socket) -> None:
    peer = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    if struct.unpack("3i", peer)[1] != os.getuid():
        return
    conn.settimeout(10.0)
    head, fds, _, _ = socket.recv_fds(conn, HEADER.size, 3)
    try:
        if len(head) < HEADER.size or len(fds) != 3:
            return
        (size,) = HEADER.unpack(head)
        if size > MAX_REQUEST:
            _send(conn, {"refused": "request too large"})
            return
        request = json.loads(_read_exactly(conn, size))
        if request.get("identity") != identity():
            _send(conn, {"refused": "another trawl"})
            return
        if threading.active_count() > 1:
            _send(conn, {"refused": "not single-threaded"})
            return
        conn.settimeout(None)
        if os.fork() == 0:
            try:
                server.close()
                _be_the_command(conn, fds, request)
            except BaseException:  # noqa: BLE001 - a bug: say it where the command's errors go
                traceback.print_exc()
            finally:
                os._exit(1)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def serve(run_dir: Path) -> int:
    _warm()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the commands' exits are reaped by the kernel
    os.chdir(run_dir)  # bound by a relative name: a socket's path is limited to about 100 bytes
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET)
    old = os.umask(0o177)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(SOCKET)
    os.umask(old)
    server.listen(64)
    print(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} serving commands on {run_dir / SOCKET} (pid {os.getpid()})",
          file=sys.stderr, flush=True)
    try:
        while True:
            conn, _ = server.accept()
            with conn:
                try:
                    _serve_one(conn, server)
                except (OSError, ValueError) as err:
                    print(f"a command could not be served: {err}", file=sys.stderr, flush=True)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(SOCKET)


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1]).resolve()))
