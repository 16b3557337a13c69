"""Collection versions on a real Milvus server: typed fields for declared attributes, layout
changes without downtime, the previous release's collection read and then rebuilt, and the
64-field limit."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient
from structlog.testing import capture_logs

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus import serving as serving_module
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.layout import MAX_FIELDS, CollectionLayout
from rasa_context_retrieval.milvus.normal_form import normal_form
from rasa_context_retrieval.milvus.store import MilvusChunkStore, content_hash
from tests.milvus_server import milvus_uri  # noqa: F401

pytestmark = pytest.mark.milvus

DIMENSION = 16
PLAN = MetadataField(name="plan", type="string")
RANK = MetadataField(name="rank", type="integer")
REGION = MetadataField(name="region", type="list[string]")
CHUNKS = [
    Chunk("a", "a", {"source": "a.md", "plan": "Premium", "rank": 3, "region": ["eu", "us"]}),
    Chunk("b", "b", {"source": "b.md", "plan": "basic", "rank": "7", "region": "eu"}),
    Chunk("c", "c", {"source": "c.md", "plan": "premium", "rank": 12}),
    Chunk("d", "d", {"source": "d.md", "rank": -4, "region": []}),
    Chunk("e", "e", {"source": "e.md", "plan": " ", "region": ["apac"]}),
]
FILTERS = [
    'eq("plan", "premium")',
    'ne("plan", "premium")',
    'gt("rank", 2.5)',
    'ne("rank", 3)',
    'in("region", ["eu"])',
    'nin("region", ["eu"])',
    'not(eq("region", "apac"))',
    'or(eq("rank", "7"), contain("region", "apac"))',
]


def embed(texts: list[str]) -> np.ndarray:
    seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in texts]
    return np.stack([np.random.default_rng(seed).normal(size=DIMENSION) for seed in seeds])


def selected(store: MilvusChunkStore, text: str) -> set[str]:
    hits = store.search(np.ones(DIMENSION), parse_filter(text), k=50)
    return {hit.chunk.chunk_id for hit in hits}


def specified(chunks: Sequence[Chunk], text: str) -> set[str]:
    mask = parse_filter(text).accept(FaissTranslator(MetadataColumns([c.metadata for c in chunks])))
    return {chunk.chunk_id for chunk, allowed in zip(chunks, mask, strict=True) if allowed}


def assert_same_selections(store: MilvusChunkStore, chunks: Sequence[Chunk]) -> None:
    for text in FILTERS:
        assert selected(store, text) == specified(chunks, text), (text, store.expression(None))


@pytest.fixture
def config(milvus_uri: str) -> MilvusConfig:  # noqa: F811
    return MilvusConfig(uri=milvus_uri, collection=f"versions_{uuid.uuid4().hex[:8]}")


@pytest.fixture
def client(milvus_uri: str) -> Iterator[MilvusClient]:  # noqa: F811
    client = MilvusClient(uri=milvus_uri)
    yield client
    client.close()


@pytest.fixture
def pointer_read_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replicas re-read the version pointer (in the background) on every search."""
    monkeypatch.setattr(serving_module, "POINTER_TTL_S", 0.0)


@pytest.mark.usefixtures("pointer_read_every_time")
def test_a_newly_declared_attribute_is_served_from_a_new_version_once_it_is_published(
    config: MilvusConfig, client: MilvusClient
) -> None:
    writer = MilvusChunkStore.connect(config, [PLAN])
    writer.sync(CHUNKS, embed)
    first = writer.served()
    assert first is not None and first.layout.typed_names == {"plan"}
    replica = MilvusChunkStore.connect(config, [PLAN])
    seen_while_filling: list[tuple[str, set[str]]] = []

    def embed_while_the_replica_searches(texts: list[str]) -> np.ndarray:
        version = replica.served()
        assert version is not None
        seen_while_filling.append((version.name, selected(replica, 'gt("rank", 2.5)')))
        return embed(texts)

    upgraded = MilvusChunkStore.connect(config, [PLAN, RANK, REGION])
    upgraded.sync(CHUNKS, embed_while_the_replica_searches)

    assert seen_while_filling, "the new version was filled without embedding anything"
    assert seen_while_filling == [(first.name, {"a", "b", "c"})] * len(seen_while_filling)
    second = replica.read_version()
    assert second is not None and second.name != first.name
    assert second.layout.typed_names == {"plan", "rank", "region"}
    assert_same_selections(replica, CHUNKS)
    assert client.has_collection(first.name), "the previous version is dropped too early"

    MilvusChunkStore.connect(config, [RANK]).sync(CHUNKS, embed)
    third = replica.read_version()
    assert third is not None and third.name not in (first.name, second.name)
    assert client.has_collection(second.name), "the version replicas may still search is kept"
    assert not client.has_collection(first.name), "versions no replica searches are dropped"


