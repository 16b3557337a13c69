"""The ``vector_store:`` block of endpoints.yml, validated once into a typed config.

Rasa passes the block (minus ``type``) as ``EndpointConfig.kwargs`` to ``connect()`` before every
search. It is parsed here once; every mistake is reported together, each naming the key and the
fix, so a misconfigured assistant fails at start-up with one readable message instead of a stack
trace at the first user question.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain_core.structured_query import FilterDirective
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from rasa_context_retrieval.access.entitlements import Unattributed
from rasa_context_retrieval.conversation import (
    MAX_CONVERSATION_CHARS,
    MAX_TURN_CHARS,
    MAX_TURNS,
    HistoryCaps,
)
from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import attributes_of, parse_filter
from rasa_context_retrieval.knowledge.faq_table import ANSWER_COLUMN, QUESTION_COLUMN
from rasa_context_retrieval.llm.block import LLMBlock
from rasa_context_retrieval.milvus.attribute_names import unaddressable_reason
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.query_embedding.modes import DocumentPrecision, QueryEmbedderMode
from rasa_context_retrieval.result_metadata import ResultMetadataChoice
from rasa_context_retrieval.retrieve.languages import DEFAULT_LANGUAGE, LanguageCode

RewriteMode = Literal["heuristic", "llm", "off"]
HeuristicMode = Literal[
    "previous_words", "chained_and_bot_words", "chained_words", "topic_words", "latest"
]
SelfQueryMode = Literal["rules", "llm", "off"]
ContextModelName = Literal["words_and_turns", "weighted_turns", "words"]
Backend = Literal["faiss", "milvus"]

DEFAULT_TOP_K = 4
DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 100
DEFAULT_EMBEDDING_BATCH_SIZE = 64
DEFAULT_CANDIDATES = 50
DEFAULT_EXACT_SEARCH_BELOW = 200_000
DEFAULT_REFRESH_SECONDS = 30.0
DEFAULT_STARTUP_WAIT_SECONDS = 30.0
DEFAULT_QUEUE_WAIT_SECONDS = 0.5
"""``llm_queue_wait_seconds``: a quarter of an LLM step's default budget of 2 s, so a call that
waited keeps most of its time."""


def _refuse_booleans(value: Any) -> Any:
    """YAML's ``true`` is a bool, and pydantic would read it as the number 1."""
    if isinstance(value, bool):
        raise PydanticCustomError("bool_as_number", "must be a number, not true/false")
    return value


Count = Annotated[int, BeforeValidator(_refuse_booleans)]
Seconds = Annotated[float, BeforeValidator(_refuse_booleans)]
NonEmptyName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A slot, channel metadata key or document attribute: an empty one names nothing, so a mapping
such as ``access_filters: {plan: ''}`` would filter on no attribute at all."""


class ConfigurationError(ContextRetrievalError, ValueError):
    """The ``vector_store:`` block cannot be used; the message says which key and how to fix it."""


class ContextWeightsBlock(BaseModel):
    """``context_weights:``: how much each earlier text weighs in a follow-up's turns view, next
    to the latest message's 1.0 (rewrite/context.py). Unset keys keep the built-in weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    previous_question: float | None = Field(None, ge=0.0, le=1.0)
    topic: float | None = Field(None, ge=0.0, le=1.0)
    last_bot: float | None = Field(None, ge=0.0, le=1.0)
    previous_answer: float | None = Field(None, ge=0.0, le=1.0)
    """The previous answer's document as a ranking of its own (retrieve/answer_prior.py)."""


