"""How large is EnterpriseSearchPolicy's generative prompt with each ``result_metadata`` choice?

For every knowledge question of the example assistant's e2e conversations (tests/e2e/*.yml: the
turns before it and the slots set so far), this script searches with ``ContextRetrieval`` configured
by endpoints.yml (``top_k: 4``, slot filters, ``threshold`` from config.yml), once per
``result_metadata`` choice, and renders Rasa's own prompt with the policy's ``_render_prompt`` for
each of its three default templates (plain, with citations, with relevancy check and citations).
It counts characters and tokens (tiktoken ``o200k_base``, the gpt-4o family's encoding, from
the copy bundled with litellm; ``chars / 4`` when that is missing) of the whole prompt and of its
documents section, and checks that every choice returns the same documents in the same order.

Run: ``python bench/prompt_size.py`` (offline, under a minute); it prints a Markdown table and
writes it to bench/results/prompt.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "not-used-nothing-is-sent")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

import structlog  # noqa: E402
import yaml  # noqa: E402
from rasa.core.policies.enterprise_search_policy import EnterpriseSearchPolicy  # noqa: E402
from rasa.dialogue_understanding.stack.dialogue_stack import DialogueStack  # noqa: E402
from rasa.dialogue_understanding.stack.frames.search_frame import SearchStackFrame  # noqa: E402
from rasa.engine.graph import ExecutionContext, GraphSchema  # noqa: E402
from rasa.engine.storage.local_model_storage import LocalModelStorage  # noqa: E402
from rasa.engine.storage.resource import Resource  # noqa: E402
from rasa.shared.core.domain import Domain  # noqa: E402
from rasa.shared.core.events import BotUttered, Event, SlotSet, UserUttered  # noqa: E402
from rasa.shared.core.trackers import DialogueStateTracker, EventVerbosity  # noqa: E402
from rasa.utils.endpoints import EndpointConfig  # noqa: E402

from rasa_context_retrieval.store import ContextRetrieval  # noqa: E402

CHOICES: tuple[Any, ...] = ("full", "lean")
TEMPLATES = {
    "plain": {},
    "citations": {"citation_enabled": True},
    "relevancy + citations": {"citation_enabled": True, "check_relevancy": True},
}
CHARS_PER_TOKEN = 4
DOCUMENTS_START = "### Relevant Documents"
DOCUMENTS_ENDS = ("### Citing Sources", "### Slots or Variables", "### Current Conversation")


@dataclass(frozen=True)
class Question:
    """One knowledge question of an e2e conversation, with what came before it."""

    case: str
    events: tuple[Event, ...]


def e2e_questions(folder: Path) -> Iterator[Question]:
    """Each user turn that the e2e cases expect a knowledge answer (`bot:`) for."""
    for path in sorted(folder.glob("*.yml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["test_cases"]:
            events: list[Event] = []
            for step in case["steps"]:
                if "user" in step:
                    events.append(UserUttered(step["user"]))
                elif "bot" in step:
                    yield Question(case["test_case"], tuple(events))
                    events.append(BotUttered(step["bot"]))
                elif "slot_was_set" in step:
                    for slot in step["slot_was_set"]:
                        events.extend(SlotSet(name, value) for name, value in slot.items())


def token_counter() -> tuple[str, Callable[[str], int]]:
    try:
        import litellm.litellm_core_utils.tokenizers as bundled

        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(bundled.__file__).parent))
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return "tiktoken o200k_base", lambda text: len(encoding.encode(text))
    except Exception:  # no tokenizer offline: the usual rule of thumb
        return f"chars / {CHARS_PER_TOKEN}", lambda text: len(text) // CHARS_PER_TOKEN


def documents_section(prompt: str) -> str:
    section = prompt.split(DOCUMENTS_START, 1)[1]
    for end in DOCUMENTS_ENDS:
        section = section.split(end, 1)[0]
    return section


def policy_for(template: dict[str, Any], storage: Path) -> EnterpriseSearchPolicy:
    """The policy as config-llm.yml configures it; nothing is sent to its LLM here."""
    config = {
        "vector_store": {"type": "rasa_context_retrieval.ContextRetrieval"},
        "use_generative_llm": True,
        "llm": {"provider": "openai", "model": "gpt-4o-mini"},
        **template,
    }
    return EnterpriseSearchPolicy(
        config, LocalModelStorage(storage), Resource("search"), ExecutionContext(GraphSchema({}))
    )


def store_for(choice: Any, index: Path, embedder: Any) -> ContextRetrieval:
    block = yaml.safe_load((REPO_ROOT / "endpoints.yml").read_text(encoding="utf-8"))
    settings = {k: v for k, v in block["vector_store"].items() if k != "type"}
    settings.update(docs=str(REPO_ROOT / settings["docs"]), index_path=str(index))
    settings["result_metadata"] = choice
    store = ContextRetrieval(embeddings=embedder)
    store.connect(EndpointConfig(**settings))
    return store


def tracker_for(question: Question, domain: Domain) -> DialogueStateTracker:
    tracker = DialogueStateTracker.from_events("bench", list(question.events), domain.slots)
    tracker.update_stack(DialogueStack(frames=[SearchStackFrame()]))
    return tracker


async def measure(questions: list[Question], embedder: Any, work: Path) -> dict[str, Any]:
    domain = Domain.load(str(REPO_ROOT / "domain.yml"))
    count_name, count = token_counter()
    sizes: dict[tuple[str, Any, str], list[int]] = {}
    rankings: dict[Any, list[list[str]]] = {}
    examples: dict[Any, str] = {}
    for choice in CHOICES:
        store = store_for(choice, work / "index", embedder)
        for template_name, template in TEMPLATES.items():
            policy = policy_for(template, work / f"model-{template_name}")
            for question in questions:
                tracker = tracker_for(question, domain)
                state = tracker.current_state(EventVerbosity.AFTER_RESTART)
                found = await store.search(question.events[-1].text or "", state, 0.3)
                prompt = prompt_of(policy, tracker, found)
                if template_name == "plain":
                    rankings.setdefault(choice, []).append([r.text for r in found.results])
                    examples.setdefault(choice, documents_section(prompt))
                for part, text in (("prompt", prompt), ("documents", documents_section(prompt))):
                    sizes.setdefault((template_name, choice, f"{part} chars"), []).append(len(text))
                    sizes.setdefault((template_name, choice, f"{part} tokens"), []).append(
                        count(text)
                    )
    same = all(rankings[choice] == rankings[CHOICES[0]] for choice in CHOICES)
    return {"sizes": sizes, "counter": count_name, "same_results": same, "examples": examples}


def prompt_of(policy: EnterpriseSearchPolicy, tracker: DialogueStateTracker, found: Any) -> str:
    """Rasa's own rendering (private, but exactly what the policy sends to its LLM)."""
    return str(policy._render_prompt(tracker, found.results))


