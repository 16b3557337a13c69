"""Property-based fuzzing of access control: random knowledge bases, entitlements, slots, filters.

Shared by the test suite (about a thousand cases on synthetic vectors) and ``bench/access_fuzz.py``
(tens of thousands on FAISS, a thousand or more on a real Milvus server). Each case builds a
conversation with hostile channel metadata (case and whitespace variants, unicode look-alikes,
lists, numbers as text, bools, NUL bytes, very long strings, wrong types), a possibly forged
session-metadata slot, a slot value, and a filter that a hostile LLM might return, then searches.

The oracle below is written independently of ``access``: it restates the documented rule
(exact match after trimming, typed numbers and bools, public = no attribute, deny by default,
session metadata only when Rasa wrote it) in a few lines, so that a bug in the product's rule is
not also in the check. A *leak* is a returned chunk the oracle does not admit, or one outside the
slot scope; a *crash* is any exception from ``search()``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

import jwt
import numpy as np
from hypothesis import strategies as st
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
    StructuredQuery,
)
from rasa.core.channels.channel import UserMessage
from rasa.shared.core.domain import Domain

from rasa_context_retrieval.channels.bearer_token import TokenVerifier
from rasa_context_retrieval.channels.credentials import ChannelSettings
from rasa_context_retrieval.channels.entitled_rest import EntitledRestInput
from rasa_context_retrieval.channels.verification_keys import VerificationKey
from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.engine.live_index import LiveIndex, index_settings
from rasa_context_retrieval.engine.search import KnowledgeSearch
from rasa_context_retrieval.faiss.builder import ensure_index
from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.store import to_search_result_list
from tests.rasa_conversations import RasaConversations

DIMENSION = 16
SESSION_SLOT = "session_started_metadata"
WORDS = ("storage", "refund", "offline", "sync", "plan", "share", "invoice", "android", "price")

# Values that try every way an exact comparison can be fooled.
HOSTILE_VALUES: tuple[Any, ...] = (
    "free",
    "Free",
    " free ",
    "FREE",
    "frее",  # Cyrillic "е"
    "free\x00",
    "\x00",
    "premium",
    "plus",
    "",
    "   ",
    None,
    1,
    1.0,
    "1",
    0,
    True,
    False,
    "true",
    math.nan,
    math.inf,
    ["free", "plus"],
    ["premium"],
    [],
    [None],
    [""],
    [["free"]],
    {"plan": "premium"},
    "x" * 5000,
    "premium') or (1==1",
    2**53 + 1,  # a 64-bit id: equal as a float to the next one, never as a number
    2**53,
)
hostile_value = st.one_of(
    st.sampled_from(HOSTILE_VALUES),
    st.text(max_size=12),
    st.integers(-3, 3),
    st.lists(st.sampled_from(HOSTILE_VALUES[:12]), max_size=3),
)
ATTRIBUTES = ("plan", "region", "tier")


class SyntheticEmbedder:
    """Deterministic unit vectors from a hash of the text: no model, same text same vector."""

    model = "synthetic-hash-embedder"
    config = {"provider": "synthetic", "model": model}

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [_vector(text).tolist() for text in texts]


def _vector(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8])
    vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return vector / np.linalg.norm(vector)


@dataclass(frozen=True)
class KnowledgeBase:
    metadatas: tuple[dict[str, Any], ...]


@st.composite
def knowledge_bases(draw: st.DrawFn) -> KnowledgeBase:
    documents = draw(st.integers(1, 14))
    metadatas = []
    for ordinal in range(documents):
        metadata: dict[str, Any] = {"source": f"doc-{ordinal}.md"}
        for attribute in ATTRIBUTES:
            if draw(st.booleans()):
                metadata[attribute] = draw(hostile_value)
        metadatas.append(metadata)
    return KnowledgeBase(tuple(metadatas))


@dataclass(frozen=True)
class Case:
    """One conversation's worth of hostile input."""

    message_metadata: Any
    session_value: Any
    session_filled_by: str | None
    slot_value: Any
    llm_filter: FilterDirective | None
    question: str = "how much storage"
    events_after_session: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def tracker_state(self) -> dict[str, Any]:
        events: list[dict[str, Any]] = []
        slots: dict[str, Any] = {}
        if self.session_value is not None:
            events.append(
                {
                    "event": "slot",
                    "name": SESSION_SLOT,
                    "value": self.session_value,
                    "filled_by": self.session_filled_by,
                }
            )
            slots[SESSION_SLOT] = self.session_value
        events.extend(self.events_after_session)
        for event in self.events_after_session:
            if event.get("name") == SESSION_SLOT:
                slots[SESSION_SLOT] = event.get("value")
        if self.slot_value is not None:
            slots["region_slot"] = self.slot_value
        events.append({"event": "user", "text": self.question})
        latest: dict[str, Any] = {"text": self.question}
        if self.message_metadata is not _ABSENT:
            latest["metadata"] = self.message_metadata
        return {"events": events, "slots": slots, "latest_message": latest}


