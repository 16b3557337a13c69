"""Adopting the plugin in another assistant: its own ``addons/`` package, the installed engine.

Most Rasa projects already have an ``addons`` package for their custom actions and components, so
the plugin must not install one. A second assistant, written here into a temporary folder, keeps
its own ``addons/`` (with a module of the same name as the example's) and names
``rasa_context_retrieval.ContextRetrieval`` in ``vector_store.type``. It is driven through Rasa's
real EnterpriseSearchPolicy in a fresh interpreter whose working directory is that folder, as
``rasa run`` would be, and nothing of this repository's example assistant is importable there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # runs the console and Rasa in a second assistant's folder

DRIVER = textwrap.dedent(
    """
    import asyncio, json, sys
    import addons
    import addons.custom_information_retrieval as own_module
    import rasa_context_retrieval
    from rasa.core.config.available_endpoints import AvailableEndpoints
    from rasa.core.policies.enterprise_search_policy import EnterpriseSearchPolicy
    from rasa.dialogue_understanding.stack.dialogue_stack import DialogueStack
    from rasa.dialogue_understanding.stack.frames.search_frame import SearchStackFrame
    from rasa.engine.graph import ExecutionContext, GraphSchema
    from rasa.engine.storage.local_model_storage import LocalModelStorage
    from rasa.engine.storage.resource import Resource
    from rasa.shared.core.domain import Domain
    from rasa.shared.core.events import BotUttered, SlotSet, UserUttered
    from rasa.shared.core.trackers import DialogueStateTracker
    from rasa.shared.nlu.training_data.training_data import TrainingData
    from rasa.shared.utils.yaml import read_yaml_file
    from rasa.utils.endpoints import EndpointConfig

    config = read_yaml_file("config.yml")
    policy_config = next(p for p in config["policies"] if p["name"] == "EnterpriseSearchPolicy")
    policy_config = {k: v for k, v in policy_config.items() if k != "name"}
    block = dict(read_yaml_file("endpoints.yml")["vector_store"])
    domain = Domain.from_path("domain.yml")
    import pathlib
    pathlib.Path("model-storage").mkdir()
    storage = LocalModelStorage(pathlib.Path("model-storage"))
    resource = Resource("enterprise_search")
    context = ExecutionContext(GraphSchema({}), "adoption")
    EnterpriseSearchPolicy.create(policy_config, storage, resource, context).train(
        [], domain, None, None, TrainingData()
    )
    policy = EnterpriseSearchPolicy.load(policy_config, storage, resource, context)
    endpoints = AvailableEndpoints(vector_store=EndpointConfig(**block))

    async def answer(turns, **slots):
        events = [SlotSet(name, value) for name, value in slots.items()]
        events += [UserUttered(t) if role == "user" else BotUttered(t) for role, t in turns]
        tracker = DialogueStateTracker.from_events("adopter", events, domain.slots)
        tracker.update_stack(DialogueStack(frames=[SearchStackFrame()]))
        prediction = await policy.predict_action_probabilities(
            tracker, domain, endpoints=endpoints
        )
        return prediction.action_metadata["message"]["text"]

    async def main():
        return {
            "addons": addons.__file__,
            "own_module": own_module.GREETING,
            "engine": rasa_context_retrieval.__file__,
            "store_type": type(policy.vector_store).__module__
            + "." + type(policy.vector_store).__name__,
            "sourdough": await answer([("user", "How long does sourdough need to proof?")]),
            "follow_up": await answer(
                [
                    ("user", "How long does sourdough need to proof?"),
                    ("bot", "Sourdough proofs for 12 hours in the fridge."),
                    ("user", "and the baking temperature?"),
                ]
            ),
            "vegan": await answer([("user", "What can I bake?")], diet="vegan"),
        }

    # Rasa logs to stdout, so the answers go to a file.
    with open("answers.json", "w") as answers:
        json.dump(asyncio.run(main()), answers)
    """
)


def _write_second_assistant(folder: Path, model_path: Path) -> None:
    """A small bakery assistant: its own addons package, its own docs, the installed engine."""
    (folder / "addons").mkdir(parents=True)
    (folder / "addons" / "__init__.py").write_text('"""The bakery\'s own components."""\n')
    # Same module name as the example assistant's shim: only this one may be imported here.
    (folder / "addons" / "custom_information_retrieval.py").write_text(
        'GREETING = "the bakery\'s own module"\n'
    )
    docs = folder / "knowledge"
    docs.mkdir()
    (docs / "sourdough.md").write_text(
        "---\ndiet: vegan\n---\n# Sourdough\n\n"
        "Sourdough needs to proof for 12 hours in the fridge.\n\n"
        "## Baking\n\nBake sourdough at 250 degrees Celsius with steam for the first 20 minutes.\n"
    )
    (docs / "brioche.md").write_text(
        "---\ndiet: vegetarian\n---\n# Brioche\n\n"
        "Brioche is an enriched dough with butter and eggs. It rises for two hours.\n"
    )
    (folder / "domain.yml").write_text(
        'version: "3.1"\n'
        "slots:\n"
        "  diet:\n"
        "    type: categorical\n"
        "    values: [vegan, vegetarian]\n"
        "    mappings: [{type: from_llm}]\n"
    )
    (folder / "config.yml").write_text(
        "recipe: default.v1\n"
        "assistant_id: bakery\n"
        "language: en\n"
        "pipeline: []\n"
        "policies:\n"
        "  - name: EnterpriseSearchPolicy\n"
        "    use_generative_llm: false\n"
        "    vector_store:\n"
        "      type: rasa_context_retrieval.ContextRetrieval\n"
        "    embeddings:\n"
        "      provider: huggingface_local\n"
        f"      model: {model_path}\n"
    )
    (folder / "endpoints.yml").write_text(
        "vector_store:\n"
        "  type: rasa_context_retrieval.ContextRetrieval\n"
        "  docs: knowledge\n"
        "  index_path: .index\n"
        # the first search waits for the first build, however loaded the machine is
        "  startup_wait_seconds: 600\n"
        "  top_k: 3\n"
        "  slot_filters:\n"
        "    diet: diet\n"
    )


