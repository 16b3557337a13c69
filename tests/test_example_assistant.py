"""The example assistant's project files are a valid Rasa Pro 3.21 project that fits the plugin.

Runs without a Rasa licence: it loads the files through Rasa's own importer, validator and
training-graph recipe (what ``rasa data validate`` and the first step of ``rasa train`` do), and
checks that the knowledge base, endpoints.yml and the e2e tests agree with each other.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import Document, load_knowledge_base

REPO_ROOT = Path(__file__).resolve().parent.parent
E2E_FOLDER = REPO_ROOT / "tests" / "e2e"
PROJECTS = [
    ("config.yml", "endpoints.yml"),
    ("config-llm.yml", "endpoints-llm.yml"),
    ("config.yml", "endpoints-access.yml"),
]
PLUGIN_TYPE = "addons.custom_information_retrieval.MyVectorStore"
MODEL_FOLDER = ".model/all-MiniLM-L6-v2"


def _yaml(name: str) -> Any:
    return yaml.safe_load((REPO_ROOT / name).read_text(encoding="utf-8"))


def _vector_store_block(endpoints: str) -> dict[str, Any]:
    return dict(_yaml(endpoints)["vector_store"])


def _search_policy(config: str) -> dict[str, Any]:
    policies = _yaml(config)["policies"]
    return next(policy for policy in policies if policy["name"] == "EnterpriseSearchPolicy")


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative paths in the project files (docs, .index, .model) start at the repo root."""
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("RASA_TELEMETRY_ENABLED", "false")


@pytest.fixture(scope="module")
def domain() -> Any:
    from rasa.shared.core.domain import Domain

    return Domain.load(str(REPO_ROOT / "domain.yml"))


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    knowledge = load_knowledge_base(REPO_ROOT / "docs")
    assert knowledge.problems == [], [str(problem) for problem in knowledge.problems]
    return knowledge.documents


def _importer(config: str) -> Any:
    from rasa.shared.importers.importer import TrainingDataImporter

    return TrainingDataImporter.load_from_config(
        str(REPO_ROOT / config), str(REPO_ROOT / "domain.yml"), [str(REPO_ROOT / "data")]
    )


