"""Numeric entitlements are compared exactly: two organisations never share documents because
their ids round to the same float.

Ids issued by databases and id services (64-bit "snowflake" ids, say) are integers above 2**53,
where neighbouring ids have the same float value. Over loopback HTTP, a token for one
organisation asks the channel for documents of its own organisation; the organisation whose id
differs only in the last digits must stay invisible, on the rule itself and through the search.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.channels.entitled_rest import EntitledRestInput
from rasa_context_retrieval.store import ContextRetrieval
from tests.test_entitled_rest_channel import (
    AUDIENCE,
    ISSUER,
    SECRET,
    Client,
    answering_from,
    client_of,
    hs256,
)

OURS = 1234567890123456789
THEIRS = 1234567890123456790
"""The next id: a different organisation, with the same float value as ``OURS``."""
PARTNER = 42
"""An organisation that shares one document with ``OURS``."""
ORG = {"org": "org"}
DOCUMENTS = {
    "ours.md": f"---\norg: {OURS}\n---\nOur storage: 2 TB for all your files.",
    "theirs.md": f"---\norg: {THEIRS}\n---\nTheir storage: the merger plan for your files.",
    "shared.md": f"---\norg: [{OURS}, {PARTNER}]\n---\nShared storage: a joint folder of files.",
    "help.md": "How storage is counted: every file version counts.",
}


def test_the_ids_collide_as_floats() -> None:
    """The premise: a comparison through float cannot tell the two organisations apart."""
    assert OURS != THEIRS and float(OURS) == float(THEIRS)


@pytest.mark.parametrize("held", [THEIRS, [THEIRS], float(THEIRS), str(OURS)])
def test_an_integer_entitlement_admits_only_its_own_value(held: Any) -> None:
    access = AccessFilter.from_channel(ChannelMetadata({"org": OURS}), ORG)
    assert access is not None
    assert access.admits({"org": OURS})
    assert not access.admits({"org": held})


def test_numbers_of_equal_value_still_match() -> None:
    access = AccessFilter.from_channel(ChannelMetadata({"org": [7, 2.5]}), ORG)
    assert access is not None
    assert access.admits({"org": 7.0}) and access.admits({"org": 2.5})
    assert access.admits({"org": [3, 7.0]})
    assert not access.admits({"org": True}) and not access.admits({"org": "7"})


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def connected(embedder: Any, docs: Path, index_path: Path, **block: Any) -> ContextRetrieval:
    store = ContextRetrieval(embedder)
    store.connect(
        EndpointConfig(
            docs=str(docs),
            index_path=str(index_path),
            access_filters=ORG,
            metadata_fields=[{"name": "org", "type": "integer"}],
            top_k=10,
            **block,
        )
    )
    return store


@pytest.fixture(scope="module")
def store(embedder: Any, docs: Path, tmp_path_factory: pytest.TempPathFactory) -> ContextRetrieval:
    return connected(embedder, docs, tmp_path_factory.mktemp("index"))


@pytest.fixture
async def client(store: ContextRetrieval, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Client]:
    monkeypatch.setenv("ENTITLEMENTS_SECRET", SECRET)
    credentials = {"entitlement_keys": ["org"], "audience": AUDIENCE, "issuer": ISSUER}
    channel = EntitledRestInput.from_credentials(credentials)
    async with client_of(channel, answering_from(store)) as served:
        yield served


def token(org: Any) -> str:
    expires = int(time.time()) + 600
    claims = {"sub": "member", "exp": expires, "aud": AUDIENCE, "iss": ISSUER}
    return hs256({**claims, "entitlements": {"org": org}})


async def test_a_member_reads_their_organisations_documents_and_never_the_next_ones(
    client: Client,
) -> None:
    _, found = await client.say("member", token(OURS))
    assert found == {"ours.md", "shared.md", "help.md"}
    _, found = await client.say("member", token(THEIRS))
    assert found == {"theirs.md", "help.md"}


async def test_a_document_listing_several_organisations_is_read_by_each(client: Client) -> None:
    """A list's numbers are members like any other: the partner reads the shared document."""
    for org in (PARTNER, float(PARTNER), [PARTNER, 7]):
        _, found = await client.say("member", token(org))
        assert found == {"shared.md", "help.md"}, org


async def test_an_organisation_id_sent_as_text_or_a_float_reads_public_documents_only(
    client: Client,
) -> None:
    for claimed in (str(OURS), float(OURS)):
        _, found = await client.say("member", token(claimed))
        assert found == {"help.md"}, claimed
