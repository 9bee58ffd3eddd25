"""Shared plumbing for the benchmarks: processes for the simulator, Temporal and workers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO))

from trawl.starter.embedded import (  # noqa: E402 - after the path
    DEV_SERVER_DYNAMIC_CONFIG, SEARCH_ATTRIBUTES, dynamic_config_arguments)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing answers on port {port}")


async def connect_when_ready(address: str, timeout: float = 60):
    """A Temporal client, once the dev server's frontend says it is healthy: its port answers a
    moment before ("Frontend is not healthy yet")."""
    import asyncio

    from temporalio.client import Client

    deadline = time.monotonic() + timeout
    while True:
        try:
            return await Client.connect(address)
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


class Stack:
    """A simulator process serving one file, a Temporal dev server, and trawl workers.

    With ``static``, the file's bytes (the simulator's, so they sniff as its MP4) are written to
    disk once and served by ``bench/staticserve.py`` (``sendfile``, as nginx serves a file): the
    server then takes none of the CPU the client being measured needs.
    """

    def __init__(self, size: int, throttle_bps: int = 0, seed: str = "bench", static: bool = False,
                 server_config: Mapping[str, str] = DEV_SERVER_DYNAMIC_CONFIG) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="trawl-bench-"))
        self.size = size
        self.seed = seed
        self.sim_port = free_port()
        self.temporal_port = free_port()
        self.procs: list[subprocess.Popen] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
        self.env.update(
            TRAWL_DATA_DIR=str(self.tmp / "data"), TRAWL_NET__ALLOW_PRIVATE="true",
            TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{self.temporal_port}", TRAWL_TEMPORAL__EMBEDDED="false",
            TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=f"bench-{uuid.uuid4().hex[:6]}",
        )
        sim_code = (
            "import sys, time\n"
            "from trawl.simulator import Simulator, MediaFile, FileBehaviour\n"
            f"sim = Simulator(port={self.sim_port}).start()\n"
            f"sim.add_file('/big.mp4', MediaFile('mp4', {seed!r}, {size}), "
            f"FileBehaviour(throttle_bps={throttle_bps or None}))\n"
            "sim.add_file('/warm.mp4', MediaFile('mp4', 'warm-up', 65536))\n"
            "print('ready', flush=True)\n"
            "time.sleep(1e9)\n"
        )
        if static:
            served = write_media(self.tmp / "served.mp4", size, seed)
            self.procs.append(subprocess.Popen(
                [sys.executable, str(REPO / "bench" / "staticserve.py"), "--port", str(self.sim_port),
                 "--file", str(served)], cwd=REPO, stdout=subprocess.DEVNULL))
        else:
            self.procs.append(subprocess.Popen([sys.executable, "-c", sim_code], cwd=REPO, stdout=subprocess.DEVNULL))
        self.procs.append(subprocess.Popen(
            [str(BIN / "temporal"), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
             "--port", str(self.temporal_port), "--http-port", str(free_port()), "--log-level", "error",
             "--db-filename", str(self.tmp / "temporal.db"),
             "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
             *dynamic_config_arguments(server_config),
             *sum((["--search-attribute", f"{n}=Keyword"] for n in SEARCH_ATTRIBUTES), [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_port(self.sim_port)
        wait_port(self.temporal_port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sim_port}/big.mp4"

    @property
    def warm_url(self) -> str:
        """A 64 KiB file of the simulator's (not with ``static``): a worker's first item, before the one timed."""
        return f"http://127.0.0.1:{self.sim_port}/warm.mp4"

    def bytes_sent(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.sim_port}/__stats__") as resp:
            return json.load(resp).get("/big.mp4", {}).get("bytes_sent", 0)

    def background_env(self) -> dict[str, str]:
        """The environment of ``trawl crawl URL`` typed as a person's commands run: an embedded server
        of its own data directory (``bg``), left in the background with its worker and warm process
        by the first command; trawl's default task queues, no user config file."""
        env = {**self.env, "TRAWL_DATA_DIR": str(self.tmp / "bg"), "TRAWL_TEMPORAL__EMBEDDED": "true",
               "TRAWL_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}", "TRAWL_TEMPORAL__UI_PORT": str(free_port()),
               "XDG_CONFIG_HOME": str(self.tmp / "config")}
        env.pop("TRAWL_TEMPORAL__TASK_QUEUE_PREFIX")
        return env

    def start_worker(self) -> subprocess.Popen:
        log = open(self.tmp / f"worker-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([str(BIN / "trawl"), "worker"], env=self.env, cwd=self.tmp, stdout=log,
                                stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def settings(self):
        from trawl.settings import load_settings

        saved = dict(os.environ)
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("TRAWL_")})
        try:
            return load_settings()
        finally:
            os.environ.clear()
            os.environ.update(saved)

    async def submit_and_wait(self, url: str | None = None) -> tuple[float, object]:
        """Start the item workflow of ``url`` (the served file's by default) from this process;
        seconds from submission to its result."""
        from trawl.starter.client import connect, item_result, start_item
        from trawl.platforms.registry import default_registry

        settings = self.settings()
        client = await connect(settings)
        started_at = time.perf_counter()
        url = url or self.url
        started = await start_item(client, settings, default_registry(), url)
        result = await item_result(started.handle, url)
        return time.perf_counter() - started_at, result

    def crawl(self) -> tuple[float, dict]:
        """Run `trawl crawl --no-worker --json` on the file; return wall seconds and the record."""
        started = time.perf_counter()
        done = subprocess.run([str(BIN / "trawl"), "crawl", "--no-worker", "--json", self.url], env=self.env,
                              cwd=self.tmp, capture_output=True, text=True, timeout=3600)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"crawl failed: {done.stdout} {done.stderr[-2000:]}")
        return elapsed, json.loads(done.stdout.splitlines()[0])

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
        subprocess.run(["rm", "-rf", str(self.tmp)], check=False)


