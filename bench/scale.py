"""Items per second with 1, 2 and 4 worker processes, against the ceiling of the same server.

Latency-bound items: 400 kB files; the simulator waits ~300 ms before the first byte and caps
each connection at 1 MB/s. Each worker process runs at most --slots activities at once (4 by
default), so one process is the limit and more processes should add capacity until the dev
server (about one core here) is. The ceiling is a trivial workflow with four no-op activities run on the
same dev server in the same run. Prints JSON, including CPU seconds of the server and of the
workers (where the time goes).

Usage: .venv/bin/python bench/scale.py [--items N] [--processes 1,2,4]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

from common import BIN, REPO, free_port, wait_port
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its reaped children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / CLK


@activity.defn
async def noop(step: int) -> int:
    return step


@workflow.defn
class TrivialWorkflow:
    @workflow.run
    async def run(self) -> None:
        for step in range(4):
            await workflow.execute_activity(noop, step, start_to_close_timeout=timedelta(seconds=30))


async def ceiling(client: Client, count: int, server_pid: int) -> dict:
    """Trivial workflows per second, and the CPU milliseconds per workflow of the server and of
    this process (their worker and client): on a loaded machine the CPU per workflow is the steadier figure."""
    queue = f"trivial-{uuid.uuid4().hex[:6]}"
    # The workflow lives in this script's __main__, which the sandbox cannot re-import.
    async with Worker(client, task_queue=queue, workflows=[TrivialWorkflow], activities=[noop],
                      max_concurrent_activities=64, workflow_runner=UnsandboxedWorkflowRunner()):
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
    others = {f"{name}_cpu_s": round(cpu_seconds(pid) - others[name], 1) for name, pid in (other_pids or {}).items()}
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
        compileall.compile_dir(REPO / "workflows", quiet=1)
    tmp = Path(tempfile.mkdtemp(prefix="trawl-scale-"))
    server, port = start_temporal(tmp)
    sim, sim_port = start_simulator(args.items * 8, args.items * 2)
    try:
        wait_port(port)
        wait_port(sim_port)
        client = await Client.connect(f"127.0.0.1:{port}")
        env = worker_env(port, args.slots)
        if args.small_item_size is not None:
            env["TRAWL_DOWNLOAD__SMALL_ITEM_SIZE"] = str(args.small_item_size)
        trivial = await ceiling(client, args.items, server.pid)
        runs = []
        offset = 0
        for processes in args.processes:
            urls = [f"http://127.0.0.1:{sim_port}/slow/{i}.mp4" for i in range(offset, offset + args.items)]
            offset += args.items
            runs.append(await crawl_rate(client, env, urls, processes, tmp, server.pid))
        tiny_urls = [f"http://127.0.0.1:{sim_port}/tiny/{i}.mp4" for i in range(args.items)]
        tiny = await crawl_rate(client, env, tiny_urls, max(args.processes), tmp, server.pid)
        one = runs[0]["items_per_s"]
        return {
            "benchmark": "scale",
            "workflow_bytecode": args.bytecode,
            "small_item_size": args.small_item_size,
            "slots_per_process": args.slots,
            "trivial_workflows_per_s": round(trivial["per_s"], 2),
            "trivial_cpu_ms": {"server": round(trivial["server_cpu_ms"], 1),
                               "worker": round(trivial["worker_cpu_ms"], 1)},
            "latency_bound": runs,
            "speedup_vs_1": {r["processes"]: round(r["items_per_s"] / one, 2) for r in runs},
            "tiny_items": tiny,
            "tiny_over_trivial_ceiling": round(tiny["items_per_s"] / trivial["per_s"], 2),
            "tiny_cpu_ms": {"server": round(1000 * tiny["server_cpu_s"] / len(tiny_urls), 1),
                            "workers": round(1000 * tiny["workers_cpu_s"] / len(tiny_urls), 1),
                            "client": round(1000 * tiny["client_cpu_s"] / len(tiny_urls), 1)},
            # A trivial workflow's CPU (server, worker and client) over a tiny item's: the ratio the
            # two cores would allow if nothing else ran on them.
            "tiny_over_trivial_by_cpu": round(
                (trivial["server_cpu_ms"] + trivial["worker_cpu_ms"])
                / (1000 * sum(tiny[k] for k in ("server_cpu_s", "workers_cpu_s", "client_cpu_s")) / len(tiny_urls)), 2),
        }
    finally:
        sim.kill()
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
    parser.add_argument("--no-bytecode", dest="bytecode", action="store_false",
                        help="leave the workflow modules without .pyc files (as an editable checkout may be)")
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()
