"""The check compares the channel's entitlement keys with the store's access filters, and what it
says is what happens over HTTP.

An assistant whose endpoints.yml filters documents on an entitlement ``team`` but whose
credentials.yml lets the entitled channel set only ``plan`` serves the finance team's documents
to no one: a token granting ``team`` is read for nothing. The check names both files and the key
as an error; once the channel sets ``team`` the token holder reads them and the check is clean.
A key the channel sets that no access filter reads is a warning (a misspelling, most likely).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from rasa_context_retrieval.channels.entitled_rest import EntitledRestInput
from rasa_context_retrieval.preflight import CheckReport, check_assistant
from rasa_context_retrieval.store import ContextRetrieval
from tests.store_support import connected_store
from tests.test_entitled_rest_channel import (
    AUDIENCE,
    ISSUER,
    SECRET,
    Client,
    answering_from,
    client_of,
    hs256,
)

CHANNEL = "rasa_context_retrieval.channels.entitled_rest.EntitledRestInput"
STORE_CLASS = "rasa_context_retrieval.ContextRetrieval"
FINANCE = {"finance/budget.md"}
PUBLIC = {"help/storage.md"}
DOCUMENTS = {
    "finance/budget.md": "---\nteam: [finance]\n---\nThe storage budget for next year: 40 TB.",
    "help/storage.md": "How storage is counted: every file version counts.",
}


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """config.yml, endpoints.yml and the documents; credentials.yml is each test's."""
    folder = tmp_path_factory.mktemp("assistant")
    for name, text in DOCUMENTS.items():
        (folder / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    block = {
        "type": STORE_CLASS,
        "docs": str(folder / "docs"),
        "index_path": str(folder / ".index"),
        "access_filters": {"team": "team"},
        "metadata_fields": [{"name": "team", "type": "list[string]"}],
        "top_k": 10,
    }
    policy = {"name": "EnterpriseSearchPolicy", "vector_store": {"type": STORE_CLASS}}
    (folder / "config.yml").write_text(yaml.safe_dump({"policies": [policy]}))
    (folder / "endpoints.yml").write_text(yaml.safe_dump({"vector_store": block}))
    return folder


@pytest.fixture(scope="module")
def store(embedder: Any, assistant: Path) -> ContextRetrieval:
    block = yaml.safe_load((assistant / "endpoints.yml").read_text())["vector_store"]
    return connected_store(embedder, {key: value for key, value in block.items() if key != "type"})


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENTITLEMENTS_SECRET", SECRET)


def channel_entry(*entitlement_keys: str) -> dict[str, Any]:
    return {"entitlement_keys": list(entitlement_keys), "audience": AUDIENCE, "issuer": ISSUER}


def checked(assistant: Path, entry: Mapping[str, Any]) -> CheckReport:
    """The check of the assistant with ``entry`` as the channel's credentials.yml entry."""
    (assistant / "credentials.yml").write_text(yaml.safe_dump({CHANNEL: dict(entry)}))
    return check_assistant(
        str(assistant / "config.yml"),
        str(assistant / "endpoints.yml"),
        str(assistant / "credentials.yml"),
    ).report


@asynccontextmanager
async def served(store: ContextRetrieval, entry: Mapping[str, Any]) -> AsyncIterator[Client]:
    async with client_of(EntitledRestInput.from_credentials(entry), answering_from(store)) as c:
        yield c


def finance_token(subject: str) -> str:
    claims = {"sub": subject, "exp": int(time.time()) + 600, "aud": AUDIENCE, "iss": ISSUER}
    return hs256({**claims, "entitlements": {"team": "finance", "plan": "premium"}})


async def test_a_key_the_store_reads_and_the_channel_never_sets_is_an_error_naming_both_files(
    assistant: Path, store: ContextRetrieval
) -> None:
    mismatched = channel_entry("plan")
    async with served(store, mismatched) as client:
        _, found = await client.say("ann", finance_token("ann"))
    assert found == PUBLIC  # the token grants team finance, and the channel never reads it
    report = checked(assistant, mismatched)
    [error] = report.errors
    assert error.where == f"{assistant / 'endpoints.yml'} vector_store.access_filters.team"
    assert str(assistant / "credentials.yml") in error.message
    assert "`team`" in error.message and "entitlement_keys: [plan]" in error.message
    # Once the channel sets the key, its holders read their documents and nothing is found.
    fixed = channel_entry("team")
    async with served(store, fixed) as client:
        _, found = await client.say("ann", finance_token("ann"))
        _, anonymous = await client.say("bob")
    assert (found, anonymous) == (FINANCE | PUBLIC, PUBLIC)
    assert checked(assistant, fixed).findings == []


def test_a_key_the_channel_sets_and_no_access_filter_reads_is_a_warning(assistant: Path) -> None:
    """``user_id`` is set by the channel too (from the token): a filter may read it."""
    endpoints = assistant / "endpoints.yml"
    original = endpoints.read_text()
    block = yaml.safe_load(original)
    block["vector_store"]["access_filters"] = {"user_id": "team", "team": "team"}
    endpoints.write_text(yaml.safe_dump(block))
    try:
        report = checked(assistant, channel_entry("team", "taem"))
    finally:
        endpoints.write_text(original)
    [warning] = report.findings
    assert warning.severity == "warning"
    assert warning.where == f"{assistant / 'credentials.yml'} {CHANNEL} entitlement_keys"
    assert "`taem`" in warning.message and str(endpoints) in warning.message
    assert report.passed


def test_the_keys_are_compared_when_the_signing_secret_is_not_in_this_environment(
    assistant: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check run where the secret is not exported still names the mismatched key."""
    monkeypatch.delenv("ENTITLEMENTS_SECRET")
    report = checked(assistant, channel_entry("plan"))
    wheres = [error.where for error in report.errors]
    assert f"{assistant / 'endpoints.yml'} vector_store.access_filters.team" in wheres


def plan_token(subject: str) -> str:
    """A valid token that grants a plan and says nothing about a team."""
    claims = {"sub": subject, "exp": int(time.time()) + 600, "aud": AUDIENCE, "iss": ISSUER}
    return hs256({**claims, "entitlements": {"plan": "premium"}})


async def test_a_key_the_store_reads_and_the_channel_never_sets_cannot_be_claimed_in_the_body(
    store: ContextRetrieval,
) -> None:
    """The mismatch above fails closed at run time too, where no check has run: the body's
    ``team`` reaches no search, with a token or without one."""
    claimed = {"team": "finance"}
    async with served(store, channel_entry("plan")) as client:
        anonymous = await client.say("eve", metadata=claimed)
        signed_in = await client.say("ann", plan_token("ann"), metadata=claimed)
    assert anonymous == ("anonymous:eve", PUBLIC)
    assert signed_in == ("user:ann", PUBLIC)


async def test_a_key_the_store_reads_and_the_channel_takes_from_the_client_is_an_error(
    assistant: Path, store: ContextRetrieval
) -> None:
    """Listing an access filter's key in client_metadata_keys lets any client claim it, as the
    check says: the channel cannot see endpoints.yml, so only the check can tell."""
    entry = {**channel_entry("plan"), "client_metadata_keys": ["team", "locale"]}
    async with served(store, entry) as client:
        _, found = await client.say("eve", metadata={"team": "finance"})
    assert found == FINANCE | PUBLIC
    [error] = checked(assistant, entry).errors
    assert error.where == f"{assistant / 'endpoints.yml'} vector_store.access_filters.team"
    assert "client_metadata_keys" in error.message and "any client" in error.message
    assert str(assistant / "credentials.yml") in error.message