def write_media(path: Path, size: int, seed: str) -> Path:
    """The simulator's MP4 of ``size`` bytes for ``seed``, written to ``path``."""
    from trawl.simulator.media import BLOCK, MediaFile

    media = MediaFile("mp4", seed, size)
    with open(path, "wb") as out:
        offset = 0
        while offset < size:
            block = media.read(offset, BLOCK)
            out.write(block)
            offset += len(block)
    return path


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and of its children it has reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


class Nginx:
    """nginx serving the directory ``root/www`` on loopback (``sendfile``; each request limited to
    ``rate`` bytes/s by ``limit_rate`` when given): a file server whose CPU per request is nearly
    nothing, as a deployment's CDN costs the crawler nothing. ``url(name)`` is a file's address."""

    def __init__(self, root: Path, rate: int = 0) -> None:
        self.root = root
        (root / "www").mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # nginx's workers then run as another user: let them into the mkdtemp directory
            root.parent.chmod(0o711)
        self.port = free_port()
        limit = f"limit_rate {rate};" if rate else ""
        (root / "nginx.conf").write_text(
            f"worker_processes 1; daemon off; pid {root}/nginx.pid; error_log {root}/error.log;\n"
            f"events {{ worker_connections 1024; }}\n"
            f"http {{ access_log off; client_body_temp_path {root}; sendfile on; types {{ video/mp4 mp4; }}\n"
            f"  server {{ listen 127.0.0.1:{self.port}; root {root}/www; location / {{ {limit} }} }} }}\n")
        self.proc = subprocess.Popen([shutil.which("nginx") or "nginx", "-c", str(root / "nginx.conf"), "-p", str(root)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    @staticmethod
    def available() -> bool:
        return shutil.which("nginx") is not None

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def cpu_seconds(self) -> float:
        """User + system CPU of nginx's master and worker processes so far."""
        children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
        total = 0.0
        for pid in [self.proc.pid, *map(int, children)]:
            try:
                total += cpu_seconds(pid)
            except OSError:  # a worker that has just exited
                continue
        return total

    def close(self) -> None:
        self.proc.send_signal(signal.SIGQUIT)  # nginx's graceful stop
        self.proc.wait(timeout=15)


def rss_mib(pid: int) -> float:
    """A process's resident memory now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
