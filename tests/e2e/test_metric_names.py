"""The metric names the docs document are the names a real `trawl worker` exposes on /metrics."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from temporalio.client import Client

from trawl.starter.client import item_result, start_item
from tests.conftest import make_settings
from tests.e2e.test_cli import trawl_env
from tests.polling import until
from tests.worker.test_supervisor import free_ports
from trawl.platforms.registry import default_registry
from trawl.simulator import MediaFile, Simulator
from trawl.simulator import faults
from trawl.simulator.demo import og_page

TRAWL = str(Path(sys.executable).parent / "trawl")
REPO = Path(__file__).resolve().parents[2]


def readme_metrics() -> dict[str, str]:
    """Metric name -> "counter" or "histogram", from the metrics paragraph of docs/logs.md."""
    text = (REPO / "docs" / "logs.md").read_text()
    start = text.index("serve Prometheus metrics")
    paragraph = text[start:text.index("Scrape it with", start)]
    found = {}
    for name in re.findall(r"`(trawl_[a-z_]+)(?:\{[^}]*\})?`", paragraph):
        found[name] = "histogram" if re.search(rf"histogram `{name}\b", paragraph) else "counter"
    return found


def families(exposition: str) -> dict[str, str]:
    """Metric family -> type, from the `# TYPE` lines of a Prometheus text exposition."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", exposition, re.MULTILINE))


def test_readme_lists_the_four_metrics() -> None:
    assert readme_metrics() == {
        "trawl_items_total": "counter",
        "trawl_bytes_downloaded_total": "counter",
        "trawl_activity_failures_total": "counter",
        "trawl_download_duration_seconds": "histogram",
    }


async def test_exposed_names_are_the_readme_names(temporal_client: Client, tmp_path: Path, temporal_address: str,
                                                  sim: Simulator) -> None:
    # The page answers 500 once (one trawl_activity_failures sample), then the item commits.
    sim.add_file("/cdn/metric.mp4", MediaFile("mp4", "metric-names", 120_000))
    sim.add_page("/watch/metric", og_page("Metric names", "/cdn/metric.mp4"))
    sim.faults.add(r"/watch/metric", faults.status(500))
    settings = make_settings(tmp_path, temporal_address, retry={
        "fetch": {"initial_interval": "100ms", "maximum_interval": "1s"}})
    port = free_ports(1)
    env = trawl_env(tmp_path, temporal_address, TRAWL_WORKER__METRICS_HOST="127.0.0.1",
                    TRAWL_WORKER__METRICS_PORT=str(port),
                    TRAWL_TEMPORAL__TASK_QUEUE_PREFIX=settings.temporal.task_queue_prefix,
                    TRAWL_DATA_DIR=str(settings.data_dir))
    if settings.catalog.url:
        env["TRAWL_CATALOG__URL"] = settings.catalog.url
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen([TRAWL, "worker"], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        started = await start_item(temporal_client, settings, default_registry(), sim.url("/watch/metric"))
        result = await asyncio.wait_for(item_result(started.handle, ""), 120)
        assert result.outcome == "committed"
        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
                return resp.read().decode()

        # The exporter may lag the workflow's completion slightly.
        exposition = await until(
            scrape, lambda exposition: "README's metrics on /metrics; missing: "
            f"{sorted(set(readme_metrics()) - set(families(exposition)))}", 30, every=0.5,
            holds=lambda exposition: set(readme_metrics()) <= set(families(exposition)))
    finally:
        worker.terminate()
        worker.wait(timeout=60)

    exposed = {name: kind for name, kind in families(exposition).items() if name.startswith("trawl_")}
    assert exposed == readme_metrics(), (worker.returncode, exposed)
    lines = exposition.splitlines()
    # A histogram in seconds: the name ends in _seconds and carries the platform label.
    assert any(line.startswith('trawl_download_duration_seconds_count{') and 'platform="generic"' in line
               for line in lines), [line for line in lines if line.startswith("trawl_download")]
    assert any(line.startswith("trawl_download_duration_seconds_bucket{") and 'le="+Inf"' in line for line in lines)
    assert not any(line.startswith("trawl_download_duration_bucket") for line in lines)
    assert any(line.startswith("trawl_activity_failures_total{") and 'error_class="http_5xx"' in line
               and 'stage="fetch"' in line for line in lines)
    assert any(line.startswith("trawl_items_total{") and 'outcome="committed"' in line for line in lines)