@pytest.fixture(scope="module")
def second_assistant_answers(
    tmp_path_factory: pytest.TempPathFactory, model_path: Path, seed_query_export: Any
) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("bakery")
    _write_second_assistant(folder, model_path)
    seed_query_export(folder / ".index")
    environment = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH"}}
    environment.update(HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
    completed = subprocess.run(
        [sys.executable, "-c", DRIVER],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    answers: dict[str, str] = json.loads((folder / "answers.json").read_text())
    answers["folder"] = str(folder)
    return answers


def test_the_assistant_keeps_its_own_addons_package(second_assistant_answers):
    folder = Path(second_assistant_answers["folder"])
    assert Path(second_assistant_answers["addons"]).parent == folder / "addons"
    assert second_assistant_answers["own_module"] == "the bakery's own module"


def test_the_engine_is_the_installed_package_not_this_repositorys_example(
    second_assistant_answers,
):
    engine = Path(second_assistant_answers["engine"]).resolve()
    assert engine.parent.name == "rasa_context_retrieval"
    assert second_assistant_answers["store_type"] == "rasa_context_retrieval.store.ContextRetrieval"


def test_the_policy_answers_from_the_second_assistants_own_documents(second_assistant_answers):
    assert "12 hours" in second_assistant_answers["sourdough"]


def test_a_follow_up_is_resolved_in_the_second_assistant(second_assistant_answers):
    assert "250 degrees" in second_assistant_answers["follow_up"]


def test_the_second_assistants_slot_filter_applies(second_assistant_answers):
    assert "Sourdough" in second_assistant_answers["vegan"]
    assert "Brioche" not in second_assistant_answers["vegan"]


def test_the_installed_console_command_works_in_the_second_assistants_folder(
    second_assistant_answers,
):
    """``rasa-context-retrieval ask`` reads the folder's own config.yml and endpoints.yml."""
    command = Path(sys.executable).with_name("rasa-context-retrieval")
    completed = subprocess.run(
        [str(command), "ask", "--json", "--slot", "diet=vegetarian", "What can I bake?"],
        cwd=second_assistant_answers["folder"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    answer = json.loads(completed.stdout)
    assert answer["results"], answer
    assert {found["source"] for found in answer["results"]} == {"brioche.md"}


def test_the_distribution_ships_the_engine_and_a_console_command_but_no_addons(tmp_path):
    """The wheel a user installs: ``rasa_context_retrieval`` only, plus its console command."""
    # Built from a copy, so the build leaves nothing in the repository.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    for package in ("rasa_context_retrieval", "addons"):
        shutil.copytree(
            REPO_ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    wheels = tmp_path / "wheels"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(wheels),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    (wheel,) = wheels.glob("rasa_context_retrieval-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        console = archive.read(entry_points).decode()
    top_level = {name.split("/")[0] for name in names if "/" in name}
    assert "rasa_context_retrieval" in top_level
    assert not any(name.startswith(("addons/", "tests/", "bench/")) for name in names)
    assert "rasa-context-retrieval = rasa_context_retrieval.console:main" in console
    assert "rasa_context_retrieval/store.py" in names
