"""What the README and the pages under documentation/ name must exist in the code.

Users copy event names into log queries and alerts, keys into their endpoints.yml and import paths
into config.yml; a name the pages invent (or one the code renamed) fails silently on their side.
These tests read the pages as text and compare them with the code as text or as pydantic models:
nothing is embedded and no model is loaded.

What counts as a mention:

* a **log event**: a code span that starts with a dotted lower-case name of three or more parts
  (`knowledge.index.built`), or of two parts whose first part is one the package logs under
  (`knowledge_search.search`), unless it names a module or a configuration key (below);
* a **configuration key**: every key under a `vector_store:` mapping in a ```yaml block (and
  under its `milvus:` block and its `metadata_fields` entries), every key in the first column of a
  table whose first header is `key` (a `milvus:` or `metadata_fields` section lists those blocks'
  keys), and every code span `vector_store.<key>...` or `milvus.<key>`;
* an **import path**: a code span that starts with `rasa_context_retrieval.` or `addons.`.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.milvus.config import MilvusConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rasa_context_retrieval", "addons")
PAGES = (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "documentation").glob("*.md")))

RASA_OWN_KEYS = frozenset({"type", "threshold"})
"""Keys of a `vector_store:` block that Rasa reads itself and never passes to the plugin."""
NESTED_BLOCKS: dict[str, type[BaseModel]] = {"milvus": MilvusConfig}
"""Blocks inside `vector_store:` with a closed set of keys."""
BLOCKS = frozenset({*NESTED_BLOCKS, "llm"})
"""Every block inside `vector_store:`; `llm:` passes any key on to Rasa's LLM clients."""
FILE_SUFFIXES = frozenset({"py", "yml", "yaml", "md", "json", "jsonl", "txt", "toml", "sh"})

RASA_EVENTS = {
    "utils.llm.reasoning_effort.model_info_lookup_failed": "shared/utils/llm.py",
}
"""Events Rasa logs that the pages mention, with the file of the installed rasa-pro logging them."""

EVENT_CALL = re.compile(
    r"logger\.(?:debug|info|warning|error|exception|critical)\(\s*(f?)([\"'])(.+?)\2"
)
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
DOTTED = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+")
IMPORT_PATH = re.compile(r"(?:rasa_context_retrieval|addons)(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
FENCE = re.compile(r"^```(\w*)\s*$")
HEADING = re.compile(r"^#+\s+(.*)$")


@dataclass(frozen=True)
class Mention:
    """A name on a page, with where it is, for a failure message a reader can act on."""

    name: str
    page: str
    line: int

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.name}"


def _relative(page: Path) -> str:
    return str(page.relative_to(REPO_ROOT))