class FaqColumnsBlock(BaseModel):
    """``faq_columns: {question: Frage, answer: Antwort}``: the header names an FAQ table's
    question and answer are read from (case and surrounding spaces ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: NonEmptyName = QUESTION_COLUMN
    answer: NonEmptyName = ANSWER_COLUMN


class HistoryBlock(BaseModel):
    """``history:``: how much of the conversation every search reads (``conversation.py``).

    Every later stage (rewrite, self-query, the embedder, an LLM prompt) costs at most what
    these allow, so each has an upper bound too."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turn_chars: Count = Field(default=MAX_TURN_CHARS, ge=1, le=100_000)
    """Characters of one turn; a longer one is cut."""
    max_turns: Count = Field(default=MAX_TURNS, ge=1, le=1_000)
    """Turns kept, latest first (the latest user message always)."""
    max_chars: Count = Field(default=MAX_CONVERSATION_CHARS, ge=1, le=1_000_000)
    """Characters over all kept turns, latest first."""

    @model_validator(mode="after")
    def _whole_turn_fits(self) -> HistoryBlock:
        if self.max_chars < self.max_turn_chars:
            raise ValueError(
                f"history.max_chars ({self.max_chars}) is below history.max_turn_chars "
                f"({self.max_turn_chars}): raise max_chars or lower max_turn_chars"
            )
        return self

    def caps(self) -> HistoryCaps:
        return HistoryCaps(self.max_turn_chars, self.max_turns, self.max_chars)