_ABSENT = object()


def _comparisons() -> st.SearchStrategy[FilterDirective]:
    return st.builds(
        lambda comparator, attribute, value: Comparison(
            comparator=comparator, attribute=attribute, value=value
        ),
        st.sampled_from(list(Comparator)),
        st.sampled_from((*ATTRIBUTES, "source", "")),
        st.one_of(st.sampled_from(HOSTILE_VALUES[:20]), st.lists(st.text(max_size=4), max_size=3)),
    )


llm_filters: st.SearchStrategy[FilterDirective] = st.recursive(
    _comparisons(),
    lambda children: st.builds(
        lambda operator, arguments: Operation(operator=operator, arguments=arguments),
        st.sampled_from(list(Operator)),
        st.lists(children, min_size=1, max_size=3),
    ),
    max_leaves=6,
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    message: Any = draw(
        st.one_of(
            st.just(_ABSENT),
            st.none(),
            st.just({}),
            st.builds(lambda value: {"plan": value}, hostile_value),
            st.builds(lambda value: {"tier": value, "locale": "de"}, hostile_value),
            st.sampled_from(("plan=premium", ["plan", "premium"], 7)),
        )
    )
    session_value = draw(
        st.one_of(
            st.none(),
            st.builds(lambda value: {"plan": value}, hostile_value),
            st.sampled_from(('{"plan": "premium"}', "premium")),
        )
    )
    filled_by = draw(st.sampled_from((None, None, "llm", "command_payload_reader", "nlu")))
    forged: tuple[dict[str, Any], ...] = ()
    if draw(st.booleans()):
        forged = (
            {
                "event": "slot",
                "name": SESSION_SLOT,
                "value": draw(st.sampled_from(('{"plan": "premium"}', {"plan": "premium"}))),
                "filled_by": draw(st.sampled_from(("llm", "command_payload_reader", None))),
            },
        )
    return Case(
        message_metadata=message,
        session_value=session_value,
        session_filled_by=filled_by,
        slot_value=draw(st.one_of(st.none(), hostile_value)),
        llm_filter=draw(st.one_of(st.none(), llm_filters)),
        question=draw(st.sampled_from(WORDS)) + " " + draw(st.sampled_from(WORDS)),
        events_after_session=forged,
    )


class HostileLLM:
    """The planner's LLM seam answering with whatever filter the case carries."""

    def __init__(self) -> None:
        self.filter: FilterDirective | None = None

    def script(self, directive: FilterDirective | None) -> None:
        self.filter = directive

    def use_value_catalogue(self, known_values: Any) -> None:
        """A hostile LLM ignores the catalogue it is shown."""

    async def rewrite(self, conversation: Conversation) -> str:
        return conversation.latest_user_text

    async def structured_query(
        self, standalone: str, known_values: Any = None
    ) -> StructuredQuery | None:
        return StructuredQuery(query=standalone, filter=self.filter, limit=None)

    async def rewrite_and_structure(
        self, conversation: Conversation, known_values: Any = None
    ) -> tuple[str, StructuredQuery | None]:
        text = conversation.latest_user_text
        return text, await self.structured_query(text)

    async def paraphrases(self, standalone: str, count: int) -> list[str]:
        return []

    def in_use(self) -> AbstractContextManager[None]:
        return nullcontext()


def store_config(docs: Path, **overrides: Any) -> StoreConfig:
    block: dict[str, Any] = {
        "docs": str(docs),
        "access_filters": {"plan": "plan", "tier": "tier"},
        "slot_filters": {"region_slot": "region"},
        "self_query": "llm",
        "llm": {"provider": "openai", "model": "hostile"},
        "refresh_seconds": 0,
        "top_k": 5,
    }
    block.update(overrides)
    return StoreConfig.from_kwargs(block)


def build_index(knowledge_base: KnowledgeBase) -> KnowledgeIndex:
    chunks = [
        Chunk(f"chunk-{row}", f"{WORDS[row % len(WORDS)]} document {row}", dict(metadata))
        for row, metadata in enumerate(knowledge_base.metadatas)
    ]
    vectors = np.vstack([_vector(chunk.text) for chunk in chunks])
    return KnowledgeIndex.build("fuzz", "synthetic", chunks, vectors, [], 10**9)


def engine_for(
    config: StoreConfig, index: KnowledgeIndex, llm: HostileLLM, *, writes: bool = False
) -> KnowledgeSearch:
    """An engine over ``index`` on the configured backend (``writes``: sync a collection)."""
    live = LiveIndex.serving(config, SyntheticEmbedder(), index.knowledge, writes=writes)
    return KnowledgeSearch(config, SyntheticEmbedder(), live, llm)


@dataclass
class Tally:
    cases: int = 0
    results: int = 0
    crashes: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)


