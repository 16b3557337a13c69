"""The ``milvus:`` block of the ``vector_store:`` configuration, validated once at ``connect()``.

Secrets never live in the assistant's YAML (it is committed and shipped with the model): the block
names environment variables (``token_env``, or ``user_env`` + ``password_env``) and the values are
read from the environment when the store connects. A secret written in clear, also inside the
``uri`` (``https://user:pass@host``), is refused with an error that says what to write instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rasa_context_retrieval.errors import ContextRetrievalError

ConsistencyLevel = Literal["Strong", "Bounded", "Session", "Eventually"]
IndexType = Literal[
    "FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "HNSW", "SCANN", "DISKANN", "AUTOINDEX"
]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
_CLEAR_SECRET_KEYS = ("token", "password", "user", "api_key", "secret")
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


class MilvusConfigError(ContextRetrievalError, ValueError):
    """The ``milvus:`` block cannot be used; the message names the key and the fix."""


class MilvusConfig(BaseModel):
    """Where the Milvus collection lives, how to reach it securely and how to index it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str = "http://localhost:19530"
    collection: str = "rasa_knowledge"
    token_env: str | None = None
    """Environment variable holding an API key or ``user:password`` (Zilliz Cloud, Milvus RBAC)."""
    user_env: str | None = None
    password_env: str | None = None
    secure: bool = False
    """TLS; implied by an ``https://`` uri."""
    server_pem_path: Path | None = None
    server_name: str | None = None
    client_pem_path: Path | None = None
    client_key_path: Path | None = None
    ca_pem_path: Path | None = None
    consistency_level: ConsistencyLevel = "Session"
    """Of searches. ``Session`` sees this replica's own writes at once and others' within the
    bounded staleness; ``Strong`` waits for the next time tick (~200 ms a search on Milvus 2.3).
    Sync always reads ``Strong``."""
    index_type: IndexType = "FLAT"
    """FLAT is exact (the same results as FAISS); the others trade recall for speed at scale."""
    index_params: dict[str, int | float | str] = Field(default_factory=dict)
    search_params: dict[str, int | float | str] = Field(default_factory=dict)
    ingest: Literal["auto", "console_only"] = "auto"
    """``auto``: the assistant syncs the knowledge base at start; ``console_only``: it only
    connects, and the console's ``index`` command ingests (a CI/CD step)."""
    timeout_s: float = Field(default=10.0, gt=0, strict=True)
    lease_ttl_s: float = Field(default=60.0, gt=1, strict=True)
    """How long a sync lease lives without renewal before another replica may take over."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_clear_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in _CLEAR_SECRET_KEYS:
                if key in data:
                    raise MilvusConfigError(
                        f"milvus.{key}: secrets are not accepted in the configuration. Put the "
                        f"value in an environment variable and name it with milvus.{key}_env "
                        f"(e.g. {key}_env: MILVUS_{key.upper()})."
                    )
        return data

    @field_validator("uri")
    @classmethod
    def _check_uri(cls, uri: str) -> str:
        parts = urlsplit(uri)
        if parts.scheme not in ("http", "https", "tcp", "grpc", "grpcs"):
            raise MilvusConfigError(
                f"milvus.uri: {uri!r} is not a Milvus address; write e.g. http://localhost:19530 "
                "or https://<cluster>.zillizcloud.com:19530."
            )
        if parts.username or parts.password:
            raise MilvusConfigError(
                "milvus.uri: credentials inside the uri are not accepted; remove them and set "
                "milvus.token_env (or user_env + password_env) to environment variable names."
            )
        return uri

    @field_validator("collection")
    @classmethod
    def _check_collection(cls, name: str) -> str:
        if not _COLLECTION_NAME.fullmatch(name):
            raise MilvusConfigError(
                f"milvus.collection: {name!r} is not a valid Milvus collection name; use letters, "
                "digits and underscores, starting with a letter or underscore."
            )
        return name

    @field_validator("token_env", "user_env", "password_env")
    @classmethod
    def _check_env_name(cls, name: str | None) -> str | None:
        if name is not None and not _ENV_NAME.fullmatch(name):
            raise MilvusConfigError(
                f"milvus.*_env: {name!r} is not an environment variable name. These keys name a "
                "variable (e.g. MILVUS_TOKEN) whose value is the secret; never the secret itself."
            )
        return name

    @model_validator(mode="after")
    def _check_combinations(self) -> MilvusConfig:
        if (self.user_env is None) != (self.password_env is None):
            raise MilvusConfigError("milvus.user_env / milvus.password_env: give both or neither.")
        if self.token_env and self.user_env:
            raise MilvusConfigError(
                "milvus.token_env and milvus.user_env: choose one way to authenticate."
            )
        if (self.client_pem_path is None) != (self.client_key_path is None):
            raise MilvusConfigError(
                "milvus.client_pem_path / milvus.client_key_path: mutual TLS needs both."
            )
        for key in ("server_pem_path", "client_pem_path", "client_key_path", "ca_pem_path"):
            path = getattr(self, key)
            if path is not None and not path.is_file():
                raise MilvusConfigError(f"milvus.{key}: no file at {str(path)!r}.")
        return self

    @property
    def uses_tls(self) -> bool:
        return self.secure or urlsplit(self.uri).scheme in ("https", "grpcs")

    @property
    def is_loopback(self) -> bool:
        return (urlsplit(self.uri).hostname or "") in _LOOPBACK_HOSTS

    def client_arguments(self) -> dict[str, Any]:
        """Keyword arguments for ``pymilvus.MilvusClient``, secrets read from the environment.

        Raises:
            MilvusConfigError: if a named environment variable is not set.
        """
        arguments: dict[str, Any] = {"uri": self.uri, "timeout": self.timeout_s}
        if self.token_env:
            arguments["token"] = _read_env(self.token_env, "token_env")
        if self.user_env and self.password_env:
            arguments["user"] = _read_env(self.user_env, "user_env")
            arguments["password"] = _read_env(self.password_env, "password_env")
        if self.uses_tls:
            arguments["secure"] = True
        optional = {
            "server_pem_path": self.server_pem_path,
            "server_name": self.server_name,
            "client_pem_path": self.client_pem_path,
            "client_key_path": self.client_key_path,
            "ca_pem_path": self.ca_pem_path,
        }
        arguments.update({key: str(value) for key, value in optional.items() if value})
        return arguments


def _read_env(name: str, key: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise MilvusConfigError(
            f"milvus.{key}: the environment variable {name} is not set (or empty); export it "
            "where the assistant runs, e.g. from your secret manager."
        )
    return value
