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
from typing import TYPE_CHECKING

from rasa_context_retrieval.assistant import DEFAULT_CONFIG, DEFAULT_ENDPOINTS, ConsoleSession
from rasa_context_retrieval.console_logging import configure_console_logging
from rasa_context_retrieval.console_view import as_json, render
from rasa_context_retrieval.preflight import AssistantSetup, check_assistant
from rasa_context_retrieval.preflight.assistant_files import DEFAULT_CREDENTIALS
from rasa_context_retrieval.preflight.command import report_check

if TYPE_CHECKING:
    from rasa_context_retrieval.config import StoreConfig

VERBOSE_HELP = "also show the log events, on stderr (debug level)"
DESCRIPTION = (
    "Search the knowledge base the way the assistant does, without a Rasa licence. Reads the "
    "same config.yml and endpoints.yml as the assistant; every command first checks the whole "
    "setup and stops on a mistake before any model loads."
)
SLOT_HELP = "a filled slot, e.g. --slot plan=premium (a list: a,b; repeat for several slots)"
THRESHOLD_HELP = "minimum relevance in [0, 1] (default: the policy's vector_store.threshold)"
CHAT_COMMANDS = {
    "/slot name=value": "set a slot (an empty value clears it)",
    "/slots": "show the slots",
    "/reset": "forget the conversation and the slots",
    "/quit": "leave (also /exit or Ctrl-D)",
}


def main(argv: Sequence[str] | None = None, prog: str = "rasa-context-retrieval") -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = _parser(prog).parse_args(argv)
    configure_console_logging(verbose=args.verbose or args.verbose_command)
    try:
        setup = check_assistant(args.config, args.endpoints, args.credentials)
        if args.command == "check":
            return report_check(setup.report, args.json)
        for finding in setup.report.findings:
            print(finding, file=sys.stderr)
        if not setup.report.passed:
            return 1
        args.setup = setup
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
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="Rasa config.yml")
    parser.add_argument("--endpoints", default=DEFAULT_ENDPOINTS, help="Rasa endpoints.yml")
    parser.add_argument(
        "--credentials",
        default=DEFAULT_CREDENTIALS,
        help="Rasa credentials.yml (checked when it configures the entitled REST channel)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser(
        "check",
        help="check the whole setup (no model loads); exit 1 on any error",
        parents=[common],
    )
    check.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    check.set_defaults(run=None)

    index = commands.add_parser("index", help="build (or load) the index", parents=[common])
    index.add_argument(
        "--public",
        action="store_true",
        help="also list the documents without an access attribute (with access_filters)",
    )
    index.set_defaults(run=_index)

    conversation = _conversation_options()
    ask = commands.add_parser(
        "ask",
        help="answer one question, showing query, filter, results",
        parents=[common, conversation],
    )
    ask.add_argument("question")
    ask.add_argument(
        "--history",
        action="append",
        default=[],
        metavar="ROLE:TEXT",
        help='earlier turn, oldest first, e.g. --history "user:How do I share?"',
    )
    ask.add_argument(
        "--json",
        action="store_true",
        help="print only one JSON object (plan, filter, results, timings) on stdout",
    )
    ask.set_defaults(run=_ask)

    chat = commands.add_parser(
        "chat",
        help="interactive chat; /slot name=value sets a slot",
        parents=[common, conversation],
    )
    chat.set_defaults(run=_chat)

    from rasa_context_retrieval.evaluation.command import register as register_eval

    register_eval(commands, parents=[common])
    return parser


def _conversation_options() -> argparse.ArgumentParser:
    """The options of a conversation, shared by ``ask`` and ``chat``."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--slot", action="append", default=[], metavar="NAME=VALUE", help=SLOT_HELP
    )
    options.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="channel metadata on each message, e.g. --metadata plan=free (for access_filters)",
    )
    options.add_argument("--threshold", type=float, default=None, help=THRESHOLD_HELP)
    return options


def _index(args: argparse.Namespace) -> int:
    from rasa_context_retrieval.config import StoreConfig
    from rasa_context_retrieval.engine.search import KnowledgeSearch

    started = time.perf_counter()
    session = ConsoleSession(args.config, args.endpoints)
    config = StoreConfig.from_kwargs(session.endpoint.kwargs)
    # ingest=True: with backend milvus this also writes the collection (ingest: console_only)
    search = KnowledgeSearch.open(config, session.store.embeddings, ingest=True)
    print(f"index ready: {len(search.live)} chunks in {time.perf_counter() - started:.1f}s")
    for problem in search.live.problems:
        print(f"  skipped {problem}")
    if args.public:
        _print_public(config, search.live.public_sources())
    return 0


def _print_public(config: StoreConfig, sources: list[str]) -> None:
    if not config.access_filters:
        print("no access_filters configured: every document is served to every user")
        return
    served = "every user" if config.unattributed_documents == "public" else "nobody"
    print(f"{len(sources)} document(s) without an access attribute, served to {served}:")
    for source in sources:
        print(f"  {source}")


def _apply_assignments(session: ConsoleSession, args: argparse.Namespace) -> None:
    """Set ``--slot`` and ``--metadata`` the same way for ``ask`` and ``chat``."""
    for assignment in args.slot:
        warn_unknown_slot(assignment, args.setup)
        session.set_slot(assignment)
    for assignment in args.metadata:
        session.set_metadata(assignment)


def _ask(args: argparse.Namespace) -> int:
    session = ConsoleSession(args.config, args.endpoints)
    session.connect()
    _apply_assignments(session, args)
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
    _apply_assignments(session, args)
    print("Ask a question. " + _chat_commands())
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
                warn_unknown_slot(line.removeprefix("/slot "), args.setup)
                session.set_slot(line.removeprefix("/slot "))
                print(f"slots: {json.dumps(session.slots, ensure_ascii=False)}")
            except ValueError as error:
                print(f"error: {error}")
        elif line.startswith("/"):
            print(f"unknown command {line.split()[0]}; {_chat_commands()}")
        else:
            print(render(asyncio.run(session.ask(line, args.threshold))))


def _chat_commands() -> str:
    return "Commands: " + ", ".join(f"{name} ({does})" for name, does in CHAT_COMMANDS.items())


def warn_unknown_slot(assignment: str, setup: AssistantSetup) -> None:
    """A slot no ``slot_filters`` entry reads changes nothing: say so, with the known slots."""
    name = assignment.partition("=")[0].strip()
    known = sorted(setup.config.slot_filters) if setup.config else []
    if name and name not in known:
        print(
            f"warning: slot '{name}' is in no vector_store.slot_filters entry, so it filters "
            f"nothing; the configuration knows: {', '.join(known) or 'no slots'}",
            file=sys.stderr,
        )