class ScriptsFilters(Protocol):
    """Whatever makes the next LLM answer carry a given filter (the seam, or a real server)."""

    def script(self, directive: FilterDirective | None) -> None: ...


async def check_case(
    engine: KnowledgeSearch,
    llm: ScriptsFilters,
    case: Case,
    tally: Tally,
    enforced: dict[str, str] | None = None,
) -> None:
    """Search once and hold every result against the oracle; record crashes and leaks.

    ``enforced`` is the access mapping the oracle holds results to (the engine's by default).
    """
    tally.cases += 1
    llm.script(case.llm_filter)
    state = case.tracker_state()
    try:
        conversation = Conversation.from_tracker_state(state, fallback_query=case.question)
        outcome = await engine.search(conversation, 0.0)
        results = to_search_result_list(outcome, engine.config).results
    except Exception as error:  # the property: nothing raises
        tally.crashes.append(f"{type(error).__name__}: {error} in {case!r}"[:2000])
        return
    tally.results += len(results)
    for result in results:
        mapping = engine.config.access_filters if enforced is None else enforced
        problem = leak(state, result.metadata, mapping, engine.config.unattributed_documents)
        if problem:
            tally.leaks.append(f"{problem}: {result.metadata!r} for {case!r}"[:2000])


def leak(
    state: dict[str, Any],
    metadata: dict[str, Any],
    access: dict[str, str],
    unattributed: str = "public",
) -> str | None:
    for key, attribute in access.items():
        allowed = oracle_entitlement(state, key)
        if unattributed == "private" and oracle_unattributed(metadata.get(attribute)):
            return f"access leak on {attribute}: no attribute, and unattributed is private"
        if not oracle_admits(allowed, metadata.get(attribute)):
            return f"access leak on {attribute} (allowed {allowed!r})"
    slot = state["slots"].get("region_slot")
    if isinstance(slot, str) and slot.strip() and "\x00" not in slot:
        held = metadata.get("region")
        members = held if isinstance(held, list) else [held]
        if not any(_slot_matches(slot, member) for member in members):
            return f"slot scope leak (region {slot!r})"
    return None


