"""The cover as a thumbnail asset, on by default and off per platform (``platforms.<name>.thumbnails``)."""

from __future__ import annotations

import httpx
import pytest

from trawl.platforms.base import ResolveContext
from trawl.platforms.registry import build_registry
from trawl.settings import PlatformSettings, PlatformsSettings
from trawl.simulator import MediaFile, Simulator
from trawl.simulator.demo import og_page


@pytest.mark.parametrize(("thumbnails", "kinds"), [(True, ["video", "thumbnail"]), (False, ["video"])])
def test_generic_og_image_beside_a_video_follows_the_setting(sim: Simulator, thumbnails: bool,
                                                             kinds: list[str]) -> None:
    sim.add_file("/v/a.mp4", MediaFile("mp4", "a", 10_000))
    sim.add_file("/i/a.jpg", MediaFile("jpeg", "a-cover", 1_000))
    sim.add_page("/watch/a", og_page("A", "/v/a.mp4", image="/i/a.jpg"))
    sim.add_page("/photo/b", og_page("B", None, image="/i/a.jpg"))
    registry = build_registry(PlatformsSettings(generic=PlatformSettings(thumbnails=thumbnails)))
    with httpx.Client(follow_redirects=True) as client:
        ctx = ResolveContext(client, 1 << 20)
        assert [a.kind for a in registry.resolver_for(sim.url("/watch/a")).resolve(sim.url("/watch/a"), ctx).assets] \
            == kinds
        # An image that is the page's only media is the item, whatever the setting.
        assert [a.kind for a in registry.resolver_for(sim.url("/photo/b")).resolve(sim.url("/photo/b"), ctx).assets] \
            == ["image"]


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from trawl.settings import Settings

    monkeypatch.setenv("TRAWL_PLATFORMS__BILIBILI__THUMBNAILS", "false")
    settings = Settings()
    assert settings.platforms.bilibili.thumbnails is False and settings.platforms.weibo.thumbnails is True
