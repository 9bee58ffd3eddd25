"""A download takes its file's room on the work directory's filesystem first (trawl.download.space),
on a real 8 MiB tmpfs against the simulator: one that can never fit fails at once, one without
room now writes nothing and waits, while the others finish."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.smallfs import small_filesystem
from trawl.download.http import HttpDownloader
from trawl.download.state import ResumeState, Stopped, file_sha256
from trawl.errors import StorageError, TooLarge
from trawl.simulator import FileBehaviour, MediaFile, Simulator

FS_SIZE = 8 * 1024 * 1024
KEEP_FREE = 256 * 1024


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    with small_filesystem(tmp_path / "work", FS_SIZE) as path:
        yield path


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


def make(client: httpx.Client, **kw) -> HttpDownloader:
    return HttpDownloader(client, max_file_size=1 << 40, heartbeat_every=0, keep_free=KEEP_FREE, **kw)


def free(path: Path) -> int:
    vfs = os.statvfs(path)
    return vfs.f_bavail * vfs.f_frsize


def test_a_file_larger_than_the_filesystem_fails_as_too_large(sim: Simulator, client: httpx.Client,
                                                               work: Path) -> None:
    sim.add_file("/huge.mp4", MediaFile("mp4", "huge", 10_000_000))
    part = work / "item" / "video.part"
    with pytest.raises(TooLarge, match=r"video is 9\.5 MiB \(10000000 bytes\): it cannot fit the work directory's "
                                       r"filesystem .*8\.0 MiB usable in all"):
        make(client).download([sim.url("/huge.mp4")], part, expected_size=10_000_000)
    assert sim.stats["/huge.mp4"].requests == 0  # known from the platform: no request at all
    with pytest.raises(TooLarge, match="cannot fit"):  # known from the answer: before a byte is written
        make(client).download([sim.url("/huge.mp4")], part)
    assert not part.exists()
    assert free(work) == FS_SIZE


def test_a_download_without_room_writes_nothing_while_one_that_fits_finishes(sim: Simulator, client: httpx.Client,
                                                                            work: Path) -> None:
    big, middle, small = (MediaFile("mp4", "big", 5_000_000), MediaFile("mp4", "middle", 3_500_000),
                          MediaFile("mp4", "small", 1_000_000))
    for name, media in (("big", big), ("middle", middle), ("small", small)):
        sim.add_file(f"/{name}.mp4", media)
    parts = {name: work / name / "video.part" for name in ("big", "middle", "small")}
    # The big download is held after its first bytes, as a slow one would be.
    started, go_on = threading.Event(), threading.Event()

    def held(state: ResumeState) -> None:
        started.set()
        go_on.wait(30)

    result: list[object] = []
    big_run = threading.Thread(target=lambda: result.append(_outcome(make(client, heartbeat=held), sim, "big",
                                                                     parts["big"])))
    big_run.start()
    try:
        assert started.wait(30)
        # 3.5 MB would fit beside the big file's bytes so far, not beside the room it took.
        with pytest.raises(StorageError, match=r"No space left on device for video: it needs 3\.3 MiB more"):
            make(client).download([sim.url("/middle.mp4")], parts["middle"], expected_size=3_500_000)
        with pytest.raises(StorageError, match="No space left"):  # size known only from the answer
            make(client).download([sim.url("/middle.mp4")], parts["middle"])
        assert not parts["middle"].exists() or parts["middle"].stat().st_size == 0
        assert make(client).download([sim.url("/small.mp4")], parts["small"]).sha256 == small.sha256()
    finally:
        go_on.set()
        big_run.join(60)
    [big_outcome] = result
    assert not isinstance(big_outcome, Exception), big_outcome
    assert big_outcome.sha256 == big.sha256() == file_sha256(parts["big"])
    for name in ("big", "small"):  # committed: their partial files leave the work directory
        parts[name].unlink()
    assert make(client).download([sim.url("/middle.mp4")], parts["middle"]).sha256 == middle.sha256()


def _outcome(downloader: HttpDownloader, sim: Simulator, name: str, part: Path) -> object:
    try:
        return downloader.download([sim.url(f"/{name}.mp4")], part)
    except Exception as exc:  # noqa: BLE001 - the test looks at it
        return exc


def test_a_stopped_download_holds_only_the_bytes_it_wrote(sim: Simulator, client: httpx.Client, work: Path) -> None:
    sim.add_file("/slow.mp4", MediaFile("mp4", "slow", 6_000_000), FileBehaviour(throttle_bps=4_000_000))
    part = work / "slow" / "video.part"
    offsets: list[int] = []
    with pytest.raises(Stopped):
        make(client, heartbeat=lambda state: offsets.append(state.offset),
             should_stop=lambda: bool(offsets) and offsets[-1] > 500_000).download([sim.url("/slow.mp4")], part)
    kept = part.stat().st_size
    assert 0 < kept < 6_000_000
    # The room of the 6 MB file was given back but for the bytes kept (and the state record).
    assert free(work) >= FS_SIZE - kept - 3 * 4096


def test_a_segmented_download_without_room_leaves_no_file(sim: Simulator, client: httpx.Client, work: Path) -> None:
    media = MediaFile("mp4", "segmented", 5_000_000)
    sim.add_file("/seg.mp4", media)
    other = work / "other.part"
    other.write_bytes(b"\0" * 4_000_000)  # another item's bytes
    part = work / "seg" / "video.part"
    segmented = dict(segments=4, segment_min_size=1 << 20, split_after_s=0)
    with pytest.raises(StorageError, match="No space left"):
        make(client, **segmented).download([sim.url("/seg.mp4")], part)
    assert not part.exists()
    other.unlink()
    out = make(client, **segmented).download([sim.url("/seg.mp4")], part)
    assert out.sha256 == media.sha256() and out.connections > 1


def test_no_allocation_is_tried_without_the_room_and_one_at_a_time(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An allocation that runs out fills the filesystem until it gives the blocks back, and any
    other write meets a full disk meanwhile (seen in CI: another item's first write failed with
    ENOSPC). So none is tried without the room, and a process's reservations take turns: with
    eight threads asking for more than there is, every allocation made had the room it asked."""
    from trawl.download import space

    real = space._FALLOCATE
    assert real is not None  # Linux: the tmpfs allocates
    tried: list[tuple[int, int]] = []  # (bytes asked, bytes free less keep_free when asked)

    def watched(fd: int, mode: int, offset: int, length: int) -> int:
        tried.append((length, free(work) - KEEP_FREE))
        return real(fd, mode, offset, length)

    monkeypatch.setattr(space, "_FALLOCATE", watched)
    size = FS_SIZE // 3
    outcomes: list[str] = []

    def take(n: int) -> None:
        fd = os.open(work / f"{n}.part", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            space.reserve(fd, 0, size, KEEP_FREE, f"file {n}")
            outcomes.append("reserved")
        except StorageError:
            outcomes.append("waiting")
        finally:
            os.close(fd)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["reserved", "reserved"] + ["waiting"] * 6, outcomes
    assert len(tried) == 2 and all(asked <= room for asked, room in tried), tried
    assert free(work) >= KEEP_FREE