class StoreConfig(BaseModel):
    """Everything the plugin reads from the ``vector_store:`` block of endpoints.yml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Backend = "faiss"
    milvus: MilvusConfig | None = None
    """Validated here with everything else (the module imports no pymilvus)."""
    docs: Path | None = Field(None, validate_default=True)
    """Folder of the knowledge base (.md, .txt with optional YAML front matter, .jsonl); not
    read by a Milvus replica that never ingests (see ``reads_docs``)."""
    index_path: Path = Path(".index")
    """Folder where the index persists between restarts."""
    top_k: Count = Field(DEFAULT_TOP_K, ge=1, le=100)
    slot_filters: dict[NonEmptyName, NonEmptyName] = Field(default_factory=dict)
    """Slot name -> metadata attribute; a filled slot scopes results (personalisation: slots are
    what the user says, so they grant nothing)."""
    access_filters: dict[NonEmptyName, NonEmptyName] = Field(default_factory=dict)
    """Channel metadata key -> document attribute: entitlements, denied by default
    (``rasa_context_retrieval.access.entitlements``)."""
    unattributed_documents: Unattributed = "public"
    """Who may read a document without an access attribute: everyone (``public``), or, with
    ``private``, nobody (deny by default for documents as well as for users)."""
    metadata_fields: tuple[MetadataField, ...] = ()
    filter: str | None = None
    """A filter in self-query syntax ANDed into every search, e.g. ``ne("status", "draft")``."""
    rewrite: RewriteMode = "heuristic"
    rewrite_heuristic: HeuristicMode = "chained_words"
    """Which no-LLM words rewrite makes the standalone query (rewrite/heuristic.py):
    ``chained_words`` keeps the subject along a chain of follow-ups and is the words view of
    ``words_and_turns`` (bench/results/conversational.md)."""
    context_model: ContextModelName = "words_and_turns"
    """How a follow-up's context reaches the search with ``rewrite: heuristic``:
    ``words_and_turns`` fuses the rankings of the message mixed with earlier turns and of the
    words rewrite, ``weighted_turns`` mixes earlier turns into one vector, ``words`` embeds the
    words rewrite alone (rewrite/context.py, bench/results/conversational.md)."""
    context_weights: ContextWeightsBlock | None = None
    """Weights of the earlier turns in a follow-up's query vector; ``None``: the built-in ones,
    chosen without the assistant's data (documentation/context-model.md)."""
    self_query: SelfQueryMode = "rules"
    carry_filters: bool = True
    """Rules self-query: keep filters of earlier turns for follow-ups (planning/carried_filters)."""
    strip_filter_words: bool | None = None
    """Remove matched filter words from the searched text; ``None``: the measured default."""
    hybrid: bool | None = None
    """Fuse BM25 with dense results (reciprocal rank fusion, BM25 at
    ``retrieve.fusion.LEXICAL_WEIGHT``); ``None``: on with FAISS, off with Milvus
    (``lexical_search``)."""
    multi_query: Count = Field(0, ge=0, le=5)
    """LLM paraphrases searched besides the standalone query (needs ``llm``)."""
    llm: LLMBlock | None = None
    """An LLM configured the way Rasa configures LLMs (provider, model, ... or model_group)."""
    history: HistoryBlock = HistoryBlock()
    """How much of the conversation each search reads."""
    llm_queue_wait_seconds: Seconds = Field(DEFAULT_QUEUE_WAIT_SECONDS, ge=0, le=60)
    """How long an LLM step waits for a place when the process's LLM calls are all out
    (``llm.client.MAX_CALLS_IN_FLIGHT``), within the step's ``timeout``; past it, or with 0, it
    falls back to the no-LLM path."""
    document_formats: list[Literal["pdf", "docx", "pptx", "html", "csv", "xlsx"]] = Field(
        default_factory=list
    )
    """Formats read besides .md/.txt/.jsonl (``[pdf, docx, pptx, html, csv, xlsx]``). Opt-in: an
    upgrade must never start serving files that sat ignored in ``docs`` until then."""
    faq_columns: FaqColumnsBlock = Field(default_factory=FaqColumnsBlock)
    """Header names of an FAQ table's question and answer columns (.csv, .xlsx)."""
    chunk_size: Count = Field(DEFAULT_CHUNK_SIZE, ge=100, le=20_000)
    chunk_overlap: Count = Field(DEFAULT_CHUNK_OVERLAP, ge=0)
    embedding_batch_size: Count = Field(DEFAULT_EMBEDDING_BATCH_SIZE, ge=1, le=4096)
    candidates: Count = Field(DEFAULT_CANDIDATES, ge=1, le=1000)
    """How deep each ranking goes before fusion and thresholding."""
    exact_search_below: Count = Field(DEFAULT_EXACT_SEARCH_BELOW, ge=0)
    """Corpus size (chunks) from which unfiltered search uses an approximate (HNSW) index."""
    refresh_seconds: Seconds = Field(DEFAULT_REFRESH_SECONDS, ge=0)
    """How often connect() looks for changed documents; 0 checks only at start-up."""
    startup_wait_seconds: float = Field(DEFAULT_STARTUP_WAIT_SECONDS, ge=0, le=3600)
    """How long a search waits for the index still being loaded or built at start-up; past
    that it answers with no results (Rasa's cannot-handle pattern follows)."""
    language: LanguageCode = DEFAULT_LANGUAGE
    """ISO 639-1 code of the documents: BM25's stemmer and stop words (see Languages in
    documentation/configuration.md)."""
    query_embedder: QueryEmbedderMode = "auto"
    """Queries of a local sentence-transformers model through its ONNX export (``auto``), its
    int8 export (``int8``: faster, slightly different ranking) or Rasa's client (``rasa``)."""
    document_precision: DocumentPrecision = "auto"
    """Chunks of a large build in bfloat16 where the CPU has it and a check on the build's own
    chunks keeps them within cosine 0.9999 of float32 (``auto``), or always float32 (``fp32``)."""
    result_metadata: ResultMetadataChoice = "full"
    """What each result's metadata carries into Rasa's prompt (result_metadata.py)."""

    _static_filter: FilterDirective | None = PrivateAttr(default=None)

    @field_validator("docs")
    @classmethod
    def _docs_is_a_folder(cls, docs: Path | None, info: ValidationInfo) -> Path | None:
        if _is_milvus_replica(info.data.get("backend"), info.data.get("milvus")):
            return docs  # a replica reads everything from Milvus, never the documents
        if docs is None:
            raise ValueError("required, add it to the vector_store: block")
        if not docs.is_dir():
            raise ValueError(
                f"folder '{docs}' does not exist (relative paths start where Rasa runs); "
                "point `docs` at the folder that holds your knowledge base"
            )
        return docs

    @field_validator("metadata_fields")
    @classmethod
    def _field_names_unique(cls, fields: tuple[MetadataField, ...]) -> tuple[MetadataField, ...]:
        names = [field.name for field in fields]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"attribute(s) {duplicates} declared twice; declare each once")
        return fields

    @field_validator("metadata_fields", "slot_filters", "access_filters")
    @classmethod
    def _milvus_can_filter_on_the_attributes(cls, named: Any, info: ValidationInfo) -> Any:
        """On ``backend: milvus``, an attribute Milvus cannot address is refused here, at
        start-up, rather than at each search that filters on it (FAISS takes any name)."""
        if info.data.get("backend") != "milvus":
            return named
        if isinstance(named, Mapping):
            attributes = [(f" (of `{key}`)", name) for key, name in named.items()]
        else:
            attributes = [("", field.name) for field in named]
        faults = [
            f"the attribute {name!r}{of}: {reason}"
            for of, name in attributes
            if (reason := unaddressable_reason(name))
        ]
        if faults:
            raise ValueError(
                "; ".join(faults) + "; rename the attribute here and in the documents, or use "
                "`backend: faiss`, which filters on any name"
            )
        return named

    @field_validator("filter")
    @classmethod
    def _filter_names_declared_fields(cls, text: str | None, info: ValidationInfo) -> str | None:
        if text is not None:
            declared = info.data.get("metadata_fields", ())
            _static_filter(text, frozenset(field.name for field in declared))
        return text

    @model_validator(mode="after")
    def _features_have_what_they_need(self) -> StoreConfig:
        needs_llm = [
            key
            for key, wants in (
                ("rewrite", self.rewrite == "llm"),
                ("self_query", self.self_query == "llm"),
                ("multi_query", self.multi_query > 0),
            )
            if wants
        ]
        if needs_llm and not self.llm:
            raise ValueError(
                f"{', '.join(needs_llm)} need(s) an LLM: add an `llm:` block "
                "(provider, model, ...) or switch them to a mode that needs none"
            )
        if self.unattributed_documents == "private" and not self.access_filters:
            raise ValueError(
                "`unattributed_documents: private` restricts documents without an access "
                "attribute, and needs `access_filters` to name that attribute: add "
                "`access_filters` (e.g. {plan: plan}) or remove `unattributed_documents`"
            )
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("`chunk_overlap` must be smaller than `chunk_size`")
        if self.filter is not None:
            self._static_filter = parse_filter(self.filter)
        if self.backend == "milvus" and not self.milvus:
            raise ValueError(
                "`backend: milvus` needs a `milvus:` block with at least uri and collection"
            )
        if self.hybrid and self.milvus_replica:
            raise ValueError(
                "`hybrid: true` cannot run on a `backend: milvus` replica (`ingest: "
                "console_only`): the Milvus 2.3 server cannot rank BM25 itself, and a local "
                "lexical index would be a copy of every chunk on every replica; set "
                "`hybrid: false`, or `milvus.ingest: auto` (every replica then indexes `docs`)"
            )
        return self

    @property
    def lexical_search(self) -> bool:
        """Whether searches fuse BM25 in: ``hybrid`` as set, else on with FAISS and off with
        Milvus, whose read-only replicas keep no chunks to rank: the console that fills a
        collection and every replica reading it must answer alike. On with FAISS because it
        raised MRR@4 on the test halves of eight of eleven help centres and lowered none (the
        example eval by one rank of one case), with TREC CAsT within 0.01
        (bench/results/grounded_all.md)."""
        return self.hybrid if self.hybrid is not None else self.backend != "milvus"

    @property
    def milvus_replica(self) -> bool:
        """A Milvus assistant that never ingests: it needs no documents and no local index."""
        return _is_milvus_replica(self.backend, self.milvus)

    @property
    def static_filter(self) -> FilterDirective | None:
        """``filter`` parsed once, at start-up."""
        return self._static_filter

    @property
    def field_names(self) -> frozenset[str]:
        return frozenset(field.name for field in self.metadata_fields)

    @property
    def access_attributes(self) -> tuple[str, ...]:
        """The document attributes ``access_filters`` read (the loader refuses look-alikes)."""
        return tuple(self.access_filters.values())

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any] | None) -> StoreConfig:
        """Validate the block; raise one ConfigurationError that lists every fault."""
        if not kwargs:
            raise ConfigurationError(
                "the `vector_store:` block in endpoints.yml is empty: add at least `docs: <folder>`"
            )
        try:
            return cls.model_validate(dict(kwargs))
        except ValidationError as error:
            raise ConfigurationError(_explain(error)) from None


