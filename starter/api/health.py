"""``/healthz``: Temporal and the catalog reachable."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from starter.api.errors import declared
from starter.api.models import Health
from starter.api.state import ApiState, api_state

router = APIRouter(tags=["health"], responses=declared(401, 429))


@router.get("/healthz", response_model=Health,
            responses={503: {"model": Health, "description": "Temporal or the catalog is unreachable."}})
async def healthz(state: ApiState = Depends(api_state)) -> JSONResponse:
    checks = {}
    try:
        checks["temporal"] = "ok" if await state.client.service_client.check_health() else "unhealthy"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        checks["temporal"] = f"unreachable: {type(exc).__name__}"
    try:
        state.catalog.count()
        checks["catalog"] = "ok"
    except Exception as exc:  # noqa: BLE001
        checks["catalog"] = f"unreachable: {type(exc).__name__}"
    healthy = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if healthy else "degraded", **checks}, status_code=200 if healthy else 503)
