"""Items per second with 1, 2 and 4 worker processes, against the ceiling of the same server.

Latency-bound items: 400 kB files; the simulator waits ~300 ms before the first byte and caps
each connection at 1 MB/s. Each worker process runs at most --slots activities at once (4 by
default), so one process is the limit and more processes should add capacity until the dev
server (about one core here) is. The ceiling is a trivial workflow with four no-op activities
(bench/trivial.py, in the workflow sandbox as Temporal runs workflows by default; --trivial-runner
trawl: as trawl's workers run theirs) on the same dev
server in the same run; tiny 2 kB items are measured against it in --rounds alternated rounds, by
rate and by CPU per item (server + workers + client), as medians: each tiny round against the mean
of the trivial rounds before and after it, on tiny workers started once and warmed up with
--warm-up items (--fresh-workers: new tiny workers each round, as before). The tiny files come from nginx
when it is installed (`--files simulator`: from the simulator, whose Python CPU then competes
with the items' on the same cores); the file server's CPU per item is reported beside. Prints
JSON, including CPU seconds of the server and of the workers (where the time goes).

Usage: .venv/bin/python bench/scale.py [--items N] [--processes 1,2,4] [--rounds 3] [--tiny-only]
       [--files nginx|simulator] [--warm-up N] [--fresh-workers] [--no-search-attribute-cache]
       [--trivial-runner sdk|trawl|none]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from common import BIN, REPO, Nginx, connect_when_ready, cpu_seconds, free_port, wait_port, write_media
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from trivial import TrivialWorkflow, noop
from trawl.worker.sandbox import keep_loaded_code, workflow_runner
from trawl.starter.embedded import DEV_SERVER_DYNAMIC_CONFIG, SEARCH_ATTRIBUTES, dynamic_config_arguments


# What runs the yardstick's workflows: the SDK's sandbox, as Temporal runs workflows by default;
# trawl's workers' runner (the same sandbox, the SDK's per-payload context questions answered
# outside it: trawl.worker.sandbox); or no sandbox (the yardstick before 2026-12-05).
TRIVIAL_RUNNERS = ("sdk", "trawl", "none")


def trivial_runner(name: str, client: Client, workflow: type) -> dict:
    """The Worker arguments that run ``workflow`` as ``name`` says (TRIVIAL_RUNNERS); for "trawl",
    its module's code is kept as loaded, as a trawl worker keeps its workflows'."""
    if name == "none":
        return {"workflow_runner": UnsandboxedWorkflowRunner()}
    if name == "trawl":
        keep_loaded_code([workflow])
        return {"workflow_runner": workflow_runner(client.data_converter)}
    return {}


async def ceiling(client: Client, count: int, server_pid: int, runner: str = "sdk",
                  workflow: type = TrivialWorkflow) -> dict:
    """Trivial workflows per second, and the CPU milliseconds per workflow of the server and of
    this process (their worker and client): on a loaded machine the CPU per workflow is the steadier
    figure. ``runner``: what runs the workflows (TRIVIAL_RUNNERS). ``workflow``:
    another of bench/trivial.py's, whose run takes no argument (bench/activity_kinds.py)."""
    queue = f"trivial-{uuid.uuid4().hex[:6]}"
    async with Worker(client, task_queue=queue, workflows=[workflow], activities=[noop],
                      max_concurrent_activities=64, **trivial_runner(runner, client, workflow)):
        server_cpu, own_cpu = cpu_seconds(server_pid), time.process_time()
        started = time.perf_counter()
        handles = [await client.start_workflow(workflow.run, id=f"{queue}-{i}", task_queue=queue)
                   for i in range(count)]
        await asyncio.gather(*(h.result() for h in handles))
        elapsed = time.perf_counter() - started
        return {"per_s": count / elapsed, "server_cpu_ms": 1000 * (cpu_seconds(server_pid) - server_cpu) / count,
                "worker_cpu_ms": 1000 * (time.process_time() - own_cpu) / count}