def report(questions: list[Question], measured: dict[str, Any]) -> str:
    sizes = measured["sizes"]
    lines = [
        "# Generative prompt size by `result_metadata`",
        "",
        f"Measured {dt.date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, by `python bench/prompt_size.py`: the example assistant "
        f"(`docs/`, endpoints.yml: `top_k: 4`, slot filters; threshold 0.3), "
        f"{len(questions)} knowledge questions of tests/e2e/*.yml with the turns and slots "
        f"before them. Tokens: {measured['counter']}. Means per question; the same documents "
        f"in the same order for every choice: **{measured['same_results']}**.",
        "",
        "| template | result_metadata | documents chars | documents tokens | prompt chars "
        "| prompt tokens |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for template_name in TEMPLATES:
        baseline = statistics.mean(sizes[(template_name, "full", "prompt tokens")])
        documents_baseline = statistics.mean(sizes[(template_name, "full", "documents tokens")])
        for choice in CHOICES:
            row = [
                statistics.mean(sizes[(template_name, choice, key)])
                for key in ("documents chars", "documents tokens", "prompt chars", "prompt tokens")
            ]
            saving = "" if choice == "full" else f" ({1 - row[3] / baseline:.0%} fewer)"
            documents_saving = (
                "" if choice == "full" else f" ({1 - row[1] / documents_baseline:.0%} fewer)"
            )
            lines.append(
                f"| {template_name} | `{choice}` | {row[0]:,.0f} | {row[1]:,.0f}"
                f"{documents_saving} | {row[2]:,.0f} | {row[3]:,.0f}{saving} |"
            )
    lines += [
        "",
        "These are sizes, not times, so the machine's load does not matter; only the prompt's "
        "date and time section (on by default) varies by a few characters from day to day. "
        "`full` prints each chunk's whole metadata: the "
        "filter attributes (plan, region, category, dates, platform), `question`, and `answer`, "
        "which repeats the chunk's text (a Q/A entry's answer, a prose chunk's whole text). "
        "`lean` keeps the citable `source` (and a declared `title`), so each text reaches the "
        "LLM once. The rest of the prompt (instructions, citation rules, slots, transcript) is "
        "unchanged, which is why the whole-prompt saving is smaller with the longer citation "
        "templates. No answer-quality number is claimed: no LLM was reachable.",
        "",
        "The documents section of the first question's prompt, per choice:",
        "",
    ]
    for choice, section in measured["examples"].items():
        lines += [f"`{choice}`:", "", "```text", section.strip(), "```", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--e2e", type=Path, default=REPO_ROOT / "tests" / "e2e")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "prompt.md")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    from rasa.shared.utils.llm import embedder_factory

    config = yaml.safe_load((REPO_ROOT / "config.yml").read_text(encoding="utf-8"))
    policy = next(p for p in config["policies"] if p["name"] == "EnterpriseSearchPolicy")
    embeddings = dict(policy["embeddings"])
    embeddings["model"] = str(REPO_ROOT / embeddings["model"])
    embedder = embedder_factory({**embeddings, "show_progress": False}, {})
    questions = list(e2e_questions(args.e2e))
    with tempfile.TemporaryDirectory() as work:
        measured = asyncio.run(measure(questions, embedder, Path(work)))
    table = report(questions, measured)
    print(table)
    args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
