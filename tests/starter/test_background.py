"""The embedded server and worker one-shot commands leave running in the background (issue 43,
point 1): the first command starts them, the next ones use them, they stop by themselves once
idle or at `trawl down`, and a dead one is said in one line and replaced.

Real ``trawl`` subprocesses with ``temporal.idle_timeout`` on (the suite turns it off for every
other test); every test stops what it started, and checks that nothing is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli import TRAWL, run, trawl_env
from tests.polling import wait_until
from tests.ports import free_port
from tests.starter.test_embedded import dev_servers
from trawl.simulator import FileBehaviour, MediaFile, Simulator
from trawl.worker.interceptors import BusyInterceptor

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="scans /proc; PR_SET_PDEATHSIG is Linux only")

DEADLINE = 90.0


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def warm_processes(run_dir: Path) -> list[int]:
    """Pids of the warm process serving commands for ``run_dir``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"trawl.cli.zygote" in argv and str(run_dir.resolve()).encode() in argv and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


class Background:
    """One test's data directory with the background server on, and the processes it leaves."""

    def __init__(self, tmp_path: Path, idle: str = "10m") -> None:
        self.tmp_path = tmp_path
        self.run_dir = tmp_path / "data" / "run"
        self.db = tmp_path / "data" / "temporal.db"
        self.port = free_port()
        self.env = trawl_env(tmp_path, TRAWL_TEMPORAL__ADDRESS=f"127.0.0.1:{self.port}",
                             TRAWL_TEMPORAL__UI_PORT=str(free_port()), TRAWL_TEMPORAL__IDLE_TIMEOUT=idle)

    def trawl(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return run(list(args), {**self.env, **env}, self.tmp_path, timeout=DEADLINE)

    def state(self, name: str) -> dict:
        return json.loads((self.run_dir / name).read_text())

    def worker_state(self) -> dict:
        """The background worker's state, once its keeper has started it: the first command does
        its own items and the worker starts as it ends (trawl.starter.embedded.OWN_WORKER_LOCK)."""
        def started() -> dict | None:
            try:
                state = self.state("worker-state.json")
            except (OSError, ValueError):
                return None
            return state if alive(state["pid"]) else None

        return wait_until(started, "the background worker to start", timeout=DEADLINE)

    def items(self) -> list[dict]:
        """The catalog's items (``trawl items --json``)."""
        listed = self.trawl("items", "--json")
        assert listed.returncode == 0, listed.stderr
        return [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]

    def activity_identities(self) -> set[str]:
        """The identities of the workers that started the item workflows' activities, from the
        background server's histories."""
        from temporalio.client import Client

        async def read() -> set[str]:
            client = await Client.connect(f"127.0.0.1:{self.port}")
            found = set()
            async for execution in client.list_workflows("WorkflowType = 'MediaItemWorkflow'"):
                history = await client.get_workflow_handle(execution.id, run_id=execution.run_id).fetch_history()
                found |= {event.activity_task_started_event_attributes.identity for event in history.events
                          if event.HasField("activity_task_started_event_attributes")}
            return found

        return asyncio.run(read())

    def pids(self) -> set[int]:
        """The keeper, the dev server and the worker running now."""
        found = set(dev_servers(self.db)) | set(warm_processes(self.run_dir))
        for name, key in (("temporal.json", "keeper"), ("worker-state.json", "pid")):
            try:
                pid = self.state(name)[key]
            except (OSError, ValueError, KeyError):
                continue
            if alive(pid):
                found.add(pid)
        return found

    def cleanup(self) -> None:
        subprocess.run([TRAWL, "down"], env=self.env, cwd=self.tmp_path, capture_output=True, timeout=DEADLINE)
        for pid in self.pids():
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def background(tmp_path: Path) -> Iterator[Background]:
    b = Background(tmp_path)
    try:
        yield b
    finally:
        b.cleanup()


@pytest.fixture
def files(sim: Simulator) -> list[str]:
    for n in range(4):
        sim.add_file(f"/media/{n}.mp4", MediaFile("mp4", f"background-{n}", 300_000))
    return [sim.url(f"/media/{n}.mp4") for n in range(4)]


def test_the_first_command_leaves_a_server_and_worker_the_next_ones_use_and_down_stops_them(
        background: Background, files: list[str]) -> None:
    first = background.trawl("crawl", files[0])
    assert first.returncode == 0, first.stderr
    assert "committed" in first.stdout
    assert "run in the background" in first.stderr and "trawl down" in first.stderr
    keeper, worker = background.state("temporal.json")["keeper"], background.worker_state()["pid"]
    assert alive(keeper) and alive(worker) and dev_servers(background.db)  # running on after the command

    second = background.trawl("crawl", files[1])
    assert second.returncode == 0, second.stderr
    assert "committed" in second.stdout
    assert "background" not in second.stderr  # nothing started, nothing to say
    assert background.state("temporal.json")["keeper"] == keeper
    assert background.state("worker-state.json")["pid"] == worker
    assert not (background.run_dir / "worker.json").stat().st_mode & 0o077  # settings may hold credentials

    running = background.pids()
    down = background.trawl("down")
    assert down.returncode == 0 and "stopped the Temporal server" in down.stderr, down.stderr
    assert not any(alive(pid) for pid in running)
    again = background.trawl("down")
    assert again.returncode == 0 and "no Temporal server runs" in again.stderr


def test_the_next_commands_run_in_the_warm_process_and_ctrl_c_reaches_them(background: Background, sim: Simulator,
                                                                          files: list[str]) -> None:
    assert background.trawl("crawl", files[0]).returncode == 0
    wait_until(lambda: (background.run_dir / "commands.sock").exists(), "the warm process to listen")
    # The command's own process imports no Temporal client: the warm process runs the command.
    timed = subprocess.run([sys.executable, "-X", "importtime", "-m", "trawl.cli", "crawl", "--json", files[1]],
                           env=background.env, cwd=background.tmp_path, capture_output=True, text=True,
                           timeout=DEADLINE)
    assert timed.returncode == 0, timed.stderr[-2000:]
    assert json.loads(timed.stdout)["outcome"] == "committed"
    imported = [line for line in timed.stderr.splitlines() if line.startswith("import time:")]
    assert imported and not [line for line in imported if "temporalio" in line or "sqlalchemy" in line]
    assert (background.run_dir / "commands.sock").stat().st_mode & 0o077 == 0  # this user's alone

    # A slow download: Ctrl-C on the command stops it as it stops any crawl.
    sim.add_file("/media/slow.mp4", MediaFile("mp4", "background-slow", 4_000_000), FileBehaviour(throttle_bps=100_000))
    proc = subprocess.Popen([TRAWL, "crawl", sim.url("/media/slow.mp4")], env=background.env,
                            cwd=background.tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: sim.bytes_sent("/media/slow.mp4") > 100_000,
                   "the slow download to start", timeout=DEADLINE)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "Traceback" not in err, err


def test_it_stops_by_itself_once_idle(tmp_path: Path, files: list[str]) -> None:
    background = Background(tmp_path, idle="2s")
    try:
        done = background.trawl("crawl", files[0])
        assert done.returncode == 0, done.stderr
        background.worker_state()  # the first command did its own items: the worker starts as it ends
        started = background.pids()
        # keeper, dev server, worker (the warm process may be starting, or gone idle already: 2 s)
        assert len(started) >= 3, started
        wait_until(lambda: not any(alive(pid) for pid in started), "the idle server and worker to stop",
                   timeout=DEADLINE)
        assert not (background.run_dir / "temporal.json").exists()
    finally:
        background.cleanup()


def test_a_killed_worker_or_server_is_said_in_one_line_and_replaced(background: Background,
                                                                    files: list[str]) -> None:
    assert background.trawl("crawl", files[0]).returncode == 0
    os.kill(background.worker_state()["pid"], signal.SIGKILL)
    # The keeper sees the end at its next look (every KEEPER_POLL_S); a command forked by the warm
    # process can ask before that, and then finds the worker started again with nothing to say.
    wait_until(lambda: (background.run_dir / "ended.json").exists(), "the keeper to notice the worker's end",
               timeout=DEADLINE)
    after_worker = background.trawl("crawl", files[1])
    assert after_worker.returncode == 0, after_worker.stderr
    assert "committed" in after_worker.stdout
    said = [line for line in after_worker.stderr.splitlines() if "stopped unexpectedly" in line]
    assert len(said) == 1 and "background worker" in said[0], after_worker.stderr

    keeper = background.state("temporal.json")["keeper"]
    os.kill(keeper, signal.SIGKILL)  # its state stays behind: a stale pid in temporal.json
    wait_until(lambda: not dev_servers(background.db), "the dev server to die with its keeper")
    after_keeper = background.trawl("crawl", files[2])
    assert after_keeper.returncode == 0, after_keeper.stderr
    assert "committed" in after_keeper.stdout
    said = [line for line in after_keeper.stderr.splitlines() if "is gone" in line]
    assert len(said) == 1 and f"pid {background.state('temporal.json')['pid']}" not in said[0], after_keeper.stderr
    assert "Traceback" not in after_keeper.stderr

    os.kill(background.state("temporal.json")["pid"], signal.SIGKILL)  # the dev server alone dies
    wait_until(lambda: not (background.run_dir / "temporal.json").exists(), "the keeper to notice")
    after_server = background.trawl("crawl", files[3])
    assert after_server.returncode == 0, after_server.stderr
    said = [line for line in after_server.stderr.splitlines() if "stopped unexpectedly" in line]
    assert len(said) == 1 and "Temporal server" in said[0], after_server.stderr


def test_a_command_with_other_settings_gets_a_worker_with_them(background: Background, files: list[str]) -> None:
    assert background.trawl("crawl", files[0]).returncode == 0
    first = background.worker_state()
    # A limit the first worker would not apply: the new command's must.
    small = background.trawl("crawl", files[1], TRAWL_DOWNLOAD__MAX_FILE_SIZE="100K")
    assert small.returncode != 0
    assert "too_large" in small.stdout, small.stdout + small.stderr
    assert "differ" in small.stderr
    second = background.state("worker-state.json")
    assert second["generation"] == first["generation"] + 1 and not alive(first["pid"])


def test_an_idle_timeout_is_validated() -> None:
    from trawl.settings import ConfigError, load_settings

    assert load_settings(temporal={"idle_timeout": "90s"}).temporal.idle_timeout.total_seconds() == 90
    with pytest.raises(ConfigError, match="temporal.idle_timeout"):
        load_settings(temporal={"idle_timeout": "-5s"})
    with pytest.raises(ConfigError, match="temporal.idle_timeout"):
        load_settings(temporal={"idle_timeout": "30d"})


def test_busy_is_told_when_the_first_activity_starts_and_the_last_ends() -> None:
    told: list[bool] = []
    busy = BusyInterceptor(told.append)
    busy.change(+1)
    busy.change(+1)
    busy.change(-1)
    assert told == [True]
    busy.change(-1)
    busy.change(+1)
    assert told == [True, False, True]


def test_a_crawl_refused_after_it_began_starting_the_server_leaves_nothing_running(background: Background) -> None:
    # The dispatcher begins starting the server and the worker as soon as the settings are read;
    # a crawl that then refuses its input has its start undone, at once: the keeper it stopped is
    # its own child, a zombie until the command exits, and was once waited on as if alive (58 s).
    refused = background.trawl("crawl", "--source", "nosuch")  # refused by the command, after the dispatcher
    assert refused.returncode == 2 and "no source named 'nosuch'" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert not background.pids() and not dev_servers(background.db)
    assert not (background.run_dir / "temporal.json").exists()


def test_a_zombie_keeper_is_not_alive() -> None:
    from trawl.starter.embedded import _alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])  # not reaped until child.wait()
    wait_until(lambda: Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z",
               "the child to exit (a zombie)")
    assert not _alive(child.pid)  # exited, a zombie until reaped: not waited on as if running
    child.wait()
    assert not _alive(child.pid)