def workers_cpu_seconds(supervisor: int) -> float:
    """CPU of a worker supervisor and its worker processes."""
    children = subprocess.run(["pgrep", "-P", str(supervisor)], capture_output=True, text=True).stdout.split()
    return cpu_seconds(supervisor) + sum(cpu_seconds(int(p)) for p in children if Path(f"/proc/{p}").exists())


def wait_started(log: Path, count: int, proc: subprocess.Popen, timeout: float = 90) -> None:
    """Until ``count`` worker processes have said they poll (their start-up is not the items' time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count('"worker started"') >= count:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the workers exited with {proc.returncode}; see {log}")
        time.sleep(0.1)
    raise RuntimeError(f"{count} workers did not start within {timeout:.0f} s; see {log}")


class Workers:
    """``trawl worker --processes N`` with ``env`` (+ ``extra_env``), a task queue and data
    directory of its own, started once: :meth:`measure` submits a batch of URLs and waits for all
    of them, as often as asked, so later batches meet warm processes (as a deployment's
    long-running workers are). The workers' log goes to ``log`` (default ``tmp/<label>-N-<id>.log``);
    ``other_pids`` are processes (by name) whose CPU seconds over a batch are reported as
    ``<name>_cpu_s``."""

    def __init__(self, client: Client, env: dict[str, str], processes: int, tmp: Path, server_pid: int,
                 label: str = "scale", extra_env: dict[str, str] | None = None, log: Path | None = None,
                 other_pids: dict[str, int] | None = None) -> None:
        from trawl.settings import load_settings

        self.client, self.processes, self.server_pid = client, processes, server_pid
        self.other_pids = other_pids or {}
        prefix = f"{label}-{processes}-{uuid.uuid4().hex[:6]}"
        self.env = {**env, **(extra_env or {}), "TRAWL_TEMPORAL__TASK_QUEUE_PREFIX": prefix,
                    "TRAWL_DATA_DIR": str(tmp / prefix)}
        saved = dict(os.environ)
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("TRAWL_")})
        self.settings = load_settings()
        os.environ.clear()
        os.environ.update(saved)
        self.log, self.tmp = log or tmp / f"{prefix}.log", tmp
        self.supervisor: subprocess.Popen | None = None

    async def __aenter__(self) -> Workers:
        with open(self.log, "wb") as out:
            self.supervisor = subprocess.Popen([str(BIN / "trawl"), "worker", "--processes", str(self.processes)],
                                               env=self.env, cwd=self.tmp, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_started(self.log, self.processes, self.supervisor)
        except BaseException:
            self.supervisor.kill()
            self.supervisor.wait(timeout=60)
            raise
        await asyncio.sleep(2)  # pollers up
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.supervisor is not None
        self.supervisor.send_signal(signal.SIGTERM)
        self.supervisor.wait(timeout=60)

    async def measure(self, urls: list[str]) -> dict:
        """Submit ``urls``, wait for every item; the rate and each process's CPU over the batch
        (the workers' start-up, imports and sandbox checks, is not the items')."""
        from trawl.platforms.registry import default_registry
        from trawl.starter.client import item_result, start_item

        assert self.supervisor is not None
        registry = default_registry()
        server_cpu = cpu_seconds(self.server_pid)
        workers_cpu = workers_cpu_seconds(self.supervisor.pid)
        client_cpu = time.process_time()
        others = {name: cpu_seconds(pid) for name, pid in self.other_pids.items()}
        started = time.perf_counter()
        handles = [(await start_item(self.client, self.settings, registry, u)).handle for u in urls]
        results = await asyncio.gather(*(item_result(h, "") for h in handles))
        elapsed = time.perf_counter() - started
        server_cpu = cpu_seconds(self.server_pid) - server_cpu
        others = {f"{name}_cpu_s": round(cpu_seconds(pid) - others[name], 2) for name, pid in self.other_pids.items()}
        workers_cpu = workers_cpu_seconds(self.supervisor.pid) - workers_cpu
        client_cpu = time.process_time() - client_cpu
        committed = sum(r.outcome == "committed" for r in results)
        return {"processes": self.processes, "items": len(urls), "committed": committed,
                "seconds": round(elapsed, 2), "items_per_s": round(len(urls) / elapsed, 2),
                "server_cpu_s": round(server_cpu, 2), "workers_cpu_s": round(workers_cpu, 2),
                "client_cpu_s": round(client_cpu, 2), **others}


async def crawl_rate(client: Client, env: dict[str, str], urls: list[str], processes: int, tmp: Path,
                     server_pid: int, label: str = "scale", extra_env: dict[str, str] | None = None,
                     log: Path | None = None, other_pids: dict[str, int] | None = None) -> dict:
    """:class:`Workers` started for one batch of ``urls`` and stopped after it."""
    async with Workers(client, env, processes, tmp, server_pid, label, extra_env, log, other_pids) as workers:
        return await workers.measure(urls)


def start_temporal(tmp: Path, server_config: Mapping[str, str] = DEV_SERVER_DYNAMIC_CONFIG) -> tuple[subprocess.Popen, int]:
    """A Temporal dev server on loopback with trawl's search attributes and the dynamic config
    trawl's embedded server has (``server_config``); (process, port)."""
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "temporal"), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
         "--http-port", str(free_port()), "--log-level", "error", "--db-filename", str(tmp / "temporal.db"),
         "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
         *dynamic_config_arguments(server_config),
         *sum((["--search-attribute", f"{n}=Keyword"] for n in SEARCH_ATTRIBUTES), [])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return server, port