def _slot_matches(slot: str, held: Any) -> bool:
    """Slot filters compare like every filter: text case-insensitively, numbers and bools
    written as text by their value (the FAISS translator's documented semantics)."""
    wanted = slot.strip().casefold()
    if isinstance(held, bool):
        return wanted == str(held).casefold()
    if isinstance(held, int | float):
        try:
            return float(wanted) == held
        except ValueError:
            return False
    return isinstance(held, str) and held.strip().casefold() == wanted


def oracle_entitlement(state: dict[str, Any], key: str) -> list[Any]:
    message = state["latest_message"].get("metadata")
    if isinstance(message, dict) and key in message:
        return _oracle_values(message[key])
    session = state["slots"].get(SESSION_SLOT)
    writes = [e for e in state["events"] if e.get("name") == SESSION_SLOT]
    trusted = (
        isinstance(session, dict)
        and writes
        and writes[-1].get("filled_by") is None
        and writes[-1].get("value") == session
    )
    if trusted and key in session:
        return _oracle_values(session[key])
    return []


def _oracle_values(value: Any) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    kept = []
    for item in items:
        if isinstance(item, bool):
            kept.append(item)
        elif isinstance(item, str) and item.strip():
            kept.append(item.strip())
        elif isinstance(item, int | float) and math.isfinite(item):
            kept.append(item)
    return kept


def oracle_unattributed(held: Any) -> bool:
    """No access attribute: missing, None, blank text or an empty list."""
    return held is None or held == [] or (isinstance(held, str) and not held.strip())


def oracle_admits(allowed: Sequence[Any], held: Any) -> bool:
    if oracle_unattributed(held):
        return True
    members = held if isinstance(held, list) else [held]
    for want in allowed:
        for have in members:
            if isinstance(want, bool) or isinstance(have, bool):
                if type(want) is type(have) and want == have:
                    return True
            elif isinstance(want, str):
                if isinstance(have, str) and have.strip() == want:
                    return True
            elif isinstance(have, int | float) and not isinstance(have, str) and want == have:
                return True
    return False


# --- conversations through the entitled REST channel ----------------------------------------------
#
# A sequence of requests to ``EntitledRestInput`` (valid, forged, expired, audience-less, absent
# tokens; downgrades; body senders that collide with other users' conversations), each turned into
# a message by the channel, recorded on its conversation's tracker the way Rasa's processor does
# (``tests/rasa_conversations.py``: session-start recording and ``action_session_start``), and
# searched. The oracle is stricter than ``leak``: a result must be admitted by the entitlements of
# *the request's own token* (nothing without a valid one), whatever the conversation recorded
# before; and a message must land in ``user:<sub>`` for a valid token and in an ``anonymous:``
# conversation otherwise, so no one writes into a token holder's conversation but its holder.

CHANNEL_SECRET = "fuzz-channel-signing-secret-0123456789-abcdef"
CHANNEL_AUDIENCE = "fuzz-assistant"
CHANNEL_ISSUER = "https://login.fuzz.example"
CHANNEL_SUBJECTS = ("victim-42", "alice", "anonymous:victim-42", "user:alice")
TOKEN_KINDS = (
    "valid",
    "valid",
    "valid",
    "absent",
    "garbage",
    "wrong_secret",
    "expired",
    "without_exp",
    "wrong_audience",
    "wrong_issuer",
    "without_subject",
    "alg_none",
    "basic_scheme",
)
CHANNEL_DOMAIN = Domain.from_yaml('version: "3.1"')


