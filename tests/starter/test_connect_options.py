"""How trawl reaches a Temporal server beyond localhost: TLS, API key, namespace, SDK profiles.

The dev server here speaks no TLS, so these check the arguments that reach ``Client.connect``
(pure logic, no server) and one real connection with the plain options."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from trawl.starter.client import connect, connect_options
from trawl.settings import Settings, TemporalSettings

NO_ENV: dict[str, str] = {"TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml"}


@pytest.fixture(autouse=True)
def no_trawl_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings made here carry only what each test sets (the repository's trawl.toml sets more)."""
    monkeypatch.setenv("TRAWL_CONFIG", str(tmp_path / "absent.toml"))
    for name in [n for n in os.environ if n.startswith("TRAWL_")]:
        if name != "TRAWL_CONFIG":
            monkeypatch.delenv(name)


def test_defaults_are_the_plain_local_server() -> None:
    options = connect_options(Settings(), env=NO_ENV)
    assert options == {"target_host": "127.0.0.1:7233", "namespace": "default"}


def test_api_key_turns_tls_on(tmp_path: Path) -> None:
    settings = Settings(temporal=TemporalSettings(address="ns.a1b2c.tmprl.cloud:7233", namespace="ns.a1b2c",
                                                  api_key="secret-key"))
    options = connect_options(settings, env=NO_ENV)
    assert options["api_key"] == "secret-key" and options["tls"] is True
    assert (options["target_host"], options["namespace"]) == ("ns.a1b2c.tmprl.cloud:7233", "ns.a1b2c")


def test_mtls_files_are_read_into_the_tls_config(tmp_path: Path) -> None:
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_bytes(f"-----{name}-----".encode())
    settings = Settings(temporal=TemporalSettings(
        address="temporal.example.internal:7233", tls_server_ca=tmp_path / "ca.pem",
        tls_client_cert=tmp_path / "client.pem", tls_client_key=tmp_path / "client.key",
        tls_server_name="temporal"))
    tls = connect_options(settings, env=NO_ENV)["tls"]
    assert isinstance(tls, TLSConfig)
    assert (tls.server_root_ca_cert, tls.client_cert, tls.client_private_key, tls.domain) == (
        b"-----ca.pem-----", b"-----client.pem-----", b"-----client.key-----", "temporal")


def test_sdk_profiles_and_variables_apply_and_explicit_settings_win(tmp_path: Path) -> None:
    config = tmp_path / "temporal.toml"
    config.write_text('[profile.prod]\naddress = "prod.example.internal:7233"\nnamespace = "crawls"\n'
                      'api_key = "from-profile"\n')
    env = {"TEMPORAL_CONFIG_FILE": str(config), "TEMPORAL_PROFILE": "prod"}
    options = connect_options(Settings(), env=env)
    assert (options["target_host"], options["namespace"], options["api_key"]) == (
        "prod.example.internal:7233", "crawls", "from-profile")
    assert options["tls"] is True
    explicit = Settings(temporal=TemporalSettings(address="other.example.internal:7233"))
    assert connect_options(explicit, env=env)["target_host"] == "other.example.internal:7233"
    env_only = {"TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml", "TEMPORAL_NAMESPACE": "from-env"}
    assert connect_options(Settings(), env=env_only)["namespace"] == "from-env"


async def test_the_options_connect_for_real(temporal_address: str) -> None:
    client = await connect(Settings(temporal=TemporalSettings(address=temporal_address, embedded=False)))
    assert client.namespace == "default"


def test_a_missing_certificate_file_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(temporal=TemporalSettings(tls_server_ca=tmp_path / "missing.pem"))
    with pytest.raises(FileNotFoundError, match="missing.pem"):
        connect_options(settings, env=NO_ENV)
