"""docker-compose.yml, checked by parsing (no Docker engine runs here)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel

from trawl.settings import Settings

REPO = Path(__file__).resolve().parents[1]


def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


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


def test_services_ports_and_volumes() -> None:
    doc = compose()
    services = doc["services"]
    assert set(services) == {"postgresql", "temporal", "temporal-ui", "setup", "worker", "api"}
    for name in ("postgresql", "temporal", "temporal-ui"):
        assert re.fullmatch(r"[\w./-]+:\d[\w.-]*", services[name]["image"]), f"{name} image tag is not pinned"
    assert services["temporal"]["ports"] == ["7233:7233"]
    assert services["temporal-ui"]["ports"] == ["8233:8080"]
    assert services["api"]["ports"] == ["8000:8000"]
    assert "ports" not in services["worker"]  # scaled: no fixed host port
    for name in ("worker", "api"):
        assert "data:/data" in services[name]["volumes"]
    assert set(doc["volumes"]) == {"postgres", "data"}
    assert services["worker"]["command"] == ["worker"] and services["setup"]["command"] == ["setup"]


def test_every_trawl_variable_is_a_setting_and_validates(monkeypatch) -> None:
    seen = {}
    for service in compose()["services"].values():
        for key, value in (service.get("environment") or {}).items():
            if key.startswith("TRAWL_"):
                assert setting_exists(key), f"{key} is not a setting"
                seen[key] = str(value)
    assert {"TRAWL_TEMPORAL__ADDRESS", "TRAWL_CATALOG__URL", "TRAWL_DATA_DIR", "TRAWL_API__TOKEN"} <= set(seen)
    assert not setting_exists("TRAWL_NET__NOPE") and not setting_exists("TRAWL_DATA_DIR__X")
    for key, value in seen.items():
        monkeypatch.setenv(key, "compose-token" if value.startswith("${") else value)
    settings = Settings()
    assert settings.temporal.address == "temporal:7233" and settings.temporal.embedded is False
    assert settings.catalog_url.startswith("postgresql+psycopg://")
    assert str(settings.data_dir) == "/data"


def test_dockerfile_installs_the_package_and_runs_trawl() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11[\w.-]*$", text, re.MULTILINE)
    assert "pip install --no-cache-dir ." in text and 'ENTRYPOINT ["trawl"]' in text
