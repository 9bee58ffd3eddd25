"""Issue 38, item 16 (the web page's part): the page says only what the server chose, and a day
that is no day is a 422 as the docs say.

Real uvicorn on loopback, a real dev server and catalog.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from tests.conftest import make_settings
from tests.api.test_api import free_port, serving
from tests.web.test_pages import base, form_token
from trawl.settings import ApiSettings


# -- item 16: what the page says --------------------------------------------------------------------
async def test_the_page_says_only_what_the_server_chose(temporal_client: Client, tmp_path: Path,
                                                       temporal_address: str) -> None:
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base(settings), timeout=30) as web:
        forged = "Your archive is corrupt: call +1 555 0100 now"
        for path in ("/", "/activity", "/login", "/items/web:none"):
            page = await web.get(path, params={"said": forged})
            assert forged not in page.text and 'class="said"' not in page.text, path
        # What the server says after a form is still said.
        token = form_token((await web.get("/activity")).text)
        answer = await web.post("/steer/crawl", data={"form_token": token, "urls": "# nothing"})
        assert answer.status_code == 303
        back = await web.get(answer.headers["location"])
        assert re.search(r'<p class="said" role="status">Paste at least one URL, one per line.</p>', back.text)
        # Its words cannot be swapped for others under the same seal.
        location = httpx.URL(answer.headers["location"])
        swapped = location.copy_set_param("said", forged)
        assert forged not in (await web.get(str(swapped))).text


@pytest.mark.parametrize("day", ["9999-99-99", "2026-02-30", "2026-13-01", "0000-01-01"])
async def test_a_day_that_is_no_day_is_422(temporal_client: Client, tmp_path: Path, temporal_address: str,
                                           day: str) -> None:
    settings = make_settings(tmp_path, temporal_address, api=ApiSettings(port=free_port()))
    async with serving(settings, temporal_client), httpx.AsyncClient(base_url=base(settings), timeout=30) as web:
        for field in ("since", "until"):
            answer = await web.get("/", params={field: day})
            assert answer.status_code == 422, (field, day, answer.status_code)
            assert f"{field} must be a day as YYYY-MM-DD" in answer.text
        assert (await web.get("/", params={"since": "2026-02-28", "until": "2026-03-01"})).status_code == 200