def test_a_crawl_without_input_starts_no_server(background: Background) -> None:
    refused = background.trawl("crawl")  # no URLs, no file, no source: refused before any server
    assert refused.returncode == 2 and "no URLs given" in refused.stderr, refused.stderr
    assert not (background.run_dir / "temporal.log").exists() and not background.pids()


def test_the_first_command_does_its_items_itself_and_the_background_worker_starts_as_it_ends(
        background: Background, sim: Simulator) -> None:
    # Its worker's imports would take the cores the first crawl needs: the command's own worker (a
    # one-shot's identity) does its items, and the background worker waits until it ends.
    sim.add_file("/media/first.mp4", MediaFile("mp4", "background-first", 400_000), FileBehaviour(throttle_bps=200_000))
    sim.add_file("/media/second.mp4", MediaFile("mp4", "background-second", 100_000))
    proc = subprocess.Popen([TRAWL, "crawl", sim.url("/media/first.mp4")], env=background.env,
                            cwd=background.tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: sim.bytes_sent("/media/first.mp4") > 100_000, "the first download to be under way",
                   timeout=DEADLINE)
        assert not (background.run_dir / "worker-state.json").exists()  # no background worker yet
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "committed" in out, (out, err)
    said = [line for line in err.splitlines() if "run in the background" in line]
    assert len(said) == 1 and "started now" in said[0], err
    identities = background.activity_identities()
    assert identities and all(name.endswith("/one-shot") for name in identities), identities
    # Asked for at the server's start: the first generation, never replaced; started as it ended.
    assert background.worker_state()["generation"] == 1
    log = (background.run_dir / "worker.log").read_text()
    assert log.count("the background worker starts") == 1 and "unreachable" not in log
    second = background.trawl("crawl", sim.url("/media/second.mp4"))
    assert second.returncode == 0, second.stderr
    assert any(name.endswith("/background") for name in background.activity_identities())


