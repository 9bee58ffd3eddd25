"""Items per second with 1, 2 and 4 worker processes, against the ceiling of the same server.

Latency-bound items: 400 kB files; the simulator waits ~300 ms before the first byte and caps
each connection at 1 MB/s. Each worker process runs at most --slots activities at once (4 by
default), so one process is the limit and more processes should add capacity until the dev
server (about one core here) is. The ceiling is a trivial workflow with four no-op activities
(bench/trivial.py, in the workflow sandbox as Temporal runs workflows by default) on the same dev
server in the same run; tiny 2 kB items are measured against it in --rounds alternated rounds, by
rate and by CPU per item (server + workers + client), as medians. The tiny files come from nginx
when it is installed (`--files simulator`: from the simulator, whose Python CPU then competes
with the items' on the same cores); the file server's CPU per item is reported beside. Prints
JSON, including CPU seconds of the server and of the workers (where the time goes).

Usage: .venv/bin/python bench/scale.py [--items N] [--processes 1,2,4] [--rounds 3] [--tiny-only]
       [--files nginx|simulator]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import BIN, REPO, Nginx, connect_when_ready, cpu_seconds, free_port, wait_port, write_media
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from trivial import TrivialWorkflow, noop


async def ceiling(client: Client, count: int, server_pid: int, sandboxed: bool = True) -> dict:
    """Trivial workflows per second, and the CPU milliseconds per workflow of the server and of
    this process (their worker and client): on a loaded machine the CPU per workflow is the steadier
    figure. ``sandboxed``: in the workflow sandbox, as Temporal runs workflows by default (and as
    trawl's workers run theirs); else without it (the yardstick before 2026-12-05)."""
    queue = f"trivial-{uuid.uuid4().hex[:6]}"
    runner = {} if sandboxed else {"workflow_runner": UnsandboxedWorkflowRunner()}
    async with Worker(client, task_queue=queue, workflows=[TrivialWorkflow], activities=[noop],
                      max_concurrent_activities=64, **runner):
        server_cpu, own_cpu = cpu_seconds(server_pid), time.process_time()
        started = time.perf_counter()
        handles = [await client.start_workflow(TrivialWorkflow.run, id=f"{queue}-{i}", task_queue=queue)
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


async def crawl_rate(client: Client, env: dict[str, str], urls: list[str], processes: int, tmp: Path,
                     server_pid: int, label: str = "scale", extra_env: dict[str, str] | None = None,
                     log: Path | None = None, other_pids: dict[str, int] | None = None) -> dict:
    """Start ``trawl worker --processes N`` with ``env`` (+ ``extra_env``), a task queue and data
    directory of its own; once every process polls, submit ``urls`` and wait for all of them.
    The workers' log goes to ``log`` (default ``tmp/<label>-N-<id>.log``); ``other_pids`` are
    processes (by name) whose CPU seconds over the items are reported as ``<name>_cpu_s``."""
    from trawl.starter.client import item_result, start_item
    from trawl.platforms.registry import default_registry
    from trawl.settings import load_settings

    prefix = f"{label}-{processes}-{uuid.uuid4().hex[:6]}"
    worker_env = {**env, **(extra_env or {}), "TRAWL_TEMPORAL__TASK_QUEUE_PREFIX": prefix,
                  "TRAWL_DATA_DIR": str(tmp / prefix)}
    saved = dict(os.environ)
    os.environ.update({k: v for k, v in worker_env.items() if k.startswith("TRAWL_")})
    settings = load_settings()
    os.environ.clear()
    os.environ.update(saved)
    log = log or tmp / f"{prefix}.log"
    with open(log, "wb") as out:
        supervisor = subprocess.Popen([str(BIN / "trawl"), "worker", "--processes", str(processes)],
                                      env=worker_env, cwd=tmp, stdout=out, stderr=subprocess.STDOUT)
    wait_started(log, processes, supervisor)
    await asyncio.sleep(2)  # pollers up
    server_cpu = cpu_seconds(server_pid)
    workers_cpu = workers_cpu_seconds(supervisor.pid)  # start-up (imports, sandbox checks) is not the items'
    client_cpu = time.process_time()
    others = {name: cpu_seconds(pid) for name, pid in (other_pids or {}).items()}
    started = time.perf_counter()
    handles = [(await start_item(client, settings, default_registry(), u)).handle for u in urls]
    results = await asyncio.gather(*(item_result(h, "") for h in handles))
    elapsed = time.perf_counter() - started
    server_cpu = cpu_seconds(server_pid) - server_cpu
    others = {f"{name}_cpu_s": round(cpu_seconds(pid) - others[name], 2) for name, pid in (other_pids or {}).items()}
    workers_cpu = workers_cpu_seconds(supervisor.pid) - workers_cpu
    client_cpu = time.process_time() - client_cpu
    supervisor.send_signal(signal.SIGTERM)
    supervisor.wait(timeout=60)
    committed = sum(r.outcome == "committed" for r in results)
    return {"processes": processes, "items": len(urls), "committed": committed, "seconds": round(elapsed, 2),
            "items_per_s": round(len(urls) / elapsed, 2), "server_cpu_s": round(server_cpu, 1),
            "workers_cpu_s": round(workers_cpu, 1), "client_cpu_s": round(client_cpu, 1), **others}


def start_temporal(tmp: Path) -> tuple[subprocess.Popen, int]:
    """A Temporal dev server on loopback with trawl's search attributes; (process, port)."""
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "temporal"), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
         "--http-port", str(free_port()), "--log-level", "error", "--db-filename", str(tmp / "temporal.db"),
         "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
         "--dynamic-config-value", "history.shardIOConcurrency=8",
         *sum((["--search-attribute", f"{n}=Keyword"] for n in
               ("Platform", "CanonicalKey", "Stage", "Outcome", "CrawlId")), [])],
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
    server, port = start_temporal(tmp)
    tiny_count = args.items * args.rounds
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
        rounds = []
        for round_no in range(args.rounds):
            trivial = await ceiling(client, args.items, server.pid, sandboxed=not args.trivial_unsandboxed)
            first = round_no * args.items
            numbers = range(first, first + args.items)
            if nginx is not None:
                tiny_urls = [nginx.url(f"{i}.mp4") for i in numbers]
                served_before = nginx.cpu_seconds()
            else:
                tiny_urls = [f"http://127.0.0.1:{sim_port}/tiny/{i}.mp4" for i in numbers]
            tiny = await crawl_rate(client, env, tiny_urls, max(args.processes), tmp, server.pid,
                                    other_pids={} if nginx else {"file_server": sim.pid})
            if nginx is not None:
                tiny["file_server_cpu_s"] = nginx.cpu_seconds() - served_before
            tiny_ms = {k: 1000 * tiny[f"{k}_cpu_s"] / args.items for k in ("server", "workers", "client")}
            rounds.append({"trivial_per_s": round(trivial["per_s"], 2),
                           "trivial_cpu_ms": round(trivial["server_cpu_ms"] + trivial["worker_cpu_ms"], 1),
                           "trivial_server_cpu_ms": round(trivial["server_cpu_ms"], 1),
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
            "trivial_sandboxed": not args.trivial_unsandboxed,
            "latency_bound": runs,
            "rounds": rounds,
            # Medians over the rounds: by rate (the machine's noise shows) and by CPU per item
            # (server + workers + client; the steadier figure).
            "tiny_over_trivial_rate": round(median(r["tiny_per_s"] / r["trivial_per_s"] for r in rounds), 2),
            "tiny_over_trivial_cpu": round(median(r["tiny_cpu_ms"] / r["trivial_cpu_ms"] for r in rounds), 2),
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
    parser.add_argument("--tiny-only", action="store_true", help="skip the latency-bound runs")
    parser.add_argument("--files", choices=("nginx", "simulator"), default="nginx",
                        help="what serves the tiny files (nginx falls back to the simulator when not installed)")
    parser.add_argument("--trivial-unsandboxed", action="store_true",
                        help="the yardstick without the workflow sandbox (as before 2026-12-05)")
    parser.add_argument("--no-bytecode", dest="bytecode", action="store_false",
                        help="leave the workflow modules without .pyc files (as an editable checkout may be)")
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()
