"""Blobs in any S3-compatible store (AWS S3, MinIO, SeaweedFS): ``s3://bucket/prefix``.

The client is boto3's: AWS's own, it follows S3's semantics most closely, reads credentials from
the standard AWS variables and files (and instance or container roles), retries throttling and
5xx answers with backoff, and its clients are thread-safe, which fits activities that run in
threads. Throughput comes from sending parts in parallel (``storage.s3_concurrency``).

Puts are verified end to end: every request carries ``x-amz-checksum-sha256`` of its body, which
the store checks before it keeps anything; a multipart upload is also hashed whole on the way and
completed only when that is the sha256 verify computed (and the size verify saw). Nothing is
visible under a key before the store has all of it: a single PUT is atomic, and a multipart
upload appears only on its completion; one that fails is aborted. A worker killed mid-upload
leaves an incomplete multipart upload, invisible and never under the key; the retried commit
uploads anew. Its parts are reclaimed by the workers' clean-up and ``trawl fsck --repair``
(``storage.abandon_uploads_after``), and by the bucket lifecycle rule ``trawl setup`` sets.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

from trawl.errors import ContentCorrupt, StorageError
from trawl.storage.protocol import BLOBS, BlobNotFound, BlobReader, BlobStat, IncompleteUpload, blob_key

if TYPE_CHECKING:
    from trawl.settings import StorageSettings

MiB = 1024 * 1024
MAX_PARTS = 10_000  # S3's limit per multipart upload
LIFECYCLE_RULE = "trawl-abort-incomplete-uploads"
QUARANTINE = "quarantine/"
_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}
_BAD_DIGEST = {"BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch", "XAmzContentSHA256Mismatch"}
# A request that could not reach the store (refused, reset, no answer within the timeout) is sent
# again this long after, for as long as the outage wait allows.
OUTAGE_RETRY_S = 0.5
_UNREACHED = (BotoConnectionError, ReadTimeoutError, ConnectionClosedError)


def _b64_sha256(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


@contextlib.contextmanager
def _errors(what: str) -> Iterator[None]:
    """The object store's failures as trawl's: absent -> BlobNotFound, a digest the store
    refused -> ContentCorrupt, anything else (unreachable, refused, 5xx) -> StorageError."""
    try:
        yield
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        if code in _NOT_FOUND:
            raise BlobNotFound(f"{what}: no such object") from None
        if code in _BAD_DIGEST:
            raise ContentCorrupt(f"{what}: the object store received bytes that do not match their "
                                 f"checksum ({code})") from None
        raise StorageError(f"object store: {what}: {code}: {error.get('Message', exc)}") from None
    except BotoCoreError as exc:
        raise StorageError(f"object store: {what}: {type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def _gone_upload() -> Iterator[None]:
    """An upload completed or aborted meanwhile (by another worker, say) ends the block quietly."""
    try:
        yield
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NoSuchUpload":
            raise


class _ObjectRange:
    """The body of a GET, read in order."""

    def __init__(self, body: Any) -> None:
        self._body = body

    def read(self, size: int = -1) -> bytes:
        if self._body is None:
            return b""
        with _errors("reading"):
            return self._body.read(None if size < 0 else size)

    def close(self) -> None:
        if self._body is not None:
            self._body.close()

    def __enter__(self) -> _ObjectRange:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _RideOutOutages:
    """botocore's ``needs-retry`` hook: a request that cannot reach the store is sent again every
    :data:`OUTAGE_RETRY_S` until ``wait`` seconds after its first such failure.

    Left to botocore (3 attempts, backoff up to 20 s), every request in flight during an outage
    becomes a storage_error within seconds, and its activity then waits for Temporal's retry timer
    (up to 5 s for storage_error) and starts its work again, an upload from its first part.
    Retried here, the request is under way or at most :data:`OUTAGE_RETRY_S` from its next try when
    the store answers again, and the upload goes on from the part it was at. An outage longer
    than ``wait`` is still a storage_error (the item says it waits, and its activity retries).
    Answers from the store (a 5xx included) are left to botocore's own policy.
    """

    def __init__(self, wait: float) -> None:
        self.wait = wait

    def __call__(self, attempts: int, caught_exception: Exception | None = None,
                 request_dict: dict[str, Any] | None = None, **_: Any) -> float | None:
        if not isinstance(caught_exception, _UNREACHED) or request_dict is None:
            return None
        context = request_dict.setdefault("context", {})
        first = context.setdefault("trawl_unreached_since", time.monotonic())
        if time.monotonic() - first >= self.wait:
            return None  # botocore's own policy decides (its attempts are spent by now: no retry)
        return OUTAGE_RETRY_S


class S3BlobStore:
    """Blobs at ``s3://<bucket>/<prefix>/sha256/ab/cd/<sha256>``; fsck's quarantine under
    ``<prefix>/quarantine/``."""

    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str = "", region: str = "",
                 part_size: int = 8 * MiB, concurrency: int = 4, timeout: float = 10.0,
                 outage_wait: float | None = None) -> None:
        """
        Args:
            timeout: the longest a request waits to connect, or for its next bytes to go or come.
            outage_wait: how long a request that cannot reach the store is sent again (every
                :data:`OUTAGE_RETRY_S`) before it fails as a storage_error; None: 6 x ``timeout``.
        """
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.part_size = part_size
        self.concurrency = concurrency
        config = Config(
            # A custom endpoint (MinIO, SeaweedFS) rarely has a DNS name per bucket. Bodies are not
            # hashed again for the signature: their x-amz-checksum-sha256 is signed and checked by
            # the store (what botocore does by itself over https, here over http too).
            s3={"addressing_style": "path" if endpoint_url else "auto", "payload_signing_enabled": False},
            # A store that stops answering (frozen, or a network that drops packets) is noticed
            # within seconds: every connect and every socket read or send waits at most
            # ``timeout`` (storage.s3_timeout), a stall detector rather than a deadline, so a part
            # of any size goes up as long as its bytes keep moving. Such a request is sent again
            # for ``outage_wait`` (_RideOutOutages, registered below); other failures get 3
            # attempts in all; then the activity's own retries (at most 5 s apart for
            # storage_error) take over.
            retries={"mode": "standard", "total_max_attempts": 3},  # max_attempts would count retries
            max_pool_connections=max(32, 8 * concurrency),  # several uploads at once, each `concurrency` wide
            connect_timeout=timeout,
            read_timeout=timeout,
            # Puts carry the sha256 themselves (below); no CRC trailers on top, which some
            # S3-compatible stores do not understand.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        # A session per store: boto3's default session is shared and not thread-safe to create.
        session = boto3.session.Session()
        self.client = session.client("s3", endpoint_url=endpoint_url or None, region_name=region or None,
                                     config=config)
        # First, so that its answer wins over the standard policy's for what it takes on.
        self.client.meta.events.register_first(
            "needs-retry.s3", _RideOutOutages(6 * timeout if outage_wait is None else outage_wait))

    @classmethod
    def from_settings(cls, storage: StorageSettings) -> S3BlobStore:
        bucket, _, prefix = storage.url.removeprefix("s3://").partition("/")
        return cls(bucket, prefix, endpoint_url=storage.s3_endpoint_url, region=storage.s3_region,
                   part_size=storage.s3_part_size, concurrency=storage.s3_concurrency,
                   timeout=storage.s3_timeout.total_seconds(), outage_wait=storage.s3_outage_wait.total_seconds())

    def _name(self, key: str) -> str:
        if not key or key.startswith("/") or any(p in ("", ".", "..") for p in key.split("/")):
            raise ValueError(f"not a key in the store: {key!r}")
        return f"{self.prefix}/{key}" if self.prefix else key

    def location(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._name(key)}"

    def local_path(self, key: str) -> Path | None:
        return None

    def close(self) -> None:
        self.client.close()

    # -- reading ----------------------------------------------------------------------------------
    def stat(self, key: str) -> BlobStat | None:
        try:
            with _errors(f"stat {self.location(key)}"):
                head = self.client.head_object(Bucket=self.bucket, Key=self._name(key))
        except BlobNotFound:
            return None
        return BlobStat(key, head["ContentLength"], head["LastModified"])

    def exists(self, key: str) -> bool:
        return self.stat(key) is not None

    def open(self, key: str, start: int = 0, end: int | None = None) -> BlobReader:
        where = self.location(key)
        if end is not None and end <= start:
            if not self.exists(key):
                raise BlobNotFound(f"{where}: no such object")
            return _ObjectRange(None)
        args: dict[str, Any] = {"Bucket": self.bucket, "Key": self._name(key)}
        if start > 0 or end is not None:
            args["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        with _errors(f"read {where}"):
            return _ObjectRange(self.client.get_object(**args)["Body"])

    def iterate(self) -> Iterator[BlobStat]:
        base = f"{self.prefix}/" if self.prefix else ""
        with _errors(f"list s3://{self.bucket}/{base}{BLOBS}"):
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base + BLOBS)
            for page in pages:
                for obj in page.get("Contents", []):
                    yield BlobStat(obj["Key"][len(base):], obj["Size"], obj["LastModified"])

    # -- changing ---------------------------------------------------------------------------------
    def delete(self, key: str) -> bool:
        if not self.exists(key):
            return False
        with _errors(f"delete {self.location(key)}"):
            self.client.delete_object(Bucket=self.bucket, Key=self._name(key))
        return True

    def quarantine(self, key: str) -> str | None:
        if not self.exists(key):
            return None
        target = self._name(QUARANTINE + key)
        with _errors(f"quarantine {self.location(key)}"):
            # The managed copy: a server-side copy, in parts when the object is over 5 GiB.
            self.client.copy({"Bucket": self.bucket, "Key": self._name(key)}, self.bucket, target)
            self.client.delete_object(Bucket=self.bucket, Key=self._name(key))
        return f"s3://{self.bucket}/{target}"

    def put(self, source: Path, sha256: str, size: int) -> str:
        """Upload ``source`` (left in place) under its key; see :class:`trawl.storage.blobs.BlobStore`."""
        key = blob_key(sha256)
        actual = os.stat(source).st_size
        if actual != size:
            raise ContentCorrupt(f"{source} is {actual} bytes, verify saw {size}: not stored")
        if self._put_before(key, sha256, size):
            return key  # stored before (by an earlier attempt, or from another URL)
        if size <= self.part_size:
            self._put_whole(source, key, sha256, size)
        else:
            self._put_parts(source, key, sha256, size)
        stored = self.stat(key)
        if stored is None or stored.size != size:
            raise StorageError(f"object store: {self.location(key)} holds "
                               f"{'nothing' if stored is None else f'{stored.size} bytes'} after its upload "
                               f"of {size} bytes")
        return key

    def _put_before(self, key: str, sha256: str, size: int) -> bool:
        """An object of this size is under ``key`` and was written by a verified put.

        The store checked the bytes' SHA-256 when that put sent them, and the put's ``sha256``
        metadata came with the same request; an object of the right size without it (written
        behind trawl's back, or damaged by another tool) is replaced, never trusted.
        """
        try:
            with _errors(f"stat {self.location(key)}"):
                head = self.client.head_object(Bucket=self.bucket, Key=self._name(key))
        except BlobNotFound:
            return False
        return head["ContentLength"] == size and head.get("Metadata", {}).get("sha256") == sha256

    def _put_whole(self, source: Path, key: str, sha256: str, size: int) -> None:
        # At most one part size: hashed in memory, so the bytes sent are the bytes checked.
        data = source.read_bytes()
        digest = hashlib.sha256(data)
        if len(data) != size or digest.hexdigest() != sha256:
            raise ContentCorrupt(f"{source} ({len(data)} bytes) hashes to {digest.hexdigest()[:16]}..., "
                                 f"not to {sha256[:16]}...: not stored")
        with _errors(f"upload {self.location(key)}"):
            self.client.put_object(Bucket=self.bucket, Key=self._name(key), Body=data, ContentLength=size,
                                   ChecksumSHA256=base64.b64encode(digest.digest()).decode(),
                                   ContentType="application/octet-stream", Metadata={"sha256": sha256})

    def _put_parts(self, source: Path, key: str, sha256: str, size: int) -> None:
        """A multipart upload, ``concurrency`` parts in flight, completed only if the whole is right."""
        name = self._name(key)
        where = self.location(key)
        # S3 allows 10,000 parts: a file too large for that many parts gets larger ones.
        part_size = max(self.part_size, -(-size // MAX_PARTS))
        with _errors(f"upload {where}"):
            upload_id = self.client.create_multipart_upload(
                Bucket=self.bucket, Key=name, ChecksumAlgorithm="SHA256",
                ContentType="application/octet-stream", Metadata={"sha256": sha256})["UploadId"]
        try:
            whole = hashlib.sha256()
            sent = 0
            slots = threading.BoundedSemaphore(self.concurrency)
            futures: list[concurrent.futures.Future[dict[str, Any]]] = []
            with open(source, "rb") as src, concurrent.futures.ThreadPoolExecutor(
                    self.concurrency, thread_name_prefix="s3-part") as pool:
                number = 0
                while True:
                    slots.acquire()
                    failed = next((f for f in futures if f.done() and f.exception()), None)
                    if failed is not None:
                        slots.release()
                        failed.result()  # raises: the upload is aborted below
                    data = src.read(part_size)
                    if not data:
                        slots.release()
                        break
                    number += 1
                    whole.update(data)
                    sent += len(data)
                    future = pool.submit(self._put_part, name, upload_id, number, data, where)
                    future.add_done_callback(lambda _: slots.release())
                    futures.append(future)
                parts = [f.result() for f in futures]
            if sent != size or whole.hexdigest() != sha256:
                raise ContentCorrupt(f"{source} ({sent} bytes) hashes to {whole.hexdigest()[:16]}..., "
                                     f"not to {sha256[:16]}...: upload abandoned")
            with _errors(f"complete the upload of {where}"):
                self.client.complete_multipart_upload(Bucket=self.bucket, Key=name, UploadId=upload_id,
                                                      MultipartUpload={"Parts": parts})
        except BaseException:
            # Whatever stopped the upload (an error, a cancelled activity), its parts go; the key
            # never saw them.
            with contextlib.suppress(Exception):
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=name, UploadId=upload_id)
            raise

    def _put_part(self, name: str, upload_id: str, number: int, data: bytes, where: str) -> dict[str, Any]:
        checksum = _b64_sha256(data)
        with _errors(f"upload part {number} of {where}"):
            answer = self.client.upload_part(Bucket=self.bucket, Key=name, UploadId=upload_id, PartNumber=number,
                                             Body=data, ChecksumSHA256=checksum)
        return {"PartNumber": number, "ETag": answer["ETag"], "ChecksumSHA256": checksum}

    def incomplete_uploads(self) -> list[IncompleteUpload]:
        base = f"{self.prefix}/" if self.prefix else ""
        found = []
        with _errors(f"list uploads in s3://{self.bucket}/{base}"):
            for page in self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket, Prefix=base):
                for upload in page.get("Uploads", []):
                    sizes = self._part_sizes(upload["Key"], upload["UploadId"])
                    if sizes is None:
                        continue  # completed or aborted since it was listed
                    started = upload["Initiated"].astimezone(UTC)
                    found.append(IncompleteUpload(upload["Key"][len(base):], upload["UploadId"], started,
                                                  sum(sizes), len(sizes)))
        return found

    def _part_sizes(self, name: str, upload_id: str) -> list[int] | None:
        sizes: list[int] = []
        with _gone_upload():
            for page in self.client.get_paginator("list_parts").paginate(Bucket=self.bucket, Key=name,
                                                                          UploadId=upload_id):
                sizes += [part["Size"] for part in page.get("Parts", [])]
            return sizes
        return None

    def abort_upload(self, upload: IncompleteUpload) -> bool:
        with _errors(f"abort the upload of {self.location(upload.key)}"), _gone_upload():
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=self._name(upload.key),
                                               UploadId=upload.upload_id)
            return True
        return False

    def ensure_upload_lifecycle(self, after: timedelta) -> str:
        """A bucket lifecycle rule that aborts uploads under the prefix ``after`` (whole days, at
        least one) after they began: the store reclaims what trawl's own clean-up cannot reach
        (a bucket no worker runs against any more). Other rules of the bucket are kept. What was
        done, in words."""
        days = max(1, -(-int(after.total_seconds()) // 86400))
        base = f"{self.prefix}/" if self.prefix else ""
        ours = {"ID": LIFECYCLE_RULE + (f"-{self.prefix}" if self.prefix else ""), "Status": "Enabled",
                "Filter": {"Prefix": base}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": days}}
        with _errors(f"read the lifecycle rules of s3://{self.bucket}"):
            try:
                rules = self.client.get_bucket_lifecycle_configuration(Bucket=self.bucket).get("Rules", [])
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "NoSuchLifecycleConfiguration":
                    raise
                rules = []
        if ours in rules:
            return f"lifecycle rule {ours['ID']} of s3://{self.bucket} already aborts uploads after {days} day(s)"
        rules = [rule for rule in rules if rule.get("ID") != ours["ID"]] + [ours]
        with _errors(f"set the lifecycle rules of s3://{self.bucket}"):
            self.client.put_bucket_lifecycle_configuration(Bucket=self.bucket,
                                                           LifecycleConfiguration={"Rules": rules})
        return f"lifecycle rule {ours['ID']} of s3://{self.bucket} aborts uploads after {days} day(s)"
