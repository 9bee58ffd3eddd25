"""A TCP proxy on loopback for the tests: in front of a real server (the object store, the
catalog) it can slow what a client sends to ``rate`` bytes per second, so that an upload takes
long enough to be interrupted on purpose, or play an outage: refuse connections and drop the
open ones (:meth:`TcpProxy.down`), then answer again on the same port (:meth:`TcpProxy.up`); or
a frozen server (:meth:`TcpProxy.freeze`: connections are taken and bytes accepted, nothing
goes through), as a SIGSTOPped process behaves, until :meth:`TcpProxy.thaw`."""

from __future__ import annotations

import socket
import struct
import threading
import time
from types import TracebackType

CHUNK = 16 * 1024


class TcpProxy:
    """Listens on 127.0.0.1 (``port``, ``endpoint``) and forwards every connection to 127.0.0.1:``target``."""

    def __init__(self, target: int, rate: int | None = None) -> None:
        self.target = target
        self.rate = rate
        self.port = 0
        self._links: set[tuple[socket.socket, socket.socket]] = set()  # open (client, server) pairs
        self._listener: socket.socket | None = None
        self._flowing = threading.Event()
        self._flowing.set()
        self.up()
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        """Accept connections (again, on the same port)."""
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, args=(self._listener,), name="proxy-accept", daemon=True).start()

    @property
    def connections(self) -> int:
        """Connections open through the proxy now."""
        return len(self._links)

    def down(self) -> None:
        """An outage: new connections are refused, open ones are reset (an RST, as from a server
        that died)."""
        listener, self._listener = self._listener, None
        links, self._links = self._links, set()
        if listener is not None:
            _close(listener)
        for pair in links:
            for sock in pair:
                _reset(sock)

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.thaw()
        self.down()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                return  # closed: the outage began, or the proxy is done
            pair = (client, server)
            self._links.add(pair)
            threading.Thread(target=self._pipe, args=(pair, client, server, self.rate), daemon=True).start()
            threading.Thread(target=self._pipe, args=(pair, server, client, None), daemon=True).start()

    def _pipe(self, pair: tuple[socket.socket, socket.socket], source: socket.socket, sink: socket.socket,
              rate: int | None) -> None:
        try:
            while data := source.recv(CHUNK):
                self._flowing.wait()
                sink.sendall(data)
                if rate:
                    time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            self._links.discard(pair)
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def _reset(sock: socket.socket) -> None:
    """Close with an RST (SO_LINGER 0); SHUT_RD first wakes the pipe blocked reading it."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    sock.close()


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
