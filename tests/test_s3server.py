"""The tests' SeaweedFS starts again on other ports when one was taken before it could bind it."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.s3server import SeaweedFS


def test_a_port_taken_before_weed_binds_it_is_chosen_again(tmp_path: Path) -> None:
    server = SeaweedFS(tmp_path)
    taken = server.s3
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", taken))  # bound, not listening: weed cannot bind it
        server.start()
        try:
            assert server.s3 != taken and server.endpoint.endswith(f":{server.s3}")
            assert server.client().head_bucket(Bucket="trawl-test")["ResponseMetadata"]["HTTPStatusCode"] == 200
        finally:
            server.stop()