@dataclass(frozen=True)
class ChannelRequest:
    """One request: the token's kind, subject and entitlements, and what the body claims."""

    kind: str
    subject: str
    entitlements: Any
    body_sender: Any
    body_metadata: Any


@st.composite
def channel_requests(draw: st.DrawFn) -> ChannelRequest:
    subject = draw(st.sampled_from(CHANNEL_SUBJECTS))
    entitlements = draw(
        st.one_of(
            st.builds(lambda plan: {"plan": plan}, hostile_value),
            st.builds(
                lambda plan, tier: {"plan": plan, "tier": tier}, hostile_value, hostile_value
            ),
            st.sampled_from(({}, None, "premium", ["plan", "premium"])),
        )
    )
    body_sender = draw(
        st.one_of(
            st.sampled_from(CHANNEL_SUBJECTS),
            st.sampled_from(("user:victim-42", "", None, 42)),
            st.text(max_size=6),
        )
    )
    body_metadata = draw(
        st.one_of(
            st.none(),
            st.builds(lambda plan: {"plan": plan, "user_id": "victim-42"}, hostile_value),
            st.builds(lambda tier: {"tier": tier, "locale": "de"}, hostile_value),
            st.builds(lambda tier: {"tier": tier}, st.sampled_from(HOSTILE_VALUES[:12])),
        )
    )
    return ChannelRequest(
        draw(st.sampled_from(TOKEN_KINDS)), subject, entitlements, body_sender, body_metadata
    )


def channel_conversations(max_requests: int = 6) -> st.SearchStrategy[list[ChannelRequest]]:
    return st.lists(channel_requests(), min_size=1, max_size=max_requests)


def fuzz_channel(entitlement_keys: tuple[str, ...] = ("plan", "tier")) -> EntitledRestInput:
    """The channel as a deployment configures it: one HS256 key, audience and issuer required,
    and one body metadata key allowed through (``locale``). With ``entitlement_keys`` narrower
    than the store's access filters (the pre-flight check's error), a key the token does not
    decide must still grant nothing, whatever the body claims for it."""
    key = VerificationKey(None, "HS256", CHANNEL_SECRET.encode())
    verifier = TokenVerifier((key,), audience=(CHANNEL_AUDIENCE,), issuer=CHANNEL_ISSUER)
    return EntitledRestInput(ChannelSettings(verifier, entitlement_keys, "public", ("locale",)))


def channel_authorization(request: ChannelRequest) -> str | None:
    """The ``Authorization`` header for the request's kind, built when the request is sent."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": request.subject,
        "exp": now + 600,
        "aud": CHANNEL_AUDIENCE,
        "iss": CHANNEL_ISSUER,
    }
    if request.entitlements is not None:
        claims["entitlements"] = request.entitlements
    secret = CHANNEL_SECRET
    if request.kind == "absent":
        return None
    if request.kind == "garbage":
        return "Bearer not.a.token"
    if request.kind == "wrong_secret":
        secret = "another-signing-secret-0123456789-abcdefgh"
    changes = {
        "expired": {"exp": now - 120},
        "wrong_audience": {"aud": "another-assistant"},
        "wrong_issuer": {"iss": "https://evil.example"},
    }
    claims.update(changes.get(request.kind, {}))
    for dropped, kind in (("exp", "without_exp"), ("sub", "without_subject")):
        if request.kind == kind:
            claims.pop(dropped)
    if request.kind == "alg_none":
        return "Bearer " + jwt.encode(claims, None, algorithm="none")
    token = jwt.encode(claims, secret, algorithm="HS256")
    return ("Basic " if request.kind == "basic_scheme" else "Bearer ") + token


def entitled_by_token(request: ChannelRequest, key: str) -> list[Any]:
    """The oracle: what the request's own token grants for ``key`` (nothing unless valid)."""
    granted = request.entitlements
    if request.kind != "valid" or not isinstance(granted, dict) or key not in granted:
        return []
    return _oracle_values(granted[key])


