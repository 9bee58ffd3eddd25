"""``trawl.toml``, trawl's defaults, names every API setting with its default (issue 24, item 13)."""

from __future__ import annotations

import tomllib

from tests.conftest import REPO
from trawl.settings import ApiSettings


def test_the_defaults_file_has_the_api_section() -> None:
    api = tomllib.loads((REPO / "trawl.toml").read_text())["api"]
    assert set(api) == set(ApiSettings.model_fields)
    assert ApiSettings(**api) == ApiSettings()