@pytest.mark.parametrize(("config", "endpoints"), PROJECTS)
def test_project_passes_rasa_data_validate(
    config: str, endpoints: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `rasa data validate -c <config> --endpoints <endpoints> --fail-on-warnings` runs."""
    from rasa.cli.data import _validate_files_with_configuration
    from rasa.exceptions import ValidationError

    monkeypatch.setenv("OPENAI_API_KEY", os.environ.get("OPENAI_API_KEY", "not-used-offline"))
    try:
        _validate_files_with_configuration(
            fail_on_warnings=True,
            max_history=None,
            importer=_importer(config),
            endpoints=str(REPO_ROOT / endpoints),
        )
    except ValidationError as error:
        pytest.fail(f"{config} + {endpoints} do not validate: {error} (see the log above)")


@pytest.mark.slow  # Rasa builds each config's training graph
@pytest.mark.parametrize("config", [config for config, _ in PROJECTS])
def test_config_builds_a_training_graph_with_installed_components(config: str) -> None:
    """The recipe step of `rasa train`: every component resolves (no missing extras)."""
    import rasa.engine.validation
    from rasa.engine.recipes.recipe import Recipe
    from rasa.shared.data import TrainingType

    importer = _importer(config)
    recipe = Recipe.recipe_for_name(importer.get_config().get("recipe"))
    full_config, _, _ = recipe.auto_configure(
        importer.get_config_file_for_auto_config(), importer.get_config(), TrainingType.BOTH
    )
    graph = recipe.graph_config_for_recipe(full_config, {}, training_type=TrainingType.BOTH)
    rasa.engine.validation.validate(graph)
    rasa.engine.validation.validate_flow_component_dependencies(
        importer.get_flows(), importer.get_domain(), importer.get_stories(), graph
    )
    rasa.engine.validation.validate_command_generator_setup(graph)
    node_names = " ".join(graph.predict_schema.nodes)
    assert "EnterpriseSearchPolicy" in node_names
    assert "NLUCommandAdapter" in node_names


@pytest.mark.parametrize(("config", "endpoints"), PROJECTS)
def test_search_policy_uses_the_plugin_with_the_local_model(config: str, endpoints: str) -> None:
    policy = _search_policy(config)
    assert policy["vector_store"]["type"] == PLUGIN_TYPE
    assert _vector_store_block(endpoints)["type"] == PLUGIN_TYPE
    assert 0.0 < policy["vector_store"]["threshold"] < 1.0
    embeddings = policy["embeddings"]
    if "model_group" in embeddings:
        groups = {group["id"]: group["models"] for group in _yaml(endpoints)["model_groups"]}
        embeddings = groups[embeddings["model_group"]][0]
    assert embeddings == {"provider": "huggingface_local", "model": MODEL_FOLDER}


def test_offline_config_answers_extractively_without_any_llm() -> None:
    config = _yaml("config.yml")
    assert _search_policy("config.yml")["use_generative_llm"] is False
    assert "llm" not in _search_policy("config.yml")
    component_names = [component["name"] for component in config["pipeline"]]
    assert not [name for name in component_names if "LLM" in name]
    block = _vector_store_block("endpoints.yml")
    assert (block["rewrite"], block["self_query"]) == ("heuristic", "rules")
    assert "llm" not in block


def test_llm_config_generates_answers_and_plans_with_an_llm() -> None:
    assert _search_policy("config-llm.yml")["use_generative_llm"] is True
    block = _vector_store_block("endpoints-llm.yml")
    assert (block["rewrite"], block["self_query"]) == ("llm", "llm")
    assert block["llm"] == {"provider": "openai", "model": "gpt-4o-mini", "timeout": 2}


@pytest.mark.parametrize("endpoints", [endpoints for _, endpoints in PROJECTS])
def test_vector_store_block_is_accepted_by_the_plugin(endpoints: str) -> None:
    block = _vector_store_block(endpoints)
    block.pop("type")
    config = StoreConfig.from_kwargs(block)
    assert config.docs == Path("docs")
    assert config.field_names == {
        "plan",
        "region",
        "platform",
        "category",
        "price_per_month",
        "max_devices",
        "updated",
    }


@pytest.mark.parametrize("endpoints", [endpoints for _, endpoints in PROJECTS])
def test_every_slot_filter_maps_a_domain_slot_to_a_declared_attribute(
    endpoints: str, domain: Any
) -> None:
    block = _vector_store_block(endpoints)
    declared = {field["name"]: field for field in block["metadata_fields"]}
    slot_filters = block["slot_filters"]
    if endpoints == "endpoints-access.yml":
        # The plan is an entitlement there, from channel metadata; the slot stays personalisation.
        assert slot_filters == {"region": "region"}
        assert block["access_filters"] == {"plan": "plan"}
    else:
        assert slot_filters == {"plan": "plan", "region": "region"}
    for slot_name, attribute in slot_filters.items():
        slot = next((slot for slot in domain.slots if slot.name == slot_name), None)
        assert slot is not None, f"slot_filters names slot {slot_name!r}, missing in domain.yml"
        assert attribute in declared, f"{attribute!r} is not in metadata_fields"
        # a slot can only take values that documents can carry
        assert set(slot.values) - {"__other__"} == set(declared[attribute]["values"])


def _metadata_problems(document: Document, declared: dict[str, dict[str, Any]]) -> Iterator[str]:
    for name, value in document.metadata.items():
        field = declared.get(name)
        if field is None:
            yield f"{document.source}: attribute {name!r} is not declared in metadata_fields"
            continue
        kind, allowed = field["type"], set(field.get("values") or [])
        if kind == "list[string]":
            ok = isinstance(value, list) and value and all(isinstance(v, str) for v in value)
            ok = ok and (not allowed or set(value) <= allowed)
        elif kind == "string":
            ok = isinstance(value, str) and (not allowed or value in allowed)
        elif kind == "float":
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif kind == "integer":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif kind == "date":
            ok = isinstance(value, str) and _is_iso_date(value)
        else:
            ok = False
        if not ok:
            yield f"{document.source}: {name}={value!r} does not fit {kind} {sorted(allowed)}"


def _is_iso_date(value: str) -> bool:
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def test_knowledge_base_metadata_uses_only_declared_attributes_and_values(
    documents: list[Document],
) -> None:
    declared = {
        field["name"]: field for field in _vector_store_block("endpoints.yml")["metadata_fields"]
    }
    problems = [
        problem for document in documents for problem in _metadata_problems(document, declared)
    ]
    assert problems == []
    assert len(documents) >= 25


@pytest.mark.parametrize("attribute", ["plan", "region"])
def test_every_plan_and_region_has_documents_of_its_own(
    attribute: str, documents: list[Document]
) -> None:
    """Each value has documents, and documents only for it: a slot filter changes the answer."""
    block = _vector_store_block("endpoints.yml")
    values = next(f["values"] for f in block["metadata_fields"] if f["name"] == attribute)
    for value in values:
        valid_for = [d for d in documents if value in d.metadata.get(attribute, [])]
        only_for = [d for d in valid_for if d.metadata[attribute] == [value]]
        assert valid_for, f"no document is valid for {attribute}={value}"
        assert only_for, f"no document is specific to {attribute}={value}"


def test_most_knowledge_is_in_question_answer_form(documents: list[Document]) -> None:
    """Extractive answers need `metadata["answer"]`, which only Q/A entries get."""
    chunks = chunk_documents(documents, chunk_size=1000, chunk_overlap=100)
    with_answer = [chunk for chunk in chunks if chunk.metadata.get("answer")]
    assert len(with_answer) >= 0.95 * len(chunks)
    assert any(source.endswith(".jsonl") for source in (d.source.split(":")[0] for d in documents))


def _e2e_steps() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path in sorted(E2E_FOLDER.glob("*.yml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["test_cases"]:
            for step in case["steps"]:
                yield path.name, case["test_case"], step


def test_e2e_tests_cover_answers_follow_ups_and_scoped_answers() -> None:
    steps = list(_e2e_steps())
    assert len(steps) >= 20
    assert len({name for _, name, _ in steps}) >= 6
    slots_set = {
        slot for _, _, step in steps for item in step.get("slot_was_set", []) for slot in item
    }
    assert slots_set == {"plan", "region"}


def test_e2e_bot_texts_are_knowledge_base_answers(documents: list[Document]) -> None:
    """Extractive replies are stored answers: an edited answer must be edited here too."""
    answers = {
        " ".join(chunk.metadata["answer"].split())
        for chunk in chunk_documents(documents, chunk_size=1000, chunk_overlap=100)
        if chunk.metadata.get("answer")
    }
    expected = [
        (case, " ".join(step["bot"].split())) for _, case, step in _e2e_steps() if "bot" in step
    ]
    assert len(expected) >= 8
    assert [(case, text) for case, text in expected if text not in answers] == []


def test_e2e_utterances_and_slot_values_exist_in_the_domain(domain: Any) -> None:
    from rasa.shared.importers.importer import FlowSyncImporter

    responses = set(domain.responses) | set(
        FlowSyncImporter.load_default_pattern_flows_domain().responses
    )
    slots = {slot.name: slot for slot in domain.slots}
    for file, case, step in _e2e_steps():
        if "utter" in step:
            assert step["utter"] in responses, f"{file}: {case}: unknown {step['utter']}"
        for item in step.get("slot_was_set", []):
            for name, value in item.items():
                assert value in slots[name].values, f"{file}: {case}: {name}={value!r}"


def test_nlu_synonyms_map_onto_slot_values(domain: Any) -> None:
    """Every way of naming a plan or region ends as a value the slot (and the KB) knows."""
    from rasa.shared.nlu.training_data.loading import load_data

    training_data = load_data(str(REPO_ROOT / "data" / "nlu.yml"))
    slot_values = {
        slot.name: set(slot.values) for slot in domain.slots if slot.name in ("plan", "region")
    }
    lookups = {table["name"]: table["elements"] for table in training_data.lookup_tables}
    for entity, values in slot_values.items():
        for surface in lookups[entity]:
            target = training_data.entity_synonyms.get(surface, surface)
            assert target in values, f"lookup {entity}: {surface!r} maps to {target!r}"
    assert training_data.entity_synonyms["Premium tier"] == "premium"
    assert training_data.entity_synonyms["Europe"] == "eu"


def _response_text(domain: Any, name: str, slots: dict[str, Any]) -> str:
    """The variant of a domain response Rasa would choose for these slots."""
    from pypred import Predicate

    for variant in domain.responses[name]:
        condition = variant.get("condition")
        if not condition or Predicate(condition).evaluate({"slots": slots}):
            return str(variant["text"])
    raise AssertionError(f"no variant of {name} fits {slots}")


def _e2e_cases() -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        (case["test_case"], case["steps"])
        for path in sorted(E2E_FOLDER.glob("*.yml"))
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["test_cases"]
    ]


@pytest.fixture(scope="module")
def example_store(embedder: Any, example_index_path: Path) -> Any:
    """The plugin configured by the offline project's endpoints.yml, as Rasa would connect it."""
    from tests.store_support import connected_store

    block = {**_vector_store_block("endpoints.yml"), "index_path": str(example_index_path)}
    block["docs"] = str(REPO_ROOT / block["docs"])
    return connected_store(embedder, block)


@pytest.mark.parametrize(("case", "steps"), _e2e_cases(), ids=[name for name, _ in _e2e_cases()])
async def test_e2e_conversations_get_their_answers_from_the_plugin(
    case: str, steps: list[dict[str, Any]], example_store: Any, domain: Any
) -> None:
    """Each e2e case replayed through the plugin with the offline endpoints.yml, no licence needed.

    Slots are set as the steps say (Rasa's NLU sets them in the real run); every `bot` step is
    the answer of the top result above config.yml's threshold, and
    `utter_no_relevant_answer_found` means no result passes it.
    """
    threshold = _search_policy("config.yml")["vector_store"]["threshold"]
    events: list[dict[str, Any]] = []
    slots: dict[str, Any] = {}
    searched = 0
    for step in steps:
        if "user" in step:
            events.append({"event": "user", "text": step["user"]})
            continue
        for item in step.get("slot_was_set", []):
            slots.update(item)
        expects_search = "bot" in step or step.get("utter") == "utter_no_relevant_answer_found"
        if expects_search:
            state = {"events": events, "slots": slots, "latest_message": events[-1]}
            results = (await example_store.search("", state, threshold)).results
            answer = results[0].metadata.get("answer") if results else None
            expected = " ".join(step["bot"].split()) if "bot" in step else None
            assert answer == expected, f"{case}: after {events[-1]['text']!r} with {slots}"
            searched += 1
        if "bot" in step:
            events.append({"event": "bot", "text": step["bot"]})
        elif "utter" in step:
            events.append({"event": "bot", "text": _response_text(domain, step["utter"], slots)})
    assert searched >= 1


async def test_the_explanation_shows_the_filter_as_written_and_why_general_pages_match(
    example_store: Any,
) -> None:
    events = [
        {"event": "user", "text": "can I use offline files?"},
        {"event": "bot", "text": "No, offline files are not available on the Free plan."},
        {"event": "user", "text": "and on Android?"},
    ]
    state = {"events": events, "slots": {"plan": "free"}, "latest_message": events[-1]}

    result = await example_store.search("", state, 0.0)

    assert result.metadata["filter"] == 'and(eq("plan", "free"), eq("platform", "android"))'
    assert result.metadata["notes"] == [
        "documents without 'platform' also match (absent_means_all)",
        # the bot's answer was taken from that page, so it weighs more in the follow-up's query
        "the last bot message quotes plans/free.md (match 0.88): it weighs 0.2 in the turns view",
    ]
    assert result.results[0].metadata["source"] == "plans/free.md"