async def check_channel_conversation(
    engine: KnowledgeSearch,
    llm: ScriptsFilters,
    channel: EntitledRestInput,
    requests: Sequence[ChannelRequest],
    tally: Tally,
) -> None:
    """Send each request through the channel into Rasa-kept conversations, search, check."""
    conversations = RasaConversations(CHANNEL_DOMAIN)
    written_by: dict[str, set[str]] = {}
    llm.script(None)
    for number, request in enumerate(requests):
        tally.cases += 1
        body = {"sender": request.body_sender, "message": WORDS[number % len(WORDS)]}
        if request.body_metadata is not None:
            body["metadata"] = request.body_metadata
        authorization = channel_authorization(request)
        headers = {"Authorization": authorization} if authorization else {}
        fake = SimpleNamespace(json=body, headers=headers, ctx=SimpleNamespace())
        try:
            sender = await channel._extract_sender(fake)  # noqa: SLF001
            message = UserMessage(
                body["message"],
                sender_id=sender,
                input_channel=channel.name(),
                metadata=channel.get_metadata(fake),
            )
            await conversations.receive(message)
            state = conversations.state(sender)
            conversation = Conversation.from_tracker_state(state, fallback_query=message.text)
            outcome = await engine.search(conversation, 0.0)
            results = to_search_result_list(outcome, engine.config).results
        except Exception as error:  # the property: nothing raises
            tally.crashes.append(f"{type(error).__name__}: {error} in {request!r}"[:2000])
            continue
        tally.results += len(results)
        if request.kind == "valid":
            own_conversation = sender == "user:" + request.subject
        else:
            own_conversation = sender.startswith("anonymous:")
        if not own_conversation:
            tally.leaks.append(f"conversation {sender!r} for {request!r}"[:2000])
        written_by.setdefault(sender, set()).add(request.kind)
        for result in results:
            problem = leak(state, result.metadata, engine.config.access_filters)
            problem = problem or _beyond_token(request, result.metadata, engine.config, channel)
            if problem:
                tally.leaks.append(f"{problem}: {result.metadata!r} for {request!r}"[:2000])
    for sender, kinds in written_by.items():
        if sender.startswith("user:") and kinds != {"valid"}:
            tally.leaks.append(f"conversation {sender!r} written by {sorted(kinds)}")


def _beyond_token(
    request: ChannelRequest,
    metadata: dict[str, Any],
    config: StoreConfig,
    channel: EntitledRestInput,
) -> str | None:
    for key, attribute in config.access_filters.items():
        decided = key in channel.entitlement_keys
        allowed = entitled_by_token(request, key) if decided else []
        if not oracle_admits(allowed, metadata.get(attribute)):
            return f"channel leak on {attribute} (token grants {allowed!r})"
    return None


# --- unattributed documents private: entitlements that often match -----------------------------
#
# Under ``unattributed_documents: private`` only a document whose ``plan`` matches the user's
# entitlement may be returned, and the hostile values above rarely match each other: those runs
# map ``plan`` alone and draw documents and entitlements from values that often do match (or
# nearly: case, spaces, types), beside every way of having no attribute.

PLAN_ONLY = {"plan": "plan"}
ENTITLED_VALUES: tuple[Any, ...] = ("free", "premium", " free ", ["free", "premium"], 1, True)
DOCUMENT_PLANS: tuple[Any, ...] = (
    "free",
    "premium",
    "Free",
    " premium ",
    ["free", "plus"],
    ["premium"],
    1,
    "1",
    True,
    None,
    "",
    "  ",
    [],
    [None],
    [""],
)


