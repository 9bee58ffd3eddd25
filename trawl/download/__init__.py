"""Downloads to a ``.part`` file, resumably, one downloader per protocol (yt-dlp's downloader map).

An asset says which protocol its URLs need (:attr:`trawl.models.Asset.protocol`);
:func:`downloader_for` picks the downloader from :data:`DOWNLOADERS`. Each is a
:class:`Downloader`: built the same way (``from_settings``), reading its own state back from
heartbeat details (``previous_state``) and downloading with
``download(urls, part, headers=, expected_size=, previous=)`` to a :class:`DownloadOutcome`,
raising :class:`Stopped` when asked to stop.

Modules, each importing only those listed before it:

- :mod:`~trawl.download.state`: what they share: resume state, the state record and partial
  file beside each other, writing and hashing, :class:`Stopped`, :class:`DownloadOutcome`.
- :mod:`~trawl.download.throttle`: the bandwidth limit.
- :mod:`~trawl.download.space`: the room of a file of known size, taken on the work directory's
  filesystem before its bytes are written.
- :mod:`~trawl.download.fastpath`: bodies read straight from the socket and wider httpcore reads,
  on private library internals, behind one switch (:data:`trawl.download.fastpath.ENABLED`).
- :mod:`~trawl.download.segmented`: one file over several connections (a plain HTTP download
  that finds it worth it hands over to it).
- :mod:`~trawl.download.http`: plain HTTP, one file (``http``).
- :mod:`~trawl.download.hls`: an HLS stream into one file (``hls``); it shares the primitives
  and imports nothing of the HTTP downloaders. The playlists it reads are :mod:`trawl.hls_playlists`'s.
- :mod:`~trawl.download.live`: a live HLS stream recorded until it ends (``hls-live``), segment
  by segment through the HLS downloader's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from trawl.download.hls import HlsDownloader, HlsState, discard_hls
from trawl.download.http import HttpDownloader
from trawl.download.live import LIVE_PROTOCOL, LiveHlsRecorder
from trawl.download.segmented import HostSlots
from trawl.download.state import (
    DownloadOutcome,
    ResumeState,
    Stopped,
    discard,
    file_sha256,
    load_state,
    save_state,
    state_path,
    verified_path,
)
from trawl.errors import UnsupportedUrl

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import httpx

    from trawl.settings import DownloadSettings


class Downloader(Protocol):
    """What every downloader of :data:`DOWNLOADERS` offers the download activity.

    Its state (what ``heartbeat`` receives, ``previous_state`` returns and ``download`` takes
    back as ``previous``) is its own dataclass, so it is ``Any`` here.
    """

    @classmethod
    def from_settings(cls, client: httpx.Client, settings: DownloadSettings, *, heartbeat: Callable[[Any], None],
                      should_stop: Callable[[], bool], platform: str = "", quality: int = 0, limit_rate: int = 0,
                      host_slots: HostSlots | None = None) -> Downloader:
        """A downloader as ``settings`` set it up for one asset; each takes the options it uses."""
        ...

    @staticmethod
    def previous_state(details: object, urls: list[str]) -> Any:  # noqa: ANN401 - the downloader's own state
        """The last attempt's state in its heartbeat ``details``, or None."""
        ...

    def download(self, urls: list[str], part: Path, *, headers: dict[str, str] | None = None,
                 expected_size: int | None = None, previous: Any = None) -> DownloadOutcome:  # noqa: ANN401
        """Download the first of ``urls`` that works into ``part``."""
        ...


# Protocol (``Asset.protocol``) -> the downloader of its URLs.
DOWNLOADERS: dict[str, type[Downloader]] = {
    "http": HttpDownloader,
    "hls": HlsDownloader,
    LIVE_PROTOCOL: LiveHlsRecorder,
}


def downloader_for(protocol: str) -> type[Downloader]:
    """The downloader of ``protocol``'s URLs.

    Raises:
        UnsupportedUrl: no downloader speaks it (a resolver named a protocol trawl lacks).
    """
    try:
        return DOWNLOADERS[protocol]
    except KeyError:
        raise UnsupportedUrl(f"no downloader for protocol {protocol!r} (known: {', '.join(DOWNLOADERS)})") from None


__all__ = [
    "DOWNLOADERS",
    "DownloadOutcome",
    "Downloader",
    "HttpDownloader",
    "HlsDownloader",
    "HlsState",
    "LIVE_PROTOCOL",
    "LiveHlsRecorder",
    "HostSlots",
    "ResumeState",
    "Stopped",
    "discard",
    "discard_hls",
    "downloader_for",
    "file_sha256",
    "load_state",
    "save_state",
    "state_path",
    "verified_path",
]