def test_a_first_command_killed_mid_crawl_leaves_its_crawl_to_the_background_worker(
        background: Background, sim: Simulator) -> None:
    # Killed (SIGKILL: no clean-up of its own runs), it lets go of the lock that kept the
    # background worker waiting, and its crawl's items go on there.
    sim.add_file("/media/slow-first.mp4", MediaFile("mp4", "background-slow-first", 600_000),
                 FileBehaviour(throttle_bps=200_000))
    proc = subprocess.Popen([TRAWL, "crawl", sim.url("/media/slow-first.mp4")], env=background.env,
                            cwd=background.tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: sim.bytes_sent("/media/slow-first.mp4") > 50_000, "the slow download to start",
                   timeout=DEADLINE)
        proc.kill()
        proc.wait(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
    background.worker_state()

    def committed() -> bool:  # the data directory's catalog held nothing before: one item, this one
        items = background.items()
        return len(items) == 1 and "slow-first" in items[0]["canonical_url"]

    wait_until(committed, "the killed command's item committed by the background worker", timeout=DEADLINE)


def test_a_first_detached_crawl_leaves_its_items_to_the_background_worker(background: Background,
                                                                         files: list[str]) -> None:
    detached = background.trawl("crawl", "--detach", files[0])
    assert detached.returncode == 0, detached.stderr
    assert "run in the background" in detached.stderr
    background.worker_state()
    wait_until(lambda: len(background.items()) == 1, "the detached crawl's item committed", timeout=DEADLINE)


def test_the_first_commands_own_worker_gives_way_to_a_background_worker_with_other_settings(
        background: Background, sim: Simulator, files: list[str]) -> None:
    # 8 s: the second command starts its worker (its imports, under a loaded CI: seconds) before
    # the first command's download could end (4 s was seen to end first, at -n 6).
    sim.add_file("/media/long-first.mp4", MediaFile("mp4", "background-long-first", 1_600_000),
                 FileBehaviour(throttle_bps=200_000))
    first = subprocess.Popen([TRAWL, "crawl", sim.url("/media/long-first.mp4")], env=background.env,
                             cwd=background.tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: sim.bytes_sent("/media/long-first.mp4") > 50_000, "the first download to start",
                   timeout=DEADLINE)
        # A limit the first command's own worker would not apply: its worker stops before this
        # command's items start, so they meet the limit (done by the first's, it would commit).
        small = background.trawl("crawl", files[1], TRAWL_DOWNLOAD__MAX_FILE_SIZE="100K")
        out, err = first.communicate(timeout=DEADLINE)
    finally:
        if first.poll() is None:
            first.kill()
    assert small.returncode != 0 and "too_large" in small.stdout, small.stdout + small.stderr
    assert "another command asked for a background worker with other settings" in err, err
    # Its own item goes on in the new worker, under its settings, as when a background worker is
    # replaced: 1.6 MB meets the 100K limit there.
    assert "too_large" in out, (out, err)


def test_the_keeper_stops_a_worker_no_longer_asked_for(tmp_path: Path) -> None:
    from trawl.settings import load_settings
    from trawl.starter.embedded import _BackgroundWorker, background_worker_settings

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    settings = load_settings(data_dir=tmp_path, temporal={"address": f"127.0.0.1:{free_port()}"})
    (run_dir / "worker.json").write_text(json.dumps({"generation": 1, "key": "k",
                                                     "settings": background_worker_settings(settings)}))
    worker = _BackgroundWorker(run_dir, lambda: None)
    worker.tend()
    assert worker.proc is not None and worker.proc.poll() is None  # waiting for its server
    proc = worker.proc
    try:
        (run_dir / "worker.json").unlink()  # EmbeddedServer.retract_worker
        worker.tend()
        assert worker.proc is None and proc.poll() is not None
        assert not (run_dir / "worker-state.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
