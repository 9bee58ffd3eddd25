"""``trawl config``: the settings in effect and where everything is, without starting anything."""

from __future__ import annotations

import argparse
import json
from typing import Any

from trawl.errors import redact
from trawl.paths import config_files
from trawl.settings import Settings, settings_json

# Settings whose values are secrets: shown as set or not, never themselves.
SECRETS = frozenset({"api_key", "token", "password", "secret"})


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("***" if v and any(word in k for word in SECRETS) else _masked(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, str):
        return redact(value)  # a proxy's user:password@ (net.proxy, net.proxies)
    return value


def background(settings: Settings) -> dict[str, Any]:
    """The embedded server of the data directory as its run state records it (nothing is started)."""
    from trawl.starter.embedded import _is_dev_server, _pid, _read_json

    run_dir = settings.data_dir / "run"
    state = _read_json(run_dir / "temporal.json")
    if state is None or not _is_dev_server(_pid(state)):
        return {"running": False}
    worker = _read_json(run_dir / "worker-state.json") or {}
    return {"running": True, "pid": _pid(state), "address": state.get("address"),
            "web_ui": f"http://127.0.0.1:{state.get('ui_port')}", "lingers": bool(state.get("idle_s")),
            "worker_pid": worker.get("pid")}


def paths(settings: Settings) -> dict[str, Any]:
    run_dir = settings.data_dir.resolve() / "run"
    return {
        "data_dir": str(settings.data_dir.resolve()),
        "data_dir_from": "default" if "data_dir" not in settings.model_fields_set else "settings",
        "config_files": {str(path.resolve()): path.is_file() for path in config_files()},
        "catalog": settings.catalog_url.split("@")[-1],
        "blobs": settings.storage.url if settings.storage.url.startswith("s3://") else str(settings.blobs_dir.resolve()),
        "work_dir": str(settings.work_dir.resolve()),
        "temporal_address": settings.temporal.address,
        "logs": {name: str(run_dir / f"{name}.log") for name in ("temporal", "worker", "commands")},
    }


def _minutes(settings: Settings) -> str:
    seconds = settings.temporal.idle_timeout.total_seconds()
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def cmd_config(args: argparse.Namespace, settings: Settings) -> int:
    found = paths(settings)
    server = background(settings)
    if args.json:
        print(json.dumps({"paths": found, "background": server,
                          "settings": _masked(json.loads(settings_json(settings)))}, indent=1))
        return 0
    files = ", ".join(f"{path} ({'read' if read else 'none'})" for path, read in found["config_files"].items())
    origin = "the default: $XDG_DATA_HOME/trawl" if found["data_dir_from"] == "default" else "TRAWL_DATA_DIR or data_dir"
    rows = [
        ("data dir", f"{found['data_dir']}  ({origin})"),
        ("config", files),
        ("catalog", found["catalog"]),
        ("blobs", found["blobs"]),
        ("partials", found["work_dir"]),
        ("temporal", f"{found['temporal_address']}, namespace {settings.temporal.namespace}, task queues "
                     f"{settings.temporal.task_queue_prefix}-*"),
        ("background", (f"running: server pid {server['pid']} at {server['address']}, Web UI {server['web_ui']}"
                        + (f", worker pid {server['worker_pid']}" if server.get("worker_pid") else "")
                        + "; `trawl down` stops it") if server["running"]
         else "nothing running" + (f" (one-shot commands start it; it stops after {_minutes(settings)} unused)"
                                   if settings.temporal.idle_timeout else "")),
        ("logs", found["logs"]["temporal"].removesuffix("temporal.log") + "{temporal,worker,commands}.log"),
    ]
    for name, value in rows:
        print(f"{name:<11} {value}")
    print("every setting: trawl config --json; what each means: docs/settings.md")
    return 0


__all__ = ["cmd_config"]
