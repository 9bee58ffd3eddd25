"""The activities' tests read what each heartbeat carries, a download's first one included: its
delay (trawl.activities.download.FIRST_BEAT_AFTER_S) has tests of its own, which set it."""

from __future__ import annotations

import pytest

from trawl.activities import download as download_activity


@pytest.fixture(autouse=True)
def beats_from_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(download_activity, "FIRST_BEAT_AFTER_S", 0.0)