def start_simulator(slow: int, tiny: int = 0) -> tuple[subprocess.Popen, int]:
    """The simulator with ``slow`` latency-bound files ``/slow/<i>.mp4`` (400 kB, ~300 ms to the
    first byte, 1 MB/s) and ``tiny`` 2 kB files ``/tiny/<i>.mp4``; (process, port)."""
    sim_port = free_port()
    sim_code = (
        "import time\n"
        "from trawl.simulator import Simulator, MediaFile, FileBehaviour\n"
        f"sim = Simulator(port={sim_port}).start()\n"
        f"for i in range({slow}):\n"
        "    sim.add_file(f'/slow/{i}.mp4', MediaFile('mp4', f's{i}', 400_000),"
        " FileBehaviour(first_byte_delay=0.3, throttle_bps=1_000_000))\n"
        f"for i in range({tiny}):\n"
        "    sim.add_file(f'/tiny/{i}.mp4', MediaFile('mp4', f't{i}', 2_000))\n"
        "time.sleep(1e9)\n"
    )
    return subprocess.Popen([sys.executable, "-c", sim_code], cwd=REPO), sim_port


def worker_env(port: int, slots: int) -> dict[str, str]:
    """This process's environment without TRAWL_*, plus what the benchmark's workers need."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update(TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{port}", TRAWL_TEMPORAL__EMBEDDED="false",
               TRAWL_NET__ALLOW_PRIVATE="true", TRAWL_WORKER__METRICS_PORT="0",
               TRAWL_PLATFORMS__GENERIC__REQUESTS_PER_SECOND="1000",
               TRAWL_WORKER__MAX_CONCURRENT_ACTIVITIES=str(slots))
    return env


async def run(args: argparse.Namespace) -> dict:
    if args.bytecode:
        # The sandbox imports the workflow modules afresh for every item it starts: from source
        # that is a compile of media_item.py per item (~10 ms of CPU). A pip-installed trawl has
        # its bytecode; an editable checkout with PYTHONDONTWRITEBYTECODE=1 does not.
        compileall.compile_dir(REPO / "trawl" / "workflows", quiet=1)
    tmp = Path(tempfile.mkdtemp(prefix="trawl-scale-"))
    server_config = dict(DEV_SERVER_DYNAMIC_CONFIG)
    if not args.search_attribute_cache:  # the CLI's default, as before 2026-12-07
        server_config["system.forceSearchAttributesCacheRefreshOnRead"] = "true"
    server, port = start_temporal(tmp, server_config)
    tiny_count = args.items * args.rounds + args.warm_up
    # The tiny files from nginx (sendfile: next to no CPU a request, as a platform's CDN costs the
    # crawler nothing), unless told or not installed: from the simulator, whose Python spends
    # about 4.5 ms of the same two cores on each (its share is reported either way).
    nginx = None
    if args.files == "nginx" and Nginx.available():
        nginx = Nginx(tmp / "nginx")
        for i in range(tiny_count):
            write_media(tmp / "nginx" / "www" / f"{i}.mp4", 2_000, f"t{i}")
    sim, sim_port = start_simulator(args.items * 8, 0 if nginx else tiny_count)
    try:
        wait_port(port)
        wait_port(sim_port)
        client = await connect_when_ready(f"127.0.0.1:{port}")
        env = worker_env(port, args.slots)
        if args.small_item_size is not None:
            env["TRAWL_DOWNLOAD__SMALL_ITEM_SIZE"] = str(args.small_item_size)
        runs = []
        offset = 0
        for processes in args.processes if not args.tiny_only else []:
            urls = [f"http://127.0.0.1:{sim_port}/slow/{i}.mp4" for i in range(offset, offset + args.items)]
            offset += args.items
            runs.append(await crawl_rate(client, env, urls, processes, tmp, server.pid,
                                         other_pids={"file_server": sim.pid}))
        # Tiny items against the trivial workflow, alternated round by round: one round's noise
        # (the ceiling itself swings 2x run to run on a shared machine) does not decide; medians.
        # The tiny items' workers start once and run a batch before the rounds, as a deployment's
        # long-running workers have (with --fresh-workers each round starts its own, whose first
        # runs' imports and caches count in that round, as before 2026-12-07); a trivial batch
        # warms the server and this process likewise. The tiny workers idle beside the trivial
        # rounds, polling, as a deployment's do. Each tiny round sits between two trivial ones
        # and is compared with their mean, so a drift through the run (the server's database
        # grows) weighs on both sides alike.
        def tiny_urls(numbers: range) -> list[str]:
            if nginx is not None:
                return [nginx.url(f"{i}.mp4") for i in numbers]
            return [f"http://127.0.0.1:{sim_port}/tiny/{i}.mp4" for i in numbers]

        def tiny_workers() -> Workers:
            return Workers(client, env, max(args.processes), tmp, server.pid,
                           other_pids={} if nginx else {"file_server": sim.pid})

        async def tiny_batch(shared: Workers | None, urls: list[str]) -> dict:
            if shared is not None:
                return await shared.measure(urls)
            async with tiny_workers() as fresh:
                return await fresh.measure(urls)

        runner = "none" if args.trivial_unsandboxed else args.trivial_runner
        rounds = []
        async with contextlib.AsyncExitStack() as stack:
            shared = None if args.fresh_workers else await stack.enter_async_context(tiny_workers())
            if args.warm_up:
                await ceiling(client, args.warm_up, server.pid, runner)
                if shared is not None:
                    await shared.measure(tiny_urls(range(args.items * args.rounds, tiny_count)))
            trivial = [await ceiling(client, args.items, server.pid, runner)]
            for round_no in range(args.rounds):
                first = round_no * args.items
                served_before = nginx.cpu_seconds() if nginx is not None else 0.0
                tiny = await tiny_batch(shared, tiny_urls(range(first, first + args.items)))
                if nginx is not None:
                    tiny["file_server_cpu_s"] = nginx.cpu_seconds() - served_before
                trivial.append(await ceiling(client, args.items, server.pid, runner))
                before, after = trivial[-2], trivial[-1]
                tiny_ms = {k: 1000 * tiny[f"{k}_cpu_s"] / args.items for k in ("server", "workers", "client")}
                trivial_ms = [t["server_cpu_ms"] + t["worker_cpu_ms"] for t in (before, after)]
                rounds.append({"trivial_per_s": round((before["per_s"] + after["per_s"]) / 2, 2),
                               "trivial_per_s_around": [round(before["per_s"], 2), round(after["per_s"], 2)],
                               "trivial_cpu_ms": round(sum(trivial_ms) / 2, 1),
                               "trivial_cpu_ms_around": [round(ms, 1) for ms in trivial_ms],
                               "trivial_server_cpu_ms": round((before["server_cpu_ms"] + after["server_cpu_ms"]) / 2, 1),
                               "tiny_per_s": tiny["items_per_s"], "tiny_committed": tiny["committed"],
                               "tiny_cpu_ms": round(sum(tiny_ms.values()), 1),
                               "tiny_cpu_ms_by_process": {k: round(v, 1) for k, v in tiny_ms.items()},
                               "file_server_cpu_ms": round(1000 * tiny["file_server_cpu_s"] / args.items, 1),
                               "load": round(os.getloadavg()[0], 1)})
        median = statistics.median
        figures = {
            "benchmark": "scale",
            "workflow_bytecode": args.bytecode,
            "tiny_files_from": "nginx" if nginx else "simulator",
            "small_item_size": args.small_item_size,
            "slots_per_process": args.slots,
            "trivial_sandboxed": runner != "none",
            "trivial_runner": runner,
            "latency_bound": runs,
            "fresh_workers_each_round": args.fresh_workers,
            "server_dynamic_config": server_config,
            "warm_up_items": args.warm_up,  # trivial ones; tiny ones too unless fresh_workers_each_round
            "rounds": rounds,
            # Medians over the rounds: by rate (the machine's noise shows) and by CPU per item
            # (server + workers + client; the steadier figure).
            "tiny_over_trivial_rate": round(median(r["tiny_per_s"] / r["trivial_per_s"] for r in rounds), 2),
            "tiny_over_trivial_cpu": round(median(r["tiny_cpu_ms"] / r["trivial_cpu_ms"] for r in rounds), 2),
            # The spread the medians come from: each round's ratio, lowest first.
            "tiny_over_trivial_rate_by_round": sorted(round(r["tiny_per_s"] / r["trivial_per_s"], 2) for r in rounds),
            "tiny_over_trivial_cpu_by_round": sorted(round(r["tiny_cpu_ms"] / r["trivial_cpu_ms"], 2) for r in rounds),
        }
        if runs:
            one = runs[0]["items_per_s"]
            figures["speedup_vs_1"] = {r["processes"]: round(r["items_per_s"] / one, 2) for r in runs}
        return figures
    finally:
        sim.kill()
        if nginx is not None:
            nginx.close()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=80)
    parser.add_argument("--processes", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    parser.add_argument("--slots", type=int, default=4, help="download/verify/commit slots per process")
    parser.add_argument("--small-item-size", type=int, default=None,
                        help="download.small_item_size for the workers (0: every item claims a host)")
    parser.add_argument("--rounds", type=int, default=3, help="tiny items against the trivial workflow, alternated")
    parser.add_argument("--warm-up", type=int, default=40,
                        help="items run before the rounds, not counted: trivial ones, and tiny ones on the started-once workers (0: none)")
    parser.add_argument("--no-search-attribute-cache", dest="search_attribute_cache", action="store_false",
                        help="the dev server reads search attributes from its database every time (its default)")
    parser.add_argument("--fresh-workers", action="store_true",
                        help="start the tiny items' workers afresh for each round (as before 2026-12-07)")
    parser.add_argument("--tiny-only", action="store_true", help="skip the latency-bound runs")
    parser.add_argument("--files", choices=("nginx", "simulator"), default="nginx",
                        help="what serves the tiny files (nginx falls back to the simulator when not installed)")
    yardstick = parser.add_mutually_exclusive_group()
    yardstick.add_argument("--trivial-runner", choices=TRIVIAL_RUNNERS, default="sdk",
                           help="what runs the yardstick's workflows: the SDK's sandbox (Temporal's default), "
                                "trawl's workers' runner, or none")
    yardstick.add_argument("--trivial-unsandboxed", action="store_true",
                           help="the yardstick without the workflow sandbox (as before 2026-12-05): --trivial-runner none")
    parser.add_argument("--no-bytecode", dest="bytecode", action="store_false",
                        help="leave the workflow modules without .pyc files (as an editable checkout may be)")
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()