@st.composite
def plan_knowledge_bases(draw: st.DrawFn) -> KnowledgeBase:
    """1-14 documents, each with or without a ``plan`` (and a ``region`` for the slot scope)."""
    metadatas = []
    for ordinal in range(draw(st.integers(1, 14))):
        metadata: dict[str, Any] = {"source": f"doc-{ordinal}.md"}
        if draw(st.booleans()):
            metadata["plan"] = draw(st.sampled_from(DOCUMENT_PLANS))
        if draw(st.booleans()):
            metadata["region"] = draw(hostile_value)
        metadatas.append(metadata)
    return KnowledgeBase(tuple(metadatas))


@st.composite
def entitled_cases(draw: st.DrawFn) -> Case:
    """A hostile case whose latest message usually carries a ``plan`` that some document has."""
    case = draw(cases())
    if draw(st.integers(0, 3)):
        plan = draw(st.sampled_from(ENTITLED_VALUES))
        case = replace(case, message_metadata={"plan": plan})
    return case


# --- knowledge bases as files: front-matter shapes, and unattributed documents -----------------
#
# Documents written to disk the way people write them, read by the real loader. Each file knows
# what its author meant (``intended``): the oracle holds results to that, not to what the loader
# read, so a file read as public when its author restricted it is a leak. A file whose attributes
# cannot be read exactly has no intended reading (``None``) and must never be served.

FILE_VALUES: tuple[Any, ...] = (
    "free",
    "premium",
    "plus",
    "Free",
    " premium ",
    ["free", "plus"],
    ["premium"],
    [],
    "",
    1,
    True,
)
"""Access values that YAML and JSON both write; hostile enough for the reading, not the rule."""
READABLE_SHAPES = ("yaml", "blank lines", "byte order mark", "no front matter", "json line")
REFUSED_SHAPES = (
    "unclosed",
    "dots terminator",
    "opener with a comment",
    "toml",
    "html comment first",
    "text before the block",
    "duplicate key",
    "misspelled key",
    "json line attribute outside metadata",
    "json line duplicate key",
    "json line misspelled key",
)


@dataclass(frozen=True)
class DocumentFile:
    name: str
    content: str
    intended: dict[str, Any] | None
    """The attributes the author meant; ``None``: unreadable, never to be served."""


@dataclass(frozen=True)
class FileKnowledgeBase:
    files: tuple[DocumentFile, ...]
    unattributed: str
    """``unattributed_documents`` of the configuration searched against."""

    def write(self, folder: Path) -> None:
        for document in self.files:
            (folder / document.name).write_bytes(document.content.encode("utf-8"))

    def intended(self, source: str) -> dict[str, Any] | None:
        name = source.split(":", 1)[0]  # a JSON line's source is "file.jsonl:1"
        return next(file.intended for file in self.files if file.name == name)


def _misspelled(draw: st.DrawFn, attribute: str) -> str:
    return draw(st.sampled_from((attribute.title(), attribute + "s", attribute.upper() + "S")))


def _shaped(draw: st.DrawFn, shape: str, meta: dict[str, Any], body: str) -> tuple[str, str]:
    """``(suffix, content)`` of a document meaning ``meta`` written in ``shape``."""
    attribute = next(iter(meta), "plan")
    value = meta.get(attribute, "premium")
    block = "\n".join(f"{key}: {json.dumps(v)}" for key, v in meta.items())  # JSON is YAML
    record: dict[str, Any] = {"text": body, "metadata": dict(meta)}
    written = {
        "yaml": f"---\n{block}\n---\n{body}",
        "blank lines": f"\n\n---\n{block}\n---\n{body}",
        "byte order mark": f"\ufeff\n---\n{block}\n---\n{body}",
        "no front matter": body,
        "unclosed": f"---\n{block}\n{body}",
        "dots terminator": f"---\n{block}\n...\n{body}",
        "opener with a comment": f"--- # access\n{block}\n---\n{body}",
        "toml": f"+++\n{attribute} = {json.dumps(value)}\n+++\n{body}",
        "html comment first": f"<!-- reviewed -->\n---\n{block}\n---\n{body}",
        "text before the block": f"Internal note\n\n---\n{block}\n---\n{body}",
        "duplicate key": f"---\n{block}\n{attribute}: free\n---\n{body}",
        "misspelled key": f"---\n{_misspelled(draw, attribute)}: {json.dumps(value)}\n---\n{body}",
    }
    if shape in written:
        return ".md", written[shape]
    if shape == "json line":
        return ".jsonl", json.dumps(record)
    if shape == "json line attribute outside metadata":
        return ".jsonl", json.dumps({"text": body, attribute: value, "metadata": {}})
    if shape == "json line duplicate key":
        pairs = ", ".join(f'"{attribute}": {json.dumps(v)}' for v in (value, "free"))
        return ".jsonl", f'{{"text": {json.dumps(body)}, "metadata": {{{pairs}}}}}'
    misspelled = {_misspelled(draw, attribute): value}
    return ".jsonl", json.dumps({"text": body, "metadata": misspelled})


