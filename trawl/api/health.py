"""``/healthz``: Temporal and the catalog reachable, answered within ``HEALTH_WAIT_S`` whatever
either does. Open to all, token or not (a wrong token is still 401)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from trawl.api.error_responses import declared
from trawl.api.models import Health
from trawl.api.state import ApiState, api_state

# Below the catalog's connect timeout (10 s): a check that has not answered by then reports
# the service down rather than keeping a load balancer's probe waiting.
HEALTH_WAIT_S = 5.0

router = APIRouter(tags=["health"], responses=declared(401, 429))


@router.get("/healthz", response_model=Health,
            responses={503: {"model": Health, "description": "Temporal or the catalog is unreachable."}})
async def healthz(state: ApiState = Depends(api_state)) -> JSONResponse:
    temporal, catalog = await asyncio.gather(_check(state.client.service_client.check_health()),
                                             _check(_catalog_answers(state)))
    checks = {"temporal": temporal, "catalog": catalog}
    healthy = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if healthy else "degraded", **checks}, status_code=200 if healthy else 503)


async def _check(healthy: Awaitable[bool]) -> str:
    try:
        return "ok" if await asyncio.wait_for(healthy, HEALTH_WAIT_S) else "unhealthy"
    except TimeoutError:
        return f"unreachable: no answer within {HEALTH_WAIT_S:g} s"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"unreachable: {type(exc).__name__}"


async def _catalog_answers(state: ApiState) -> bool:
    """Whether the catalog answers a count. One count is shared by the checks made while it
    runs, so a catalog that does not answer holds one thread however often it is checked; it is
    shielded, so a check that stops waiting leaves it running (a thread cannot be stopped) for
    the next check to find."""
    if state.catalog_probe is None or state.catalog_probe.done():
        state.catalog_probe = asyncio.ensure_future(state.in_catalog(state.catalog.count))
        # Its outcome is read here or by a later check; a probe nobody awaited any more is no error.
        state.catalog_probe.add_done_callback(lambda probe: probe.cancelled() or probe.exception())
    await asyncio.shield(state.catalog_probe)
    return True
