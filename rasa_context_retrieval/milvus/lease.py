"""A sync lease held in Milvus itself, so that replicas starting at once ingest only once.

Replicas may run on different hosts and share nothing but the Milvus cluster, so the lease lives
there: a tiny collection ``<collection>__sync_lease`` with one row per contender
(``owner``, ``expires_at_ms``). Milvus has no compare-and-swap, so acquisition is a
claim-then-check protocol over linearisable (``Strong``) reads:

1. upsert my row with an expiry ``ttl`` from now;
2. read every row that has not expired;
3. if mine is the only one, I hold the lease; otherwise delete my row, wait a random back-off and
   retry until ``wait_s`` runs out.

Two contenders cannot both win: whichever reads second, reads after the other's claim was written,
sees it and backs off. Both may back off at once; the random back-off makes repeated ties
unlikely. While held, a background thread renews the expiry every ``ttl / 3``; ``release()``
deletes the row.

Limits: expiry compares the writers' wall clocks, so hosts must agree within a few seconds of
each other (NTP) — keep ``ttl`` much larger than the skew. A holder that stalls for longer than
``ttl`` (e.g. a frozen VM) can lose the lease while still writing; the sync is idempotent (upsert
by chunk id and content hash), so the cost is duplicated embedding work, not a corrupt collection.
"""

from __future__ import annotations

import random
import socket
import threading
import time
import uuid
from types import TracebackType

import structlog
from pymilvus import DataType, MilvusClient

from rasa_context_retrieval.errors import ContextRetrievalError

logger = structlog.get_logger(__name__)

LEASE_SUFFIX = "__sync_lease"
_OWNER_FIELD = "owner"
_EXPIRY_FIELD = "expires_at_ms"
_PLACEHOLDER_VECTOR = "placeholder_vector"  # Milvus 2.3 requires a vector field in a collection.
_PLACEHOLDER_DIMENSION = 2
_BACKOFF_RANGE_S = (0.2, 1.0)
_MAX_CONTENDERS = 1000


class LeaseTimeout(ContextRetrievalError, TimeoutError):
    """Another replica held the sync lease for longer than this replica was willing to wait."""


class SyncLease:
    """An exclusive, expiring claim on syncing one collection; use as a context manager."""

    def __init__(
        self,
        client: MilvusClient,
        collection: str,
        *,
        ttl_s: float = 60.0,
        wait_s: float = 600.0,
        owner: str | None = None,
    ) -> None:
        self._client = client
        self._name = collection + LEASE_SUFFIX
        self._ttl_ms = int(ttl_s * 1000)
        self._wait_s = wait_s
        self.owner = owner or f"{socket.gethostname()}:{uuid.uuid4().hex}"
        self._stop_renewing = threading.Event()
        self._renewer: threading.Thread | None = None

    def __enter__(self) -> SyncLease:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    def acquire(self) -> None:
        """Block until this owner alone holds the lease.

        Raises:
            LeaseTimeout: if the lease stayed taken for ``wait_s`` seconds.
        """
        self._ensure_collection()
        deadline = time.monotonic() + self._wait_s
        attempts = 0
        while True:
            attempts += 1
            self._write_claim()
            rivals = self._live_owners() - {self.owner}
            if not rivals:
                logger.info("milvus.lease.acquired", lease=self._name, owner=self.owner)
                self._start_renewing()
                return
            self._delete_claim()
            if time.monotonic() >= deadline:
                raise LeaseTimeout(
                    f"The sync lease {self._name} is held by {sorted(rivals)}; waited "
                    f"{self._wait_s:.0f}s. If that replica died, the lease expires after its ttl."
                )
            logger.debug("milvus.lease.contended", lease=self._name, rivals=sorted(rivals))
            time.sleep(random.uniform(*_BACKOFF_RANGE_S) * min(attempts, 5))

    def release(self) -> None:
        """Stop renewing and delete this owner's claim."""
        self._stop_renewing.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        self._delete_claim()
        logger.info("milvus.lease.released", lease=self._name, owner=self.owner)

    def _ensure_collection(self) -> None:
        if self._client.has_collection(self._name):
            # A racing replica may have created it a moment ago and still be loading it.
            self._client.load_collection(self._name)
            return
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(_OWNER_FIELD, DataType.VARCHAR, max_length=256, is_primary=True)
        schema.add_field(_EXPIRY_FIELD, DataType.INT64)
        schema.add_field(_PLACEHOLDER_VECTOR, DataType.FLOAT_VECTOR, dim=_PLACEHOLDER_DIMENSION)
        index_params = self._client.prepare_index_params()
        index_params.add_index(_PLACEHOLDER_VECTOR, index_type="FLAT", metric_type="L2")
        # Creating with an identical schema is idempotent in Milvus, so racing replicas are fine.
        self._client.create_collection(
            self._name, schema=schema, index_params=index_params, consistency_level="Strong"
        )
        self._client.load_collection(self._name)  # idempotent; waits until queries can run

    def _write_claim(self) -> None:
        row = {
            _OWNER_FIELD: self.owner,
            _EXPIRY_FIELD: _now_ms() + self._ttl_ms,
            _PLACEHOLDER_VECTOR: [0.0] * _PLACEHOLDER_DIMENSION,
        }
        self._client.upsert(self._name, [row])

    def _delete_claim(self) -> None:
        self._client.delete(self._name, ids=[self.owner])

    def _live_owners(self) -> set[str]:
        rows = self._client.query(
            self._name,
            filter=f"{_EXPIRY_FIELD} > {_now_ms()}",
            output_fields=[_OWNER_FIELD],
            limit=_MAX_CONTENDERS,
            consistency_level="Strong",
        )
        return {row[_OWNER_FIELD] for row in rows}

    def _start_renewing(self) -> None:
        self._stop_renewing.clear()
        self._renewer = threading.Thread(
            target=self._renew_until_stopped, name="milvus-lease-renewer", daemon=True
        )
        self._renewer.start()

    def _renew_until_stopped(self) -> None:
        interval_s = self._ttl_ms / 3000
        while not self._stop_renewing.wait(interval_s):
            try:
                self._write_claim()
            except Exception as error:  # noqa: BLE001 - renewal must not kill the sync
                logger.warning("milvus.lease.renew_failed", lease=self._name, error=str(error))


def _now_ms() -> int:
    return int(time.time() * 1000)
