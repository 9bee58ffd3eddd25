"""verify: size, platform md5, content sniffing (and in strict mode sha256 from disk) of a download."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from temporalio import activity

from trawl.activities.application_errors import classified
from trawl.activities.liveness import heartbeating
from trawl.contracts import VerifyInput, VerifyResult
from trawl.verify import verify_file


class VerifyActivities:
    def __init__(self, max_delay: timedelta, max_attempts: int = 0, rehash: bool = False) -> None:
        """``rehash``: re-read and re-hash the whole file (``download.verify_rehash``)."""
        self.max_delay = max_delay
        self.max_attempts = max_attempts
        self.rehash = rehash

    @activity.defn(name="verify")
    @classified(lambda self: self.max_delay)
    @heartbeating
    def verify(self, inp: VerifyInput) -> VerifyResult:
        expected = inp.asset.expected_size if inp.asset.expected_size is not None else inp.download.total
        # A segment lasts its own length, not the item's (0: a length the platform did not give).
        duration = inp.duration if inp.asset.duration is None else inp.asset.duration or None
        checked = verify_file(
            Path(inp.download.path),
            kind=inp.asset.kind,
            sha256=inp.download.sha256,
            size=inp.download.size,
            expected_size=expected,
            expected_md5=inp.asset.expected_md5,
            expected_duration=duration,
            rehash=self.rehash,
        )
        return VerifyResult(asset_name=inp.asset.name, sniffed=checked.sniffed, mime=checked.mime)
