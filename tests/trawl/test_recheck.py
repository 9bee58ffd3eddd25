"""Re-checks (``trawl recheck``, ``POST /api/v1/items/{key}/recheck``) against the simulated
Bilibili site, on SQLite and PostgreSQL: a deleted video and a private one are recorded gone
upstream with the platform's reason and the time, their copies kept; one still there is marked
checked; a platform that cannot answer records nothing; an item that comes back is no longer gone."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.api.test_api import free_port, serving
from tests.conftest import make_settings
from tests.e2e.test_cli import run, trawl_env
from tests.e2e.test_platforms import platform_env
from trawl.platforms.base import ResolveContext
from trawl.platforms.bilibili.site import PRIVATE_VIDEO, install_bilibili_site
from trawl.platforms.registry import build_registry
from trawl.recheck import check, recheck
from trawl.settings import ApiSettings
from trawl.simulator import Simulator
from trawl.simulator.demo import og_page
from trawl.storage.catalog import Catalog, CommittedAsset

THERE, DELETED = "BV117411r7R1", "BV17x411w7KC"


def commit(catalog: Catalog, key: str, url: str) -> None:
    catalog.commit_item(canonical_key=key, platform=key.split(":")[0], canonical_url=url, source_url=url,
                        title=key, uploader=None, duration=None, published_at=None, metadata={}, workflow_id=None,
                        assets=[CommittedAsset("video", "video", "0" * 64, 1, "video/mp4", "sha256/00/00/" + "0" * 64)])


@pytest.fixture
def archived(sim: Simulator, catalog: Catalog):
    site = install_bilibili_site(sim)
    for bvid in (THERE, DELETED, PRIVATE_VIDEO):
        commit(catalog, f"bilibili:{bvid}", site.url(bvid))
    sim.add_page("/flaky", "down", status=503)
    commit(catalog, "generic:flaky", sim.url("/flaky"))
    settings = make_settings(Path("/nonexistent"), "127.0.0.1:1", catalog_url=catalog.url)
    registry = build_registry(settings.platforms.model_copy(update={"bilibili": site.settings()}))
    return site, registry


def test_gone_items_are_recorded_with_the_platform_s_reason_and_kept(archived, catalog: Catalog) -> None:
    site, registry = archived
    with httpx.Client() as http:
        ctx = ResolveContext(http, 5 * 1024 * 1024)
        found = {c.canonical_key: c for c in recheck(catalog, registry, ctx, catalog.committed())}
        assert {k: c.outcome for k, c in found.items()} == {
            f"bilibili:{THERE}": "there", f"bilibili:{DELETED}": "gone", f"bilibili:{PRIVATE_VIDEO}": "gone",
            "generic:flaky": "unknown"}
        assert found[f"bilibili:{DELETED}"].reason.startswith("not_found: ") and "-404" in found[
            f"bilibili:{DELETED}"].reason
        assert found[f"bilibili:{PRIVATE_VIDEO}"].reason.startswith("forbidden: ") and "62012" in found[
            f"bilibili:{PRIVATE_VIDEO}"].reason
        deleted = catalog.get(f"bilibili:{DELETED}")
        assert deleted is not None and deleted.gone_at and deleted.checked_at and deleted.assets  # kept
        there = catalog.get(f"bilibili:{THERE}")
        assert there is not None and there.gone_at is None and there.checked_at
        flaky = catalog.get("generic:flaky")
        assert flaky is not None and flaky.checked_at is None and flaky.gone_at is None  # nothing recorded
        from trawl.storage.library import LibraryQuery

        assert sorted(i.canonical_key for i in catalog.library(LibraryQuery(gone=True)).items) == [
            f"bilibili:{DELETED}", f"bilibili:{PRIVATE_VIDEO}"]
        # checked again: since when it is gone stays the first finding's
        first = deleted.gone_at
        list(recheck(catalog, registry, ctx, [deleted]))
        assert catalog.get(f"bilibili:{DELETED}").gone_at == first  # type: ignore[union-attr]
        # an item found gone that the platform shows again: the mark is lifted
        site.sim.add_page("/back", og_page("Back again", "/back.mp4"))
        commit(catalog, "generic:back", site.sim.url("/back"))
        catalog.record_check("generic:back", "not_found: HTTP 404", datetime.now(UTC))
        assert catalog.get("generic:back").gone_at  # type: ignore[union-attr]
        assert [c.outcome for c in recheck(catalog, registry, ctx, [catalog.get("generic:back")])] == ["there"]
        assert catalog.get("generic:back").gone_at is None  # type: ignore[union-attr]
        assert check(registry, ctx, flaky).outcome == "unknown"


def test_the_command_and_the_api_recheck(archived, catalog: Catalog, tmp_path: Path, temporal_address: str,
                                         temporal_client: Client) -> None:
    site, _ = archived
    env = trawl_env(tmp_path, temporal_address, TRAWL_CATALOG__URL=catalog.url,
                    **platform_env("bilibili", site.settings()))
    done = run(["recheck", "--json", f"bilibili:{DELETED}", f"bilibili:{THERE}"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert [(r["canonical_key"], r["outcome"]) for r in map(json.loads, done.stdout.splitlines())] == [
        (f"bilibili:{DELETED}", "gone"), (f"bilibili:{THERE}", "there")]
    assert done.stderr.strip().splitlines()[-1] == "1 there, 1 gone upstream, 0 could not be checked"
    everything = run(["recheck", "--platform", "generic"], env, tmp_path)
    assert everything.returncode == 1 and everything.stdout.startswith("unknown  generic:flaky  http_5xx")
    missing = run(["recheck", "bilibili:nothing"], env, tmp_path)
    assert missing.returncode != 0 and "no such item in the catalog: bilibili:nothing" in missing.stderr


async def test_the_api_rechecks_one_item(archived, catalog: Catalog, tmp_path: Path, temporal_address: str,
                                         temporal_client: Client) -> None:
    site, _ = archived
    settings = make_settings(tmp_path, temporal_address, catalog_url=catalog.url, api=ApiSettings(port=free_port()))
    settings = settings.model_copy(update={"platforms": settings.platforms.model_copy(
        update={"bilibili": site.settings()})})
    async with serving(settings, temporal_client), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{settings.api.port}", timeout=30) as api:
        answer = await api.post(f"/api/v1/items/bilibili:{PRIVATE_VIDEO}/recheck")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["outcome"] == "gone" and "62012" in body["reason"] and body["gone_at"] and body["checked_at"]
        item = (await api.get(f"/api/v1/items/bilibili:{PRIVATE_VIDEO}")).json()
        assert item["gone_at"] == body["gone_at"] and item["gone_reason"] == body["reason"]
        gone = (await api.get("/api/v1/items", params={"gone": "true"})).json()
        assert [i["canonical_key"] for i in gone["items"]] == [f"bilibili:{PRIVATE_VIDEO}"] and gone["total"] == 1
        assert (await api.post("/api/v1/items/bilibili:nothing/recheck")).status_code == 404
        there = (await api.post(f"/api/v1/items/bilibili:{THERE}/recheck")).json()
        assert there["outcome"] == "there" and there["gone_at"] is None