def _is_milvus_replica(backend: Any, milvus: Any) -> bool:
    return (
        backend == "milvus" and isinstance(milvus, MilvusConfig) and milvus.ingest == "console_only"
    )


def _static_filter(text: str, declared: frozenset[str]) -> FilterDirective:
    try:
        directive = parse_filter(text)
    except ValueError as error:
        raise ValueError(" ".join(f"cannot be read: {error}".split())) from None
    unknown = sorted(attributes_of(directive) - declared)
    if unknown:
        raise ValueError(
            f"names {unknown}, which `metadata_fields` does not declare; "
            "declare them or fix the filter"
        )
    return directive


SECRET_BEARING_BLOCKS = ("llm", "milvus")
"""Blocks whose values are never echoed in an error: they may hold a key or a password."""
_NESTED_MODELS: dict[str, type[BaseModel]] = {
    "llm": LLMBlock,
    "milvus": MilvusConfig,
    "context_weights": ContextWeightsBlock,
    "history": HistoryBlock,
}


def _explain(error: ValidationError) -> str:
    lines = []
    for fault in error.errors():
        loc = [str(part) or "''" for part in fault["loc"] if part != "[key]"]
        path = ".".join(loc)
        key = f"vector_store.{path}" if path else "vector_store"
        message = _FIXES.get(fault["type"]) or _own_message(fault["msg"], path)
        if fault["type"] == "extra_forbidden":
            lines.append(f"{key}: unknown key; known keys are: {_known_keys(loc[:-1])}")
        elif fault["type"] == "missing":
            lines.append(f"{key}: required, add it to the vector_store: block")
        elif message.startswith(f"{path}.") and path in _NESTED_MODELS:
            lines.append(f"vector_store.{message}")  # a nested validator named the exact key
        elif path and _may_echo(loc, fault.get("input")):
            lines.append(f"{key}: {message} (got {fault.get('input')!r})")
        else:
            lines.append(f"{key}: {message}")
    return "invalid vector_store configuration in endpoints.yml:\n  " + "\n  ".join(lines)


_FIXES = {
    "bool_as_number": "must be a number, not true/false; write the number (e.g. 4)",
    "string_type": "must be text; quote the value",
    "string_too_short": "must not be empty; name the key or attribute, or remove the entry",
}
"""Pydantic's error types, said as the fix: a ``top_k: true`` is refused (not read as 1)."""


def _own_message(message: str, path: str) -> str:
    """Pydantic's message without its prefix, nor the key when the validator already named it."""
    return message.removeprefix("Value error, ").removeprefix(f"{path}: ")


def _known_keys(block: list[str]) -> str:
    model = _NESTED_MODELS.get(block[0], StoreConfig) if block else StoreConfig
    return ", ".join(sorted(model.model_fields))


def _may_echo(loc: list[str], value: Any) -> bool:
    return loc[0] not in SECRET_BEARING_BLOCKS and not isinstance(value, Mapping | list)