def write_previous_release_collection(client: MilvusClient, name: str) -> None:
    """A collection exactly as the previous release wrote it: every attribute in one JSON
    field, no description, no presence or typed fields."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("chunk_id", DataType.VARCHAR, max_length=1024, is_primary=True)
    schema.add_field("source", DataType.VARCHAR, max_length=4096)
    schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("text", DataType.VARCHAR, max_length=65_535)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("filterable", DataType.JSON)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIMENSION)
    index_params = client.prepare_index_params()
    index_params.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    # Strong: the replica under test reads with another client than this one.
    client.create_collection(
        name, schema=schema, index_params=index_params, consistency_level="Strong"
    )
    vectors = embed([chunk.text for chunk in CHUNKS])
    client.upsert(
        name,
        [
            {
                "chunk_id": chunk.chunk_id,
                "source": chunk.metadata["source"],
                "content_hash": content_hash(chunk),
                "text": chunk.text,
                "metadata": chunk.metadata,
                "filterable": normal_form(chunk.metadata),
                "embedding": vector.tolist(),
            }
            for chunk, vector in zip(CHUNKS, vectors, strict=True)
        ],
    )


@pytest.mark.usefixtures("pointer_read_every_time")
def test_a_collection_of_the_previous_release_is_read_as_such_then_rebuilt(
    config: MilvusConfig, client: MilvusClient
) -> None:
    write_previous_release_collection(client, config.collection)
    replica = MilvusChunkStore.connect(config, [PLAN, RANK, REGION])

    previous = replica.served()
    assert previous is not None and previous.name == config.collection
    assert previous.layout == CollectionLayout.legacy()
    assert_same_selections(replica, CHUNKS)
    assert replica.values_of("plan") == {"Premium", "basic", "premium"}

    report = MilvusChunkStore.connect(config, [PLAN, RANK, REGION]).sync(CHUNKS, embed)

    rebuilt = replica.read_version()
    assert rebuilt is not None and rebuilt.name.startswith(config.collection + "__v")
    assert rebuilt.layout.typed_names == {"plan", "rank", "region"}
    assert report.embedded == len(CHUNKS) and replica.count() == len(CHUNKS)
    assert_same_selections(replica, CHUNKS)
    assert replica.values_of("plan") == {"Premium", "basic", "premium"}
    assert client.has_collection(config.collection), "replicas of the previous release read it"


def test_a_first_value_a_typed_field_cannot_hold_builds_a_version_that_keeps_it(
    config: MilvusConfig,
) -> None:
    writer = MilvusChunkStore.connect(config, [PLAN, RANK, REGION])
    writer.sync(CHUNKS, embed)
    plain = writer.served()
    assert plain is not None and plain.layout.overflow == frozenset()

    odd = [*CHUNKS, Chunk("f", "f", {"source": "f.md", "rank": "n/a", "plan": "2024-01-01"})]
    report = writer.sync(odd, embed)

    widened = writer.served()
    assert widened is not None and widened.layout.overflow == {"rank", "plan"}
    assert report.embedded == len(odd)
    assert_same_selections(writer, odd)
    assert selected(writer, 'eq("rank", "n/a")') == {"f"}
    assert selected(writer, 'gte("plan", "2023-06-01")') == {"f"}
    assert writer.sync(odd, embed).embedded == 0, "an unchanged sync rebuilt the version"
    assert writer.served() == widened


def many_fields(count: int) -> list[MetadataField]:
    return [MetadataField(name=f"attribute {i}", type="string") for i in range(count)]


def test_attributes_past_the_field_limit_stay_in_the_json_field_and_are_logged_once() -> None:
    with capture_logs() as logs:
        layout = CollectionLayout.planned([RANK, *many_fields(40), REGION])

    typed = [typed.attribute for typed in layout.typed]
    assert typed[0] == "rank" and "region" not in typed
    fields = 8 + sum(typed.field_count for typed in layout.typed)
    assert MAX_FIELDS - 2 < fields <= MAX_FIELDS
    [warning] = [log for log in logs if log["event"] == "milvus.layout.fields_over_limit"]
    assert warning["attributes"][-1] == "region"
    assert len(warning["attributes"]) == 42 - len(typed)


def test_a_schema_declaring_more_than_fits_still_filters_every_attribute(
    config: MilvusConfig, client: MilvusClient
) -> None:
    declared = [*many_fields(30), PLAN]
    chunks = [
        Chunk(f"c{i}", f"c{i}", {f"attribute {j}": f"v{(i + j) % 3}" for j in range(30)})
        for i in range(6)
    ]
    for chunk in chunks[:3]:
        chunk.metadata["plan"] = "premium"
    store = MilvusChunkStore.connect(config, declared)
    store.sync(chunks, embed)

    version = store.served()
    assert version is not None
    assert len(client.describe_collection(version.name)["fields"]) <= MAX_FIELDS
    assert "plan" not in version.layout.typed_names
    for text in ('eq("attribute 0", "v1")', 'ne("attribute 29", "v0")', 'eq("plan", "premium")'):
        assert selected(store, text) == specified(chunks, text), text


REGION_WITH_VALUES = REGION.model_copy(update={"values": ("EU", "us", "latam")})
"""A vocabulary that leaves out one value the chunks hold ("apac")."""


@pytest.mark.usefixtures("pointer_read_every_time")
def test_declaring_a_lists_values_builds_a_version_with_member_flags(
    config: MilvusConfig, client: MilvusClient
) -> None:
    writer = MilvusChunkStore.connect(config, [PLAN, RANK, REGION])
    writer.sync(CHUNKS, embed)
    replica = MilvusChunkStore.connect(config, [PLAN, RANK, REGION])
    plain = replica.served()
    assert plain is not None

    report = MilvusChunkStore.connect(config, [PLAN, RANK, REGION_WITH_VALUES]).sync(CHUNKS, embed)

    flagged = replica.read_version()
    assert flagged is not None and flagged.name != plain.name
    region = flagged.layout.typed_attribute("region")
    assert region is not None and region.flags == ("eu", "latam", "us")
    fields = {field["name"] for field in client.describe_collection(flagged.name)["fields"]}
    assert {region.flag_field(value) for value in region.flags} <= fields
    assert report.embedded == len(CHUNKS)
    assert_same_selections(replica, CHUNKS)
    assert selected(replica, 'in("region", ["apac", "us"])') == {"a", "e"}
    assert selected(replica, 'nin("region", ["latam", "eu"])') == {"e"}


def test_a_layout_without_member_flags_keeps_its_version_name() -> None:
    """Collections written before member flags existed are served on, not rebuilt."""
    layout = CollectionLayout.planned([PLAN, RANK, REGION])
    assert '"flags"' not in layout.description()
    assert CollectionLayout.described(layout.description()) == layout
    flagged = CollectionLayout.planned([PLAN, RANK, REGION_WITH_VALUES])
    assert CollectionLayout.described(flagged.description()) == flagged
    assert flagged.version_name("kb") != layout.version_name("kb")


def test_member_flags_never_take_an_attributes_place_in_the_field_limit() -> None:
    with capture_logs() as logs:
        layout = CollectionLayout.planned([REGION_WITH_VALUES, *many_fields(25), RANK])

    typed = {typed.attribute: typed for typed in layout.typed}
    assert "rank" in typed and typed["region"].flags == ()
    assert 8 + sum(typed.field_count for typed in layout.typed) <= MAX_FIELDS
    [warning] = [log for log in logs if log["event"] == "milvus.layout.fields_over_limit"]
    assert warning["without_member_flags"] == ["region"] and warning["attributes"] == []
