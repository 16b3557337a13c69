"""What the tests that drive the whole store share: a store connected the way Rasa connects it,
an embedding client that counts its texts, and a tracker state as Rasa hands it to ``search()``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.store import ContextRetrieval


def connected_store(
    embeddings: Any, config: EndpointConfig | Mapping[str, Any]
) -> ContextRetrieval:
    """A store on ``embeddings`` after Rasa's first ``connect()`` with ``config``, the
    ``vector_store`` block of endpoints.yml (as an EndpointConfig or its keys), once its index
    is open (``connect()`` returns at once and opens the index off the event loop)."""
    store = ContextRetrieval(embeddings=embeddings)
    store.connect(config if isinstance(config, EndpointConfig) else EndpointConfig(**config))
    store.engine  # noqa: B018 (waits for the index)
    return store


def tracker_state(*turns: tuple[str, str], **slots: Any) -> dict[str, Any]:
    """The tracker state of a conversation of ``(role, text)`` turns ("user" or "bot") with
    ``slots`` set; its latest message is the last user turn."""
    events = [{"event": role, "text": text} for role, text in turns]
    latest = next((text for role, text in reversed(turns) if role == "user"), None)
    return {"events": events, "slots": slots, "latest_message": {"text": latest}}


class CountingEmbedder:
    """An embedding client that counts the texts it is asked to embed, and can be made to fail
    like an unreachable embedding service."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts = 0
        self.fail = False

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def config(self) -> dict:
        return self.inner.config

    def embed(self, texts: list[str]) -> Any:
        if self.fail:
            raise ConnectionError("embedding service unreachable")
        self.texts += len(texts)
        return self.inner.embed(texts)
