"""What crosses Temporal, made from the core's answers (trawl.routing) and read back (trawl.contracts)."""

from __future__ import annotations

import hashlib

from trawl.contracts import CrawlItem, Refusal, StoredAsset
from trawl.platforms.registry import default_registry
from trawl.routing import route_all, routed
from trawl.storage.protocol import blob_key


def test_a_result_recorded_without_keys_names_its_blob_by_the_stores_key() -> None:
    sha = hashlib.sha256(b"clip").hexdigest()
    assert StoredAsset("video", "video", sha, 4).key == blob_key(sha)
    assert StoredAsset("video", "video", sha, 4, key="sha256/elsewhere").key == "sha256/elsewhere"


def test_urls_are_routed_in_order_with_their_refusals_apart() -> None:
    registry = default_registry()
    urls = ["https://example.com/clip.mp4", "not a url", "https://example.com/other.mp4"]
    every = list(routed(registry, urls))
    assert [type(r) for r in every] == [CrawlItem, Refusal, CrawlItem]
    items, refusals = route_all(registry, urls)
    assert [i.url for i in items] == [urls[0], urls[2]]
    assert [(r.index, r.url, r.error_class) for r in refusals] == [(1, "not a url", "unsupported_url")]
