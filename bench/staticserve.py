"""A static file server for the benchmarks, as nginx serves one: ``sendfile`` from the page cache.

The simulator makes every byte it sends in Python, which on two cores takes CPU the client being
measured would otherwise have; this server's cost per byte is the kernel's alone. Every path
serves the same file (so each run may use a URL of its own), with ``Content-Length``, a strong
``ETag``, ``Last-Modified``, ``Accept-Ranges`` and single ranges (``bytes=A-`` and ``bytes=A-B``),
over kept-alive HTTP/1.1 connections, one thread each.

Usage: python bench/staticserve.py --port PORT --file PATH [--content-type TYPE]
"""

from __future__ import annotations

import argparse
import email.utils
import os
import re
import socket
import threading

RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


def serve(conn: socket.socket, path: str, content_type: str) -> None:
    st = os.stat(path)
    etag = f'"{st.st_ino:x}-{st.st_size:x}-{int(st.st_mtime)}"'
    modified = email.utils.formatdate(st.st_mtime, usegmt=True)
    reader = conn.makefile("rb")
    with conn, reader, open(path, "rb") as handle:
        while True:
            try:
                request = reader.readline(65536)
            except OSError:
                return  # the client closed a kept-alive connection
            if not request:
                return
            headers = {}
            while (line := reader.readline(65536)) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            method = request.split()[0].decode()
            start, end, status = 0, st.st_size, "200 OK"
            wanted = RANGE.match(headers.get("range", ""))
            if_range = headers.get("if-range")
            if wanted and (if_range is None or if_range in (etag, modified)):
                start = int(wanted.group(1))
                end = min(st.st_size, int(wanted.group(2)) + 1) if wanted.group(2) else st.st_size
                if start >= st.st_size:
                    conn.sendall((f"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{st.st_size}\r\n"
                                  "Content-Length: 0\r\n\r\n").encode())
                    continue
                status = "206 Partial Content"
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {end - start}\r\n"
                    f"ETag: {etag}\r\nLast-Modified: {modified}\r\nAccept-Ranges: bytes\r\n")
            if status.startswith("206"):
                head += f"Content-Range: bytes {start}-{end - 1}/{st.st_size}\r\n"
            conn.sendall((head + "\r\n").encode())
            if method == "HEAD":
                continue
            try:
                offset = start
                while offset < end:
                    sent = os.sendfile(conn.fileno(), handle.fileno(), offset, min(end - offset, 1 << 30))
                    if sent == 0:
                        return
                    offset += sent
            except OSError:
                return  # the client went away mid-body (a download that took what it needed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--content-type", default="video/mp4")
    args = parser.parse_args()
    listener = socket.create_server(("127.0.0.1", args.port), backlog=64)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, args.file, args.content_type), daemon=True).start()


if __name__ == "__main__":
    main()