def _outside_fences(page: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of prose and tables (code blocks are read by ``_yaml_blocks``)."""
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def _yaml_blocks(page: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of every ```yaml block."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start: int | None = None
    for number, line in enumerate(lines, start=1):
        fence = FENCE.match(line.strip())
        if not fence:
            continue
        if start is None:
            start = number if fence.group(1) in ("yaml", "yml") else -number
        else:
            if start > 0:
                yield start, "\n".join(lines[start : number - 1])
            start = None


def _code_spans(page: Path) -> Iterator[tuple[int, str]]:
    for number, line in _outside_fences(page):
        for span in CODE_SPAN.finditer(line):
            yield number, span.group(1).strip()


def _logged_events() -> list[re.Pattern[str]]:
    """Every event the packages log, as a pattern (an f-string's ``{...}`` matches one part)."""
    patterns = []
    for package in PACKAGES:
        for module in (REPO_ROOT / package).rglob("*.py"):
            for call in EVENT_CALL.finditer(module.read_text(encoding="utf-8")):
                is_fstring, name = call.group(1), call.group(3)
                parts = re.split(r"(\{[^}]*\})", name) if is_fstring else [name]
                pattern = "".join(
                    "[a-z_]+" if part.startswith("{") else re.escape(part) for part in parts
                )
                patterns.append(re.compile(pattern))
    return patterns


def _rasa_logs(event: str) -> bool:
    relative = RASA_EVENTS.get(event)
    spec = importlib.util.find_spec("rasa")
    if relative is None or spec is None or spec.origin is None:
        return False
    source = (Path(spec.origin).parent / relative).read_text(encoding="utf-8")
    return event.rsplit(".", 1)[-1] in source


def _is_key_path(name: str) -> bool:
    first = name.split(".", 1)[0]
    return first == "vector_store" or (first in BLOCKS and name.count(".") == 1)


def _key_path_exists(name: str) -> bool:
    """``vector_store.milvus.collection``, ``vector_store.top_k`` or ``milvus.collection``."""
    parts = name.split(".")
    if parts[0] == "vector_store":
        parts = parts[1:]
    model: type[BaseModel] | None = StoreConfig
    for part in parts:
        if model is None:
            return True  # inside a block open to any key, such as `llm:`
        if part not in model.model_fields and not (model is StoreConfig and part in RASA_OWN_KEYS):
            return False
        model = NESTED_BLOCKS.get(part) if model is StoreConfig else None
    return True


def _is_file_name(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in FILE_SUFFIXES


def _event_mentions() -> list[Mention]:
    event_components = {pattern.pattern.split("\\.", 1)[0] for pattern in _logged_events()} - BLOCKS
    mentions = []
    for page in PAGES:
        for number, span in _code_spans(page):
            found = DOTTED.match(span)
            if not found or span[found.end() : found.end() + 1] not in ("", " "):
                continue
            name = found.group()
            if name.split(".", 1)[0] in PACKAGES or _is_key_path(name) or _is_file_name(name):
                continue
            if name.count(".") >= 2 or name.split(".", 1)[0] in event_components:
                mentions.append(Mention(name, _relative(page), number))
    return mentions


def _keys_in(block: Any, model: type[BaseModel], path: str) -> Iterator[str]:
    """Dotted paths of the keys in a mapping that ``model`` does not know."""
    if not isinstance(block, dict):
        return
    for key, value in block.items():
        own = model is StoreConfig and key in RASA_OWN_KEYS
        if key not in model.model_fields and not own:
            yield f"{path}.{key}"
        elif model is StoreConfig and key in NESTED_BLOCKS:
            yield from _keys_in(value, NESTED_BLOCKS[key], f"{path}.{key}")
        elif model is StoreConfig and key == "metadata_fields" and isinstance(value, list):
            for entry in value:
                yield from _keys_in(entry, MetadataField, f"{path}.metadata_fields[]")


def _vector_store_blocks(tree: Any) -> Iterator[Any]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "vector_store":
                yield value
            else:
                yield from _vector_store_blocks(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from _vector_store_blocks(item)


def _table_keys(page: Path) -> Iterator[Mention]:
    """First-column names of tables headed `key`, checked against the section's block."""
    model: type[BaseModel] = StoreConfig
    in_key_table = False
    for number, line in _outside_fences(page):
        heading = HEADING.match(line)
        if heading:
            title = heading.group(1)
            model = (
                MilvusConfig
                if "`milvus:`" in title
                else MetadataField
                if "`metadata_fields`" in title
                else StoreConfig
            )
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.lstrip().startswith("|"):
            in_key_table = False
        elif cells[0] == "key":
            in_key_table = True
        elif in_key_table and not set(cells[0]) <= set("-: "):
            for span in CODE_SPAN.finditer(cells[0]):
                key = span.group(1)
                known = key in model.model_fields or (model is StoreConfig and key in RASA_OWN_KEYS)
                if not known:
                    yield Mention(f"{model.__name__}: {key}", _relative(page), number)


def _missing_configuration_keys() -> list[str]:
    missing: list[str] = []
    for page in PAGES:
        for start, text in _yaml_blocks(page):
            try:
                tree = yaml.safe_load(text)
            except yaml.YAMLError as error:
                missing.append(f"{_relative(page)}:{start}: a YAML example does not parse: {error}")
                continue
            for block in _vector_store_blocks(tree):
                missing.extend(
                    f"{_relative(page)}:{start}: {key}"
                    for key in _keys_in(block, StoreConfig, "vector_store")
                )
        missing.extend(str(mention) for mention in _table_keys(page))
        missing.extend(
            str(Mention(span, _relative(page), number))
            for number, span in _code_spans(page)
            if DOTTED.fullmatch(span) and _is_key_path(span) and not _key_path_exists(span)
        )
    return missing


def _import_path_exists(name: str) -> bool:
    """Whether ``a.b.c`` is a module of the repository or a name one defines (read as text)."""
    folder, parts = REPO_ROOT, name.split(".")
    for position, part in enumerate(parts):
        if (folder / part).is_dir():
            folder = folder / part
            continue
        module = folder / f"{part}.py"
        if module.is_file():
            rest = parts[position + 1 :]
            return not rest or (len(rest) == 1 and _defines(module, rest[0]))
        rest = parts[position:]
        return len(rest) == 1 and _defines(folder / "__init__.py", rest[0])
    return True


def _defines(module: Path, name: str) -> bool:
    source = module.read_text(encoding="utf-8")
    definition = rf"^(?:class|def|async def)\s+{name}\b|^{name}\s*[:=]|__all__\s*=[^\]]*\"{name}\""
    return re.search(definition, source, flags=re.MULTILINE) is not None


def test_every_log_event_the_pages_name_is_logged_by_the_package():
    logged = _logged_events()
    unknown = [
        str(mention)
        for mention in _event_mentions()
        if not any(pattern.fullmatch(mention.name) for pattern in logged)
        and not _rasa_logs(mention.name)
    ]
    assert not unknown, (
        'these log events are named in the documentation but no `logger.<level>("...")` call '
        "in the package logs them (fix the name, or list a Rasa event in RASA_EVENTS):\n  "
        + "\n  ".join(unknown)
    )


def test_every_configuration_key_the_pages_name_exists_in_the_config_models():
    missing = _missing_configuration_keys()
    assert not missing, (
        "these `vector_store:` keys are named in the documentation but the config models "
        "(rasa_context_retrieval/config.py, milvus/config.py, filters/schema.py) do not "
        "define them:\n  " + "\n  ".join(missing)
    )


def test_every_import_path_the_pages_name_exists():
    missing = [
        str(Mention(found.group(), _relative(page), number))
        for page in PAGES
        for number, span in _code_spans(page)
        for found in [IMPORT_PATH.match(span)]
        if found and not _import_path_exists(found.group())
    ]
    assert not missing, (
        "these import paths are named in the documentation but do not exist:\n  "
        + ("\n  ".join(missing))
    )


def test_the_pages_are_found():
    """A moved folder must not make the checks above pass on no pages at all."""
    names = {page.name for page in PAGES}
    assert {"README.md", "configuration.md", "access-control.md"} <= names
    assert any(_event_mentions()), "no log event was found on any page"