@st.composite
def file_knowledge_bases(draw: st.DrawFn) -> FileKnowledgeBase:
    """1-12 documents in random shapes, some without an access attribute, searched with
    unattributed documents public or private."""
    files = []
    for ordinal in range(draw(st.integers(1, 12))):
        # The first is readable: a knowledge base of refused files only is not served at all.
        shape = draw(st.sampled_from(READABLE_SHAPES + (REFUSED_SHAPES if ordinal else ())))
        meta: dict[str, Any] = {}
        for attribute in ("plan", "tier"):
            if draw(st.booleans()) or (attribute == "plan" and shape in REFUSED_SHAPES):
                meta[attribute] = draw(st.sampled_from(FILE_VALUES))
        if shape == "no front matter":
            meta = {}
        body = f"{WORDS[ordinal % len(WORDS)]} document {ordinal}"
        suffix, content = _shaped(draw, shape, meta, body)
        intended = meta if shape in READABLE_SHAPES else None
        files.append(DocumentFile(f"doc-{ordinal}{suffix}", content, intended))
    return FileKnowledgeBase(tuple(files), draw(st.sampled_from(("public", "private"))))


def file_engine(
    knowledge_base: FileKnowledgeBase, folder: Path, llm: HostileLLM
) -> KnowledgeSearch:
    """An engine over the files, indexed by the real loader and builder (synthetic vectors)."""
    docs = folder / "docs"
    docs.mkdir()
    knowledge_base.write(docs)
    config = store_config(
        docs,
        index_path=str(folder / "index"),
        access_filters=PLAN_ONLY,
        unattributed_documents=knowledge_base.unattributed,
    )
    index = ensure_index(index_settings(config), SyntheticEmbedder(), progress=False)
    return engine_for(config, index, llm)


async def check_file_case(
    engine: KnowledgeSearch,
    llm: HostileLLM,
    case: Case,
    tally: Tally,
    knowledge_base: FileKnowledgeBase,
) -> None:
    """Search once; hold every result to what its file's author meant."""
    tally.cases += 1
    llm.script(case.llm_filter)
    state = case.tracker_state()
    try:
        conversation = Conversation.from_tracker_state(state, fallback_query=case.question)
        outcome = await engine.search(conversation, 0.0)
        results = to_search_result_list(outcome, engine.config).results
    except Exception as error:  # the property: nothing raises
        tally.crashes.append(f"{type(error).__name__}: {error} in {case!r}"[:2000])
        return
    tally.results += len(results)
    for result in results:
        intended = knowledge_base.intended(str(result.metadata.get("source")))
        if intended is None:
            tally.leaks.append(f"unreadable file served: {result.metadata!r}"[:2000])
            continue
        problem = leak(
            state,
            {**result.metadata, "plan": intended.get("plan"), "tier": intended.get("tier")},
            engine.config.access_filters,
            knowledge_base.unattributed,
        )
        if problem:
            tally.leaks.append(f"{problem}: {intended!r} for {case!r}"[:2000])
