"""Issue 38, item 12: an id is checked against its kind. A job route takes item workflows only
and a crawl route crawls only (404 for anything else); steering, the web page's forms included,
acts only on trawl's own workflow types. ``POST /api/v1/jobs/<crawl-id>/cancel`` cancelled the
crawl and answered 503; ``GET /api/v1/jobs/<crawl-id>`` and ``GET /api/v1/crawls/<item-id>``
answered 500.

Real uvicorn on loopback, a real dev server and worker; the only URLs fetched are the simulator's.
"""

from __future__ import annotations

import re
import uuid

import httpx
from temporalio.client import Client, WorkflowExecutionStatus

from tests.api.test_api import api, settings  # noqa: F401 - the API with a worker, and its settings
from trawl.simulator import FileBehaviour, MediaFile, Simulator


async def test_a_job_route_takes_items_only_and_a_crawl_route_crawls_only(
        api: httpx.AsyncClient, sim: Simulator, temporal_client: Client) -> None:
    sim.add_file("/v/kind-item.mp4", MediaFile("mp4", "kind-item", 4_000_000), FileBehaviour(throttle_bps=100_000))
    sim.add_file("/v/kind-crawl.mp4", MediaFile("mp4", "kind-crawl", 4_000_000), FileBehaviour(throttle_bps=100_000))
    job = (await api.post("/api/v1/jobs", json={"url": sim.url("/v/kind-item.mp4")})).json()["id"]
    crawl = (await api.post("/api/v1/crawls", json={"urls": [sim.url("/v/kind-crawl.mp4")]})).json()["id"]
    # A workflow of the same namespace that is no trawl's: no route reads or steers it.
    foreign = f"other-{uuid.uuid4().hex[:8]}"
    await temporal_client.start_workflow("SomebodyElsesWorkflow", id=foreign, task_queue=f"elsewhere-{foreign}")
    try:
        for wrong, kind in ((crawl, "job"), (foreign, "job")):
            for method, path in (("GET", f"/api/v1/jobs/{wrong}"), ("POST", f"/api/v1/jobs/{wrong}/cancel"),
                                 ("POST", f"/api/v1/jobs/{wrong}/pause")):
                answer = await api.request(method, path)
                assert answer.status_code == 404, (method, path, answer.status_code, answer.text)
                assert answer.json() == {"detail": f"no such {kind}: {wrong!r}"}
        for wrong in (job, foreign):
            for method, path, body in (("GET", f"/api/v1/crawls/{wrong}", None),
                                       ("POST", f"/api/v1/crawls/{wrong}/cancel", None),
                                       ("POST", f"/api/v1/crawls/{wrong}/pause", None),
                                       ("POST", f"/api/v1/crawls/{wrong}/urls", {"urls": [sim.url("/v/x.mp4")]})):
                answer = await api.request(method, path, json=body)
                assert answer.status_code == 404, (method, path, answer.status_code, answer.text)
                assert answer.json() == {"detail": f"no such crawl: {wrong!r}"}
        # The web page's buttons go through the same routes.
        token = re.search(r'name="form_token" value="([0-9a-f]{64})"', (await api.get("/activity")).text)
        assert token
        for kind, wrong in (("item", crawl), ("crawl", job), ("item", foreign)):
            steered = await api.post(f"/steer/cancel/{kind}/{wrong}", data={"form_token": token.group(1)})
            said = (await api.get(steered.headers["location"])).text
            assert f"Could not cancel {kind} {wrong}: no such" in said, said
        # Nothing was touched: each still runs, and the right route still reaches it.
        for ident in (job, crawl, foreign):
            desc = await temporal_client.get_workflow_handle(ident).describe()
            assert desc.status == WorkflowExecutionStatus.RUNNING, ident
        assert (await api.get(f"/api/v1/jobs/{job}")).json()["status"] in ("PENDING", "PROCESSING")
        assert (await api.get(f"/api/v1/crawls/{crawl}")).json()["status"] == "RUNNING"
    finally:
        await api.post(f"/api/v1/crawls/{crawl}/cancel")
        await api.post(f"/api/v1/jobs/{job}/cancel")
        await temporal_client.get_workflow_handle(foreign).terminate("test over")
