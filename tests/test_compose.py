"""docker-compose.yml and the Dockerfile, checked by parsing (no Docker engine runs here).

Compose's variable interpolation is reproduced below so the file can be resolved the way
`docker compose` resolves it (all of it, for every command, whichever services are started);
the namespace script of `temporal-admin-tools` runs for real against the test Temporal server
with the Temporal CLI that the test dependencies ship.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from tests.polling import wait_until
from tests.ports import closed_address
from trawl.starter.binding import ApiConfigError, require_safe_binding
from trawl.durations import parse_duration
from trawl.settings import Settings
from trawl.contracts import SEARCH_ATTRIBUTES as ITEM_SEARCH_ATTRIBUTES

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the venv's bin: `temporal` (Temporal CLI) lives here

# The compose variables an operator may set; each has a default, so none is required.
COMPOSE_VARIABLES = {"TRAWL_API__TOKEN", "TRAWL_API__READ_TOKEN", "TEMPORAL_PUBLISH_HOST", "TEMPORAL_UI_PUBLISH_HOST",
                     "TEMPORAL_NAMESPACE_RETENTION", "BLOBS_ACCESS_KEY", "BLOBS_SECRET_KEY"}
LONG_RUNNING = {"postgresql", "seaweedfs", "temporal", "temporal-admin-tools", "temporal-ui", "worker", "api"}
ONE_SHOT = {"temporal-schema", "storage-setup", "setup"}
TALKS_TO_TEMPORAL = {"temporal-ui", "setup", "worker", "api"}


# -- compose interpolation -----------------------------------------------------------------------
class MissingVariable(Exception):
    """A `${VAR:?message}` whose variable is unset: compose refuses the whole file."""


_VARIABLE = re.compile(r"""\$(?:
    (?P<escaped>\$) |
    \{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\} |
    (?P<named>[A-Za-z_][A-Za-z0-9_]*)
)""", re.VERBOSE)


def interpolate_text(text: str, env: dict[str, str], used: set[str]) -> str:
    """One string as compose resolves it: `$$` is a literal `$`, `${X:-d}`, `${X-d}`, `${X:?e}`,
    `${X?e}`, `${X:+r}`, `${X+r}`, `${X}` and `$X` are substituted from ``env``."""

    def substitute(match: re.Match[str]) -> str:
        if match.group("escaped"):
            return "$"
        name = match.group("braced") or match.group("named")
        used.add(name)
        op, arg = match.group("op"), match.group("arg") or ""
        value = env.get(name)
        empty_counts = bool(op) and op.startswith(":")  # ":-" treats "" like unset; "-" does not
        missing = value is None or (empty_counts and value == "")
        if op in (":?", "?"):
            if missing:
                raise MissingVariable(f"{name}: {arg}")
            return value or ""
        if op in (":-", "-"):
            return arg if missing else value or ""
        if op in (":+", "+"):
            return "" if missing else arg
        return value or ""

    return _VARIABLE.sub(substitute, text)


def interpolate(node: Any, env: dict[str, str], used: set[str] | None = None) -> Any:
    used = set() if used is None else used
    if isinstance(node, dict):
        return {key: interpolate(value, env, used) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(value, env, used) for value in node]
    if isinstance(node, str):
        return interpolate_text(node, env, used)
    return node


def raw() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def compose(env: dict[str, str] | None = None) -> dict:
    """The file resolved as `docker compose` would with only ``env`` set."""
    return interpolate(raw(), env or {})


def script(service: dict) -> str:
    """The shell script of a service run as `sh -c <script>`."""
    assert service["entrypoint"] == ["/bin/sh", "-c"]
    (text,) = service["command"]
    return text


def setting_exists(name: str) -> bool:
    """Whether TRAWL_A__B__C names a field of the settings class."""
    model: type[BaseModel] = Settings
    parts = name.removeprefix("TRAWL_").lower().split("__")
    for depth, part in enumerate(parts):
        field = model.model_fields.get(part)
        if field is None:
            return False
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        elif depth != len(parts) - 1:
            return False
    return True


def test_interpolation_matches_compose() -> None:
    used: set[str] = set()
    text = "a$$b|${X:-d}|${Y-d}|${Z:+r}|${W:+r}|$W|${Z}"
    assert interpolate_text(text, {"X": "", "Y": "", "W": "w"}, used) == "a$b|d|||r|w|"
    assert used == {"X", "Y", "Z", "W"}
    assert interpolate_text("${X:?need X}", {"X": "set"}, set()) == "set"
    with pytest.raises(MissingVariable, match="need X"):
        interpolate_text("${X:?need X}", {}, set())
    with pytest.raises(MissingVariable):
        interpolate({"services": {"api": {"environment": {"T": "${T:?set T}"}}}}, {})


# -- services, environment ---------------------------------------------------------------------
def test_services_ports_and_volumes() -> None:
    doc = compose()
    services = doc["services"]
    assert set(services) == LONG_RUNNING | ONE_SHOT
    for name, service in services.items():
        if "image" in service:
            assert re.fullmatch(r"[\w./-]+:\d[\w.-]*", service["image"]), f"{name} image tag is not pinned"
        else:
            assert service["build"] == "."
    assert services["temporal"]["ports"] == ["127.0.0.1:7233:7233"]
    assert services["temporal-ui"]["ports"] == ["127.0.0.1:8233:8080"]
    assert services["api"]["ports"] == ["8000:8000"]
    assert "ports" not in services["worker"]  # scaled: no fixed host port
    for name in ("worker", "api"):
        assert "volumes" not in services[name]  # nothing shared: blobs are in the object store
        assert services[name]["environment"]["TRAWL_STORAGE__URL"].startswith("s3://")
    assert set(doc["volumes"]) == {"postgres", "blobs"}
    assert services["seaweedfs"]["volumes"] == ["blobs:/data"]
    assert services["worker"]["command"] == ["worker"] and services["setup"]["command"] == ["setup"]


def test_every_trawl_variable_is_a_setting_and_validates(monkeypatch) -> None:
    seen = {}
    for service in compose({"TRAWL_API__TOKEN": "compose-token"})["services"].values():
        for key, value in (service.get("environment") or {}).items():
            if key.startswith("TRAWL_"):
                assert setting_exists(key), f"{key} is not a setting"
                seen[key] = str(value)
    assert {"TRAWL_TEMPORAL__ADDRESS", "TRAWL_CATALOG__URL", "TRAWL_DATA_DIR", "TRAWL_API__TOKEN"} <= set(seen)
    assert not setting_exists("TRAWL_NET__NOPE") and not setting_exists("TRAWL_DATA_DIR__X")
    for key, value in seen.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert settings.temporal.address == "temporal:7233" and settings.temporal.embedded is False
    assert settings.catalog_url.startswith("postgresql+psycopg://")
    assert str(settings.data_dir) == "/data"
    assert settings.api.token == "compose-token"


def test_only_documented_variables_and_none_is_required() -> None:
    used: set[str] = set()
    interpolate(raw(), {}, used)  # raises MissingVariable if any `${X:?}` is left
    # Shell variables in the scripts are written `$$X`; a bare `$X` would be one of compose's.
    assert used == COMPOSE_VARIABLES
    text = (REPO / "docker-compose.yml").read_text()
    assert not re.search(r"\$\{[A-Za-z0-9_]+:?\?", text)
    production = (REPO / "docs" / "production.md").read_text()
    for name in COMPOSE_VARIABLES:
        assert name in production, f"{name} is not documented in docs/production.md"
        assert name in text.split("\nname:")[0], f"{name} is not listed in the compose file's header"


def _service_settings(service: dict, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for key in [k for k in os.environ if k.startswith("TRAWL_")]:
        monkeypatch.delenv(key)
    for key, value in service["environment"].items():
        monkeypatch.setenv(key, str(value))
    settings = Settings()
    command = service["command"]
    if "--host" in command:
        api = settings.api.model_copy(update={"host": command[command.index("--host") + 1]})
        settings = settings.model_copy(update={"api": api})
    return settings


def test_workers_scale_without_a_token_and_only_the_api_refuses(monkeypatch) -> None:
    services = compose({})["services"]  # nothing set: `docker compose up --scale worker=4`
    assert "TRAWL_API__TOKEN" not in services["worker"]["environment"]
    assert "TRAWL_API__TOKEN" not in services["setup"]["environment"]
    assert _service_settings(services["worker"], monkeypatch).api.token == ""
    api = _service_settings(services["api"], monkeypatch)
    assert api.api.host == "0.0.0.0" and api.api.token == ""
    with pytest.raises(ApiConfigError, match="TRAWL_API__TOKEN"):
        require_safe_binding(api)
    with_token = _service_settings(compose({"TRAWL_API__TOKEN": "s3cret"})["services"]["api"], monkeypatch)
    assert with_token.api.token == "s3cret" and with_token.api.read_token == ""
    require_safe_binding(with_token)
    both = compose({"TRAWL_API__TOKEN": "s3cret", "TRAWL_API__READ_TOKEN": "r3ad"})["services"]
    assert _service_settings(both["api"], monkeypatch).api.read_token == "r3ad"
    assert "TRAWL_API__READ_TOKEN" not in both["worker"]["environment"]


# -- ports ---------------------------------------------------------------------------------------
def test_temporal_and_ui_are_published_on_loopback_unless_opened_up() -> None:
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            parts = str(port).split(":")
            if name == "api":
                continue  # it does not start without the token, and then every request needs it
            assert len(parts) == 3 and parts[0] == "127.0.0.1", f"{name} publishes {port} beyond loopback"
    opened = compose({"TEMPORAL_PUBLISH_HOST": "10.1.2.3", "TEMPORAL_UI_PUBLISH_HOST": "0.0.0.0"})["services"]
    assert opened["temporal"]["ports"] == ["10.1.2.3:7233:7233"]
    assert opened["temporal-ui"]["ports"] == ["0.0.0.0:8233:8080"]


# -- restart, health, start order ------------------------------------------------------------------
def test_restart_policies() -> None:
    services = compose()["services"]
    for name in LONG_RUNNING:
        assert services[name].get("restart") == "unless-stopped", name
    for name in ONE_SHOT:
        assert re.fullmatch(r"on-failure:\d+", services[name].get("restart", "")), name


def test_temporal_health_is_checked_with_the_temporal_cli_and_everything_waits_for_it() -> None:
    text = (REPO / "docker-compose.yml").read_text()
    assert "tctl" not in text
    services = compose()["services"]
    tools = services["temporal-admin-tools"]
    assert "temporal operator cluster health" in " ".join(tools["healthcheck"]["test"])
    assert tools["depends_on"]["temporal"]["condition"] == "service_healthy"
    body = script(tools)
    assert body.index("temporal operator cluster health") < body.index("temporal operator namespace")
    for name in TALKS_TO_TEMPORAL:
        assert services[name]["depends_on"]["temporal-admin-tools"]["condition"] == "service_healthy", name
    for name in ("worker", "api"):
        assert services[name]["depends_on"]["setup"]["condition"] == "service_completed_successfully"
    assert services["temporal"]["depends_on"]["temporal-schema"]["condition"] == "service_completed_successfully"
    assert services["temporal-schema"]["depends_on"]["postgresql"]["condition"] == "service_healthy"


def test_maintained_images_not_auto_setup() -> None:
    text = (REPO / "docker-compose.yml").read_text()
    assert "auto-setup" not in text
    services = compose()["services"]
    server = services["temporal"]["image"]
    assert server.startswith("temporalio/server:")
    version = server.split(":")[1]
    assert services["temporal-schema"]["image"] == services["temporal-admin-tools"]["image"] \
        == f"temporalio/admin-tools:{version}"
    assert services["temporal-ui"]["image"].startswith("temporalio/ui:")
    # The server image has no config files of its own: the dynamic config file is provided.
    config = services["temporal"]["configs"][0]
    assert config["target"] == services["temporal"]["environment"]["DYNAMIC_CONFIG_FILE_PATH"]
    assert config["source"] in raw()["configs"]
    assert yaml.safe_load(raw()["configs"][config["source"]]["content"]) in (None, {})


def test_namespace_and_retention_settings() -> None:
    services = compose()["services"]
    tools = services["temporal-admin-tools"]["environment"]
    assert tools["NAMESPACE"] == services["worker"]["environment"]["TRAWL_TEMPORAL__NAMESPACE"]
    assert tools["TEMPORAL_ADDRESS"] == services["worker"]["environment"]["TRAWL_TEMPORAL__ADDRESS"]
    assert parse_duration(tools["NAMESPACE_RETENTION"]) >= timedelta(days=7)
    assert compose({"TEMPORAL_NAMESPACE_RETENTION": "30d"})["services"]["temporal-admin-tools"]["environment"][
        "NAMESPACE_RETENTION"] == "30d"
    assert "--retention" in script(services["temporal-admin-tools"])


def test_schema_script_sets_up_both_databases(tmp_path: Path) -> None:
    """The `temporal-schema` script run with a stand-in temporal-sql-tool that records its calls."""
    calls = tmp_path / "calls"
    stub = tmp_path / "temporal-sql-tool"
    stub.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    service = compose()["services"]["temporal-schema"]
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", **service["environment"]}
    done = subprocess.run(["/bin/sh", "-c", script(service)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    schema = "/etc/temporal/schema/postgresql/v12"
    assert calls.read_text().splitlines() == [
        "--db temporal create",
        "--db temporal setup-schema -v 0.0",
        f"--db temporal update-schema -d {schema}/temporal/versioned",
        "--db temporal_visibility create",
        "--db temporal_visibility setup-schema -v 0.0",
        f"--db temporal_visibility update-schema -d {schema}/visibility/versioned",
    ]
    assert service["environment"]["SQL_PLUGIN"] == "postgres12"
    stub.write_text("#!/bin/sh\nexit 1\n")  # a failing step fails the one-shot (set -e)
    failed = subprocess.run(["/bin/sh", "-c", script(service)], env=env, capture_output=True, timeout=60)
    assert failed.returncode != 0


def _run_admin_tools(tmp_path: Path, address: str, namespace: str, retention: str) -> None:
    """Run the `temporal-admin-tools` script until its namespace is ready, check its healthcheck,
    then stop it as `docker compose stop` would (SIGTERM)."""
    service = compose({"TEMPORAL_NAMESPACE_RETENTION": retention})["services"]["temporal-admin-tools"]
    ready = tmp_path / f"ready-{retention}"
    env = {**service["environment"], "TEMPORAL_ADDRESS": address, "NAMESPACE": namespace,
           "READY_FILE": str(ready), "PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path)}
    assert env["NAMESPACE_RETENTION"] == retention
    log = tmp_path / f"admin-tools-{retention}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["/bin/sh", "-c", script(service)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        def namespace_ready() -> bool:
            if ready.exists():
                return True
            assert proc.poll() is None, f"the script exited {proc.returncode}: {log.read_text()}"
            return False

        wait_until(namespace_ready, "the namespace to be ready", 60)
        kind, check = service["healthcheck"]["test"]
        assert kind == "CMD-SHELL"
        assert subprocess.run(["/bin/sh", "-c", check], env=env, capture_output=True, timeout=60).returncode == 0
        unhealthy = subprocess.run(["/bin/sh", "-c", check], env={**env, "TEMPORAL_ADDRESS": closed_address()},
                                   capture_output=True, timeout=60)
        assert unhealthy.returncode != 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        output = log.read_text()
        assert f"namespace {namespace} ready: closed workflows kept {retention}" in output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def _retention(client: Client, namespace: str) -> timedelta:
    described = await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    return described.config.workflow_execution_retention_ttl.ToTimedelta()


async def test_admin_tools_creates_then_updates_the_namespace_retention(
        temporal_client: Client, temporal_address: str, tmp_path: Path) -> None:
    namespace = f"compose-{uuid.uuid4().hex[:8]}"
    _run_admin_tools(tmp_path, temporal_address, namespace, "7d")  # default: created
    assert await _retention(temporal_client, namespace) == timedelta(days=7)
    _run_admin_tools(tmp_path, temporal_address, namespace, "10d")  # changed: updated
    assert await _retention(temporal_client, namespace) == timedelta(days=10)


# -- the image -------------------------------------------------------------------------------------
async def test_setup_registers_the_web_ui_columns(temporal_client: Client, temporal_address: str,
                                                  tmp_path: Path) -> None:
    """The `setup` service (`trawl setup`, with the compose environment) registers every search
    attribute the item workflow sets, the Web UI's columns Title and ErrorClass among them, as
    Keyword; run twice, it changes nothing."""
    namespace = f"compose-{uuid.uuid4().hex[:8]}"
    _run_admin_tools(tmp_path, temporal_address, namespace, "1d")
    service = compose()["services"]["setup"]
    assert service["command"] == ["setup"]
    env = {**service["environment"], "TRAWL_TEMPORAL__ADDRESS": temporal_address,
           "TRAWL_TEMPORAL__NAMESPACE": namespace, "TRAWL_DATA_DIR": str(tmp_path / "data"),
           "TRAWL_CATALOG__URL": f"sqlite:///{tmp_path / 'catalog.db'}", "PATH": f"{BIN}:/usr/bin:/bin",
           "HOME": str(tmp_path),
           # A local blob store: the compose bucket's host name must not even be looked up here
           # (the lifecycle rule setup sets is tested against SeaweedFS in tests/e2e/test_cli.py).
           "TRAWL_STORAGE__URL": ""}
    for _ in range(2):
        done = subprocess.run([str(BIN / "trawl"), *service["command"]], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
    listed = await temporal_client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace))
    registered = dict(listed.custom_attributes)
    for key in ITEM_SEARCH_ATTRIBUTES:
        assert registered.get(key.name) == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, key.name
    assert {"Title", "ErrorClass"} <= set(registered)


def test_dockerfile_installs_the_package_ffmpeg_and_runs_trawl() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11[\w.-]*$", text, re.MULTILINE)
    assert "pip install --no-cache-dir ." in text and 'ENTRYPOINT ["trawl"]' in text
    install = re.search(r"apt-get install -y --no-install-recommends ([^\n&]+)", text)
    assert install and "ffmpeg" in install.group(1).split()  # Debian's ffmpeg ships ffprobe too
    assert "rm -rf /var/lib/apt/lists/*" in text
    assert "ffprobe -version" in text  # the build fails if either tool is missing


async def test_setup_waits_for_its_namespace_then_says_how_to_create_it(temporal_client: Client,
                                                                      settings: Settings) -> None:
    """A namespace the server does not know (yet: one just created is seen a few seconds later) is
    waited for, then named in one line saying how to create it."""
    from trawl.cli.output import CommandError
    from trawl.cli.serve import register_search_attributes

    namespace = f"never-created-{uuid.uuid4().hex[:8]}"
    missing = settings.model_copy(update={"temporal": settings.temporal.model_copy(update={"namespace": namespace})})
    with pytest.raises(CommandError, match=rf"^namespace {namespace} does not exist at .*: create it"):
        await register_search_attributes(temporal_client, missing, wait_s=1.0)
    await register_search_attributes(temporal_client, settings, wait_s=1.0)  # a known one: at once
