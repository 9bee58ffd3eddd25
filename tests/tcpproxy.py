"""A TCP proxy on loopback for the tests: what a client sends reaches the server at most ``rate``
bytes per second, so that an upload takes long enough to be interrupted on purpose."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

CHUNK = 16 * 1024


class ThrottlingProxy:
    """Listens on 127.0.0.1 (``port``) and forwards every connection to 127.0.0.1:``target``."""

    def __init__(self, target: int, rate: int) -> None:
        self.target = target
        self.rate = rate
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._sockets: list[socket.socket] = []
        self._closed = threading.Event()

    def __enter__(self) -> ThrottlingProxy:
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._closed.set()
        for sock in [self.listener, *self._sockets]:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self.listener.accept()
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                return
            self._sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, self.rate), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, None), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, rate: int | None) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
                if rate:
                    time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
