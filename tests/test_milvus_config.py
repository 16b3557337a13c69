"""The ``milvus:`` block: secrets only through environment variables, errors that say the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.milvus.config import MilvusConfig, MilvusConfigError


@pytest.mark.parametrize("key", ["token", "password", "user", "api_key"])
def test_a_secret_written_in_the_yaml_is_refused_with_the_env_key_to_use(key: str) -> None:
    with pytest.raises(ValidationError, match=f"milvus.{key}_env"):
        MilvusConfig.model_validate({"uri": "https://x.zillizcloud.com:19530", key: "s3cr3t"})


def test_credentials_inside_the_uri_are_refused() -> None:
    with pytest.raises(ValidationError, match="credentials inside the uri"):
        MilvusConfig(uri="https://root:Milvus@db.example.com:19530")


def test_a_token_pasted_into_token_env_is_refused() -> None:
    with pytest.raises(ValidationError, match="not an environment variable name"):
        MilvusConfig(token_env="db_admin:Sup3r-secret")


def test_an_unknown_key_is_refused() -> None:
    with pytest.raises(ValidationError, match="colection"):
        MilvusConfig.model_validate({"colection": "kb"})


def test_the_token_is_read_from_the_named_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KB_MILVUS_TOKEN", "abc123")
    config = MilvusConfig(uri="https://x.zillizcloud.com:19530", token_env="KB_MILVUS_TOKEN")
    arguments = config.client_arguments()
    assert arguments["token"] == "abc123"
    assert arguments["secure"] is True


def test_an_unset_environment_variable_names_the_key_and_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KB_MILVUS_PASSWORD", raising=False)
    monkeypatch.setenv("KB_MILVUS_USER", "reader")
    config = MilvusConfig(user_env="KB_MILVUS_USER", password_env="KB_MILVUS_PASSWORD")
    with pytest.raises(MilvusConfigError, match="password_env.*KB_MILVUS_PASSWORD"):
        config.client_arguments()


def test_user_without_password_is_refused() -> None:
    with pytest.raises(ValidationError, match="give both or neither"):
        MilvusConfig(user_env="KB_MILVUS_USER")


def test_a_missing_certificate_file_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="milvus.server_pem_path"):
        MilvusConfig(secure=True, server_pem_path=tmp_path / "absent.pem")


def test_tls_files_are_passed_to_the_client(tmp_path: Path) -> None:
    pem = tmp_path / "server.pem"
    pem.write_text("certificate")
    config = MilvusConfig(secure=True, server_pem_path=pem, server_name="milvus.internal")
    arguments = config.client_arguments()
    assert arguments["server_pem_path"] == str(pem)
    assert arguments["server_name"] == "milvus.internal"
    assert arguments["secure"] is True


def test_defaults_connect_to_a_local_server_with_exact_search() -> None:
    config = MilvusConfig()
    assert config.index_type == "FLAT"
    assert config.ingest == "auto"
    assert config.client_arguments() == {"uri": "http://localhost:19530", "timeout": 10.0}


REPLICA = {"backend": "milvus", "milvus": {"collection": "kb", "ingest": "console_only"}}


@pytest.mark.parametrize("docs", [None, "no/such/folder"])
def test_a_replica_that_never_ingests_needs_no_documents(docs: str | None) -> None:
    block = {**REPLICA, **({"docs": docs} if docs else {})}
    config = StoreConfig.from_kwargs(block)
    assert config.milvus_replica


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"backend": "milvus", "milvus": {"collection": "kb"}}, "vector_store.docs: required"),
        ({"docs": "no/such/folder"}, "vector_store.docs: folder 'no/such/folder' does not exist"),
    ],
)
def test_whoever_ingests_still_needs_the_documents(block: dict, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        StoreConfig.from_kwargs(block)


def test_a_replica_refuses_hybrid_search_in_one_message_that_says_why() -> None:
    with pytest.raises(ConfigurationError) as refused:
        StoreConfig.from_kwargs({**REPLICA, "hybrid": True})
    message = str(refused.value)
    assert message.count("\n") == 1  # the header line and one fault
    assert "hybrid" in message and "BM25" in message and "Milvus 2.3" in message


def test_bm25_is_off_by_default_on_milvus_so_the_console_and_every_replica_answer_alike() -> None:
    replica = StoreConfig.from_kwargs(REPLICA)
    assert replica.hybrid is None and replica.lexical_search is False
    assert StoreConfig.from_kwargs({**REPLICA, "hybrid": False}).lexical_search is False
