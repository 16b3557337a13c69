"""The index a running assistant serves: opened at start-up, kept fresh, swapped, never mutated.

``LiveIndex`` decides which ``SearchBackend`` serves (FAISS in this process, or a Milvus
collection) and replaces it when the documents change; the search engine only ever asks it for
the current backend, so a search under way finishes on the view it started with.

A refresh that sees the documents change first withholds the chunks whose text or attributes
changed (``engine.withdrawal``): from then on neither this process nor, on Milvus, any replica
serves them, until the rebuilt index (and the synced collection) serves them as they are now.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from rasa_context_retrieval.access.entitlements import AccessFilter, is_public
from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.engine.backend import SearchBackend
from rasa_context_retrieval.engine.withdrawal import (
    changed_chunk_ids,
    chunks_on_disk,
    without_changed_chunks,
)
from rasa_context_retrieval.faiss.backend import FaissBackend
from rasa_context_retrieval.faiss.builder import ensure_index
from rasa_context_retrieval.faiss.index import IndexDirectory
from rasa_context_retrieval.ingestion.currency import is_current
from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge
from rasa_context_retrieval.ingestion.settings import IndexSettings
from rasa_context_retrieval.knowledge.conversion import format_suffixes
from rasa_context_retrieval.knowledge.embedding import embedder_identity
from rasa_context_retrieval.knowledge.faq_table import FaqColumns
from rasa_context_retrieval.knowledge.loader import IngestProblem
from rasa_context_retrieval.knowledge.model_integrity import is_bundled_model, verify_bundled_model
from rasa_context_retrieval.query_embedding.onnx import EXPORT_FOLDER

if TYPE_CHECKING:
    from rasa_context_retrieval.milvus.backend import MilvusBackend

logger = structlog.get_logger()

NO_VALUES: frozenset[str] = frozenset()
"""What ``known_values`` reads for an attribute without values: one object, so that a search
can tell by identity that nothing changed."""
READABLE_VALUES_KEPT = 64
"""Value sets of distinct access filters kept per served index (users share a few plans)."""
READABLE_VALUES_TTL_S = 300.0
"""How long a Milvus replica trusts a value set it read: its collection changes under the same
backend (a local index is replaced instead, which drops its value sets)."""


class LiveIndex:
    """The serving backend, the knowledge it was given (if any), and their refresh."""

    def __init__(
        self,
        config: StoreConfig,
        embeddings: Any,
        backend: SearchBackend,
        knowledge: EmbeddedKnowledge | None,
    ) -> None:
        self.config = config
        self.embeddings = embeddings
        self.backend = backend
        self.knowledge = knowledge
        """Ingested from ``docs`` in this process; None on a replica that only reads Milvus."""
        self._settings = index_settings(config) if knowledge is not None else None
        self._checked_at = time.monotonic()
        self._refreshing = threading.Lock()
        self._values: dict[str, frozenset[str]] = {}
        self._values_read: dict[str, frozenset[str]] = {}
        self._readable: OrderedDict[Hashable, tuple[dict[str, frozenset[str]], float]]
        self._readable = OrderedDict()
        self._readable_of: SearchBackend | None = None
        self._readable_lock = threading.Lock()

    @classmethod
    def open(
        cls, config: StoreConfig, embeddings: Any, *, progress: bool = True, ingest: bool = False
    ) -> LiveIndex:
        """Load the published index, or build it when the documents changed, and serve it.

        With ``backend: milvus`` the collection is synced too (always when ``ingest``, the
        console's ``index`` command; otherwise unless its ``ingest`` is ``console_only``).
        """
        _check_embedding_model(embeddings)
        if config.milvus_replica and config.milvus is not None and not ingest:
            from rasa_context_retrieval.milvus.backend import MilvusBackend

            backend = MilvusBackend.open(config.milvus, writes=False, fields=config.metadata_fields)
            replica = cls(config, embeddings, backend, None)
            # Both read the collection; in the background, so start-up does not grow with it.
            threading.Thread(target=replica._inspect_collection, daemon=True).start()
            return replica
        settings = index_settings(config)
        milvus = _milvus_writer(config, settings, embeddings)
        try:
            knowledge = ensure_index(settings, embeddings, progress=progress).knowledge
            live = cls.serving(config, embeddings, knowledge, writes=ingest, milvus=milvus)
        except Exception:
            if milvus is not None:
                milvus.close()
            raise
        live.warn_about_undeclared_attributes()
        live.refuse_unknown_access_attributes()
        live.tell_public_documents()
        return live

    @classmethod
    def serving(
        cls,
        config: StoreConfig,
        embeddings: Any,
        knowledge: EmbeddedKnowledge,
        *,
        writes: bool = False,
        milvus: MilvusBackend | None = None,
    ) -> LiveIndex:
        """Serve knowledge ingested already, on the configured backend (``milvus``: opened
        already)."""
        backend: SearchBackend
        if config.backend == "milvus" and config.milvus is not None:
            from rasa_context_retrieval.milvus.backend import MilvusBackend

            if milvus is None:
                milvus = MilvusBackend.open(
                    config.milvus,
                    writes=writes or config.milvus.ingest != "console_only",
                    fields=config.metadata_fields,
                )
            backend = milvus.publish(knowledge)
        else:
            backend = FaissBackend.serving(knowledge, config.exact_search_below)
        return cls(config, embeddings, backend, knowledge)

    def __len__(self) -> int:
        return self.backend.size()

    @property
    def problems(self) -> list[IngestProblem]:
        """Files the last build skipped, and why."""
        return list(self.knowledge.problems) if self.knowledge is not None else []

    def known_values(self, access: AccessFilter | None = None) -> Mapping[str, frozenset[str]]:
        """Distinct string values per declared attribute in the served chunks ``access`` admits
        (all of them without one); an attribute declared with ``values`` is not read (planners
        use the declared values as they are).

        The same mapping object while the values are the same: planners rebuild their vocabulary
        only when it is a new one. A backend may hand out equal sets as new objects (an attribute
        no document has, a re-read of a Milvus collection): every empty set is read as one object,
        and a read that is not the last one read is compared by value, once.
        """
        if access is not None:
            return self._readable_values(access)
        backend, last_read = self.backend, self._values_read
        values = {
            field.name: backend.values_of(field.name) or NO_VALUES
            for field in self.config.metadata_fields
            if field.values is None
        }
        if values.keys() == last_read.keys() and all(values[k] is last_read[k] for k in values):
            return self._values
        self._values_read = values
        if values != self._values:
            self._values = values
        return self._values

    def _readable_values(self, access: AccessFilter) -> Mapping[str, frozenset[str]]:
        """The values of the chunks a user may read, so that no planner offers (and no prompt
        shows) a value only restricted documents hold.

        Read once per distinct access filter and served index, and handed out as the same
        object, so planners build their vocabulary once per audience, not per search.
        """
        attributes = [field.name for field in self.config.metadata_fields if field.values is None]
        if not attributes:  # every value is declared: nothing to read, nothing restricted
            return self.known_values()
        backend = self.backend
        with self._readable_lock:
            if self._readable_of is not backend:
                self._readable.clear()
                self._readable_of = backend
            kept = self._readable.get(access.key)
            if kept is not None and (self.knowledge is not None or _fresh(kept[1])):
                self._readable.move_to_end(access.key)
                return kept[0]
        read = backend.readable_values(attributes, access)
        values = {name: read.get(name) or NO_VALUES for name in attributes}
        with self._readable_lock:
            if self._readable_of is backend:
                self._readable[access.key] = (values, time.monotonic())
                while len(self._readable) > READABLE_VALUES_KEPT:
                    self._readable.popitem(last=False)
        return values

    def _inspect_collection(self) -> None:
        """Warn about absent attributes and read ``known_values`` (a scan of the collection),
        so that the first search finds them read or being read."""
        try:
            self.warn_about_undeclared_attributes()
            self.known_values()
        except Exception as error:  # the first search reads them again and reports it
            logger.warning("knowledge_search.values.read_failed", error=str(error))

    def warn_about_undeclared_attributes(self) -> None:
        for field_name in sorted(self.config.field_names):
            if not self.backend.has_attribute(field_name):
                logger.warning(
                    "knowledge_search.metadata_field.absent",
                    attribute=field_name,
                    event_info=f"no indexed document has the attribute '{field_name}'; "
                    "filters on it will match nothing",
                )

    def refuse_unknown_access_attributes(self) -> None:
        """An ``access_filters`` attribute that nothing declares and no document has is a typo:
        every user would be denied everything, silently, so start-up stops instead.

        A declared attribute that no document has yet only warns (above): documents may come.
        """
        unknown = sorted(
            attribute
            for attribute in set(self.config.access_filters.values())
            if attribute not in self.config.field_names
            and not self.backend.has_attribute(attribute)
        )
        if unknown:
            raise ConfigurationError(
                f"vector_store.access_filters: attribute(s) {unknown} are not in "
                "`metadata_fields` and no document has them; fix the name or declare them"
            )

    def public_sources(self) -> list[str]:
        """The sources of the indexed documents without any access attribute, in index order:
        with ``access_filters`` every user may read them (unless ``unattributed_documents:
        private``). Empty without access filters or a local index."""
        attributes = set(self.config.access_filters.values())
        if not attributes or self.knowledge is None:
            return []
        sources = (
            str(chunk.metadata.get("source", ""))
            for chunk in self.knowledge.chunks
            if is_public(chunk.metadata, attributes)
        )
        return list(dict.fromkeys(sources))

    def tell_public_documents(self) -> None:
        """Log how many documents have no access attribute, so that a restricted knowledge base
        never serves a forgotten document to everyone unnoticed."""
        if not self.config.access_filters or self.knowledge is None:
            return
        public = self.public_sources()
        served = "every user" if self.config.unattributed_documents == "public" else "nobody"
        logger.info(
            "knowledge_search.access.public_documents",
            documents=len(public),
            unattributed_documents=self.config.unattributed_documents,
            event_info=f"{len(public)} document(s) have no access attribute and are served to "
            f"{served}; list them with `rasa-context-retrieval index --public`",
        )

    def swap(self, knowledge: EmbeddedKnowledge) -> None:
        """Serve ``knowledge`` from now on (published to the backend first)."""
        self.backend = self.backend.publish(knowledge)
        self.knowledge = knowledge

    def close(self) -> None:
        self.backend.close()

    def refresh_if_due(self) -> None:
        """Pick up changed documents: at most every ``refresh_seconds``, in the background.

        The check compares content (the index fingerprint hashes every document's bytes), not
        names, sizes and modification times, which an edit can leave unchanged; an index that
        is not a settled outcome (a file's parse was lost) is built again too
        (``ingestion.currency``). It runs in a thread so that ``connect()`` stays free.
        """
        interval = self.config.refresh_seconds
        if interval <= 0 or time.monotonic() - self._checked_at < interval:
            return
        self._checked_at = time.monotonic()
        if self._settings is None or self.knowledge is None:
            return  # a Milvus replica: new data arrives in the collection, not in `docs`
        if not self._refreshing.acquire(blocking=False):
            return
        threading.Thread(target=self._refresh, args=(self.knowledge,), daemon=True).start()

    def _refresh(self, served: EmbeddedKnowledge) -> None:
        assert self._settings is not None
        try:
            if is_current(served.fingerprint, self._settings.fingerprint(self.embeddings)):
                return
            withheld = changed_chunk_ids(served, self._settings)
            if withheld:  # before the rebuild, which may take minutes
                self.backend = self.backend.withhold(withheld)
            try:
                knowledge = ensure_index(self._settings, self.embeddings, progress=False).knowledge
            except Exception as error:  # serve only what the documents still say; report why
                logger.error("knowledge_search.refresh.failed", error=str(error))
                knowledge = without_changed_chunks(served, self._settings)
            self.swap(knowledge)
            logger.info("knowledge_search.refresh.done", chunks=len(knowledge))
        except Exception as error:
            logger.error("knowledge_search.refresh.failed", error=str(error))
        finally:
            self._refreshing.release()


def index_settings(config: StoreConfig) -> IndexSettings:
    """How to build the index from ``docs`` (which a writer must have)."""
    if config.docs is None or not config.docs.is_dir():
        raise ConfigurationError(
            f"vector_store.docs: folder '{config.docs}' does not exist; indexing (the console's "
            "`index` command) reads the knowledge base from it"
        )
    return IndexSettings(
        docs=config.docs,
        index_path=config.index_path,
        chunk_size=config.chunk_size,
        chunk_overlap=config.chunk_overlap,
        embedding_batch_size=config.embedding_batch_size,
        exact_search_below=config.exact_search_below,
        language=config.language,
        access_attributes=config.access_attributes,
        extra_suffixes=format_suffixes(config.document_formats),
        faq_columns=FaqColumns(config.faq_columns.question, config.faq_columns.answer),
        onnx_export=None if config.query_embedder == "rasa" else config.index_path / EXPORT_FOLDER,
        bf16=config.document_precision == "auto",
    )


def _fresh(read_at: float) -> bool:
    return time.monotonic() - read_at < READABLE_VALUES_TTL_S


def _milvus_writer(
    config: StoreConfig, settings: IndexSettings, embeddings: Any
) -> MilvusBackend | None:
    """The collection a writer syncs, opened before the local build. When the documents changed
    since that build, their outdated rows are withheld first: the build may embed for minutes."""
    if config.backend != "milvus" or config.milvus is None:
        return None
    from rasa_context_retrieval.milvus.backend import MilvusBackend

    milvus = MilvusBackend.open(config.milvus, writes=True, fields=config.metadata_fields)
    try:
        built = IndexDirectory(settings.index_path).current_fingerprint()
        if not is_current(built, settings.fingerprint(embeddings)):
            milvus.store.withhold_outdated(
                chunks_on_disk(settings), embedding_model=embedder_identity(embeddings)
            )
    except Exception:
        milvus.close()
        raise
    return milvus


def _check_embedding_model(embeddings: Any) -> None:
    """Refuse a corrupt copy of the bundled model before it embeds anything."""
    model = str(getattr(embeddings, "model", "") or "")
    if is_bundled_model(model):
        verify_bundled_model(Path(model))
