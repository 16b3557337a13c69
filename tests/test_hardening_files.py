"""Nothing lost: every knowledge file either loads or is reported with its name and a reason.

People edit the knowledge base by hand and tools drop exports into it. A random folder of good,
broken, empty, binary, non-UTF-8, oversized and unreadable files must load every good file,
report every other one (file and reason), and still index, persist and reload.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.faiss.builder import IndexSettings, ensure_index
from rasa_context_retrieval.faiss.index import (
    IndexDirectory,
    IndexFolderNotWritable,
    KnowledgeIndex,
)
from rasa_context_retrieval.faiss.retriever import filter_mask
from rasa_context_retrieval.knowledge import loader
from rasa_context_retrieval.knowledge.loader import (
    MAX_FILE_BYTES,
    MAX_METADATA_VALUES,
    content_digest,
    load_knowledge_base,
)
from tests.property_runs import property_sizes, sized
from tests.test_index_persistence import HashingEmbedder

yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.dates().map(str),
)
metadata = st.dictionaries(
    st.text(min_size=1, max_size=10),
    st.recursive(yaml_scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6),
    max_size=4,
)


@st.composite
def good_files(draw: Any) -> tuple[str, bytes]:
    front = yaml.safe_dump(draw(metadata), allow_unicode=True)
    printable = st.characters(blacklist_categories=("Cs", "Cc"))  # NUL etc. mean "binary"
    body = draw(st.text(printable, min_size=1, max_size=80).filter(lambda text: text.strip()))
    return "md", f"---\n{front}---\nQ: {body}\nA: yes\n".encode()


bad_files = st.one_of(
    st.tuples(st.just("md"), st.text(max_size=60).map(lambda t: f"---\n{t}\n---\nBody".encode())),
    st.tuples(st.sampled_from(["md", "txt", "jsonl"]), st.binary(max_size=200)),
    st.tuples(st.sampled_from(["md", "txt"]), st.sampled_from([b"", b"  \n\t", b"\0\0binary"])),
    st.tuples(st.just("txt"), st.text(min_size=1, max_size=40).map(lambda t: t.encode("utf-16"))),
    st.tuples(st.just("jsonl"), st.text(max_size=120).map(str.encode)),
)


@given(good=st.lists(good_files(), min_size=1, max_size=4), bad=st.lists(bad_files, max_size=5))
def a_folder_of_random_files_loads_every_good_one_and_reports_the_rest(
    tmp_path_factory: pytest.TempPathFactory,
    good: list[tuple[str, bytes]],
    bad: list[tuple[str, bytes]],
):
    root = tmp_path_factory.mktemp("kb")
    docs = root / "docs"
    docs.mkdir()
    names = []
    for number, (suffix, content) in enumerate([*good, *bad]):
        name = f"{'good' if number < len(good) else 'other'}{number}.{suffix}"
        (docs / name).write_bytes(content)
        names.append(name)

    knowledge = load_knowledge_base(docs)

    loaded = {document.source.split(":")[0] for document in knowledge.documents}
    reported = {problem.file for problem in knowledge.problems}
    assert {name for name in names if name.startswith("good")} <= loaded
    assert set(names) <= loaded | reported, "a file was neither loaded nor reported"
    assert all(problem.reason.strip() for problem in knowledge.problems)
    settings_ = IndexSettings(docs, root / "index", 400, 40, 16, 200_000)
    index = ensure_index(settings_, HashingEmbedder(), progress=False)
    assert {problem.file for problem in index.knowledge.problems} == reported
    reread = KnowledgeIndex.read(IndexDirectory(root / "index").current())  # type: ignore[arg-type]

    def persisted(chunks: list[Any]) -> str:  # as JSON: NaN metadata round-trips, but NaN != NaN
        return json.dumps([chunk.metadata for chunk in chunks], sort_keys=True)

    assert persisted(reread.knowledge.chunks) == persisted(index.knowledge.chunks)
    for attribute in {key for chunk in index.knowledge.chunks for key in chunk.metadata}:
        for comparator, value in ((Comparator.EQ, "x"), (Comparator.GT, 1), (Comparator.IN, [0])):
            directive = Comparison(comparator=comparator, attribute=attribute, value=value)
            mask = filter_mask(reread.knowledge, directive)
            assert mask is not None and mask.shape == (len(reread),)


@property_sizes(full=150, few=15)
def test_a_folder_of_random_files_loads_every_good_one_and_reports_the_rest(
    tmp_path_factory: pytest.TempPathFactory, examples: int
):
    prop = a_folder_of_random_files_loads_every_good_one_and_reports_the_rest
    sized(prop, examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])(
        tmp_path_factory=tmp_path_factory
    )


def write_kb(docs: Path, extra: dict[str, bytes]) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "good.md").write_text("---\nplan: [free]\n---\nQ: Still here?\nA: Yes.\n")
    for name, content in extra.items():
        (docs / name).write_bytes(content)


def test_an_oversized_file_is_refused_without_reading_it(tmp_path: Path):
    write_kb(tmp_path, {})
    with (tmp_path / "export.md").open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no 20 MB written
    knowledge = load_knowledge_base(tmp_path)
    assert [d.source for d in knowledge.documents] == ["good.md"]
    [problem] = knowledge.problems
    assert problem.file == "export.md" and "limit" in problem.reason


class _CountingReader:
    """A file handle that records how many bytes were asked of it, and refuses "everything"."""

    def __init__(self, handle: Any, asked: list[int]) -> None:
        self._handle, self._asked = handle, asked

    def read(self, size: int | None = -1) -> bytes:
        assert size is not None and size >= 0, "a whole-file read of a knowledge file"
        self._asked.append(size)
        return self._handle.read(size)

    def __enter__(self) -> _CountingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


def test_the_fingerprint_never_reads_an_oversized_file_yet_sees_it_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    write_kb(tmp_path, {})
    export = tmp_path / "export.md"
    with export.open("wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: a 2 GB file that takes no disk
    read_from: dict[str, list[int]] = {}
    real_open = Path.open

    def counting_open(path: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        return _CountingReader(
            real_open(path, mode, *args, **kwargs), read_from.setdefault(path.name, [])
        )

    monkeypatch.setattr(Path, "open", counting_open)
    before = content_digest(tmp_path)
    assert read_from.get("export.md", []) == []
    assert sum(read_from["good.md"]) <= MAX_FILE_BYTES + 1
    with real_open(export, "r+b") as handle:
        handle.truncate(2 * 1024**3 + 1)
    assert content_digest(tmp_path) != before
    assert read_from.get("export.md", []) == []


def test_self_referencing_front_matter_is_reported_not_fatal(tmp_path: Path):
    write_kb(tmp_path, {"loop.md": b"---\nplan: &p [free, *p]\n---\nQ: Loop?\nA: Yes.\n"})
    knowledge = load_knowledge_base(tmp_path)
    assert [d.source for d in knowledge.documents] == ["good.md"]
    assert [problem.file for problem in knowledge.problems] == ["loop.md"]


def test_exponentially_aliased_front_matter_is_reported_after_a_bounded_number_of_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 9)]
    laughs = "---\n" + "\n".join(levels) + "\n---\nQ: Laughs?\nA: Many.\n"
    write_kb(tmp_path, {"laughs.md": laughs.encode()})
    visited = [0]  # values of front matter looked at: the expanded file holds over 10**9
    real_plain = loader._plain

    def counting_plain(*args: Any) -> Any:
        visited[0] += 1
        return real_plain(*args)

    monkeypatch.setattr(loader, "_plain", counting_plain)
    knowledge = load_knowledge_base(tmp_path)
    assert [d.source for d in knowledge.documents] == ["good.md"]
    assert [problem.file for problem in knowledge.problems] == ["laughs.md"]
    assert 0 < visited[0] <= MAX_METADATA_VALUES + 1 + 2  # the budget, then good.md's two values


def test_a_file_that_cannot_be_read_is_reported_and_the_rest_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    docs = tmp_path / "docs"
    write_kb(docs, {"locked.md": b"Q: Secret?\nA: Yes.\n"})
    real_read_bytes = Path.read_bytes

    def read_bytes(path: Path) -> bytes:
        if path.name == "locked.md":
            raise PermissionError(13, "Permission denied", str(path))
        return real_read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    content_digest(docs)  # the fingerprint must not fail either
    settings_ = IndexSettings(docs, tmp_path / "index", 400, 40, 16, 200_000)
    index = ensure_index(settings_, HashingEmbedder(), progress=False)
    assert [chunk.metadata["source"] for chunk in index.knowledge.chunks] == ["good.md"]
    [problem] = index.knowledge.problems
    assert problem.file == "locked.md" and "Permission denied" in problem.reason


def test_a_json_line_nested_too_deeply_is_reported_and_the_rest_loads(tmp_path: Path):
    deep = '{"text": "deep", "metadata": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    good = json.dumps({"text": "Q: Shallow?\nA: Yes.", "metadata": {}})
    write_kb(tmp_path, {"faq.jsonl": f"{deep}\n{good}\n".encode()})
    knowledge = load_knowledge_base(tmp_path)
    assert sorted(d.source for d in knowledge.documents) == ["faq.jsonl:2", "good.md"]
    assert [(p.file, p.line) for p in knowledge.problems] == [("faq.jsonl", 1)]


def index_settings(docs: Path, index_path: Path) -> IndexSettings:
    return IndexSettings(docs, index_path, 400, 40, 16, 200_000)


def test_links_that_lead_out_of_the_docs_folder_are_reported_and_never_read(tmp_path: Path):
    outside = tmp_path / "outside"
    (outside / "team").mkdir(parents=True)
    (outside / "passwd.txt").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (outside / "team" / "secret.md").write_text("---\nplan: [free]\n---\nQ: Secret?\nA: Yes.\n")
    docs = tmp_path / "docs"
    write_kb(docs, {})
    (docs / "passwd.txt").symlink_to(outside / "passwd.txt")
    (docs / "shared").symlink_to(outside / "team", target_is_directory=True)

    index = ensure_index(
        index_settings(docs, tmp_path / "index"), HashingEmbedder(), progress=False
    )

    assert [chunk.metadata["source"] for chunk in index.knowledge.chunks] == ["good.md"]
    assert not any(
        "root:" in chunk.text or "Secret" in chunk.text for chunk in index.knowledge.chunks
    )
    reasons = {problem.file: problem.reason for problem in index.knowledge.problems}
    assert set(reasons) == {"passwd.txt", "shared"}
    assert all("outside the docs folder" in reason for reason in reasons.values())


def test_links_that_stay_inside_are_read_once_and_a_link_loop_ends(tmp_path: Path):
    docs = tmp_path / "docs"
    write_kb(docs, {})
    (docs / "guides").mkdir()
    (docs / "guides" / "sync.md").write_text("Q: Sync?\nA: Automatic.\n")
    (docs / "also-guides").symlink_to(docs / "guides", target_is_directory=True)
    (docs / "guides" / "up").symlink_to(docs, target_is_directory=True)  # a loop

    knowledge = load_knowledge_base(docs)

    assert sorted(d.source for d in knowledge.documents) == ["good.md", "guides/sync.md"]
    assert knowledge.problems == []


@pytest.mark.parametrize(
    "front_matter",
    ["- plan: premium\n- region: eu", "just a sentence", "42", "[premium, business]"],
)
def test_front_matter_that_is_not_a_mapping_is_reported_and_not_indexed(
    tmp_path: Path, front_matter: str
):
    write_kb(tmp_path, {"scoped.md": f"---\n{front_matter}\n---\nQ: Scoped?\nA: Yes.\n".encode()})
    knowledge = load_knowledge_base(tmp_path)
    assert [d.source for d in knowledge.documents] == ["good.md"]
    [problem] = knowledge.problems
    assert problem.file == "scoped.md" and "not a mapping" in problem.reason


def test_empty_front_matter_is_a_document_without_attributes(tmp_path: Path):
    write_kb(tmp_path, {"open.md": b"---\n---\nQ: Open?\nA: Yes.\n"})
    knowledge = load_knowledge_base(tmp_path)
    assert {d.source: d.metadata for d in knowledge.documents}["open.md"] == {}
    assert knowledge.problems == []


def other_index(tmp_path: Path) -> Path:
    """A published index elsewhere, holding text the served knowledge base does not have."""
    docs = tmp_path / "other-docs"
    docs.mkdir()
    (docs / "secret.md").write_text("Q: Secret?\nA: Only for admins.\n")
    settings_ = index_settings(docs, tmp_path / "other-index")
    ensure_index(settings_, HashingEmbedder(), progress=False)
    folder = IndexDirectory(settings_.index_path).current()
    assert folder is not None
    return folder


@pytest.mark.parametrize("spelling", ["absolute", "dot-dot", "link"])
def test_a_current_pointer_leading_out_of_index_path_is_not_loaded(tmp_path: Path, spelling: str):
    foreign = other_index(tmp_path)
    docs = tmp_path / "docs"
    write_kb(docs, {})
    settings_ = index_settings(docs, tmp_path / "index")
    ensure_index(settings_, HashingEmbedder(), progress=False)
    pointer = settings_.index_path / "CURRENT"
    if spelling == "absolute":
        pointer.write_text(str(foreign))
    elif spelling == "dot-dot":
        pointer.write_text(f"../other-index/{foreign.name}")
    else:  # a folder with a published name that is a link to the foreign index
        (settings_.index_path / foreign.name).symlink_to(foreign, target_is_directory=True)
        pointer.write_text(foreign.name)
    # The foreign index claims this knowledge base's fingerprint.
    manifest = foreign / "manifest.json"
    data = json.loads(manifest.read_text())
    data["fingerprint"] = settings_.fingerprint(HashingEmbedder())
    manifest.write_text(json.dumps(data))

    index = ensure_index(settings_, HashingEmbedder(), progress=False)

    assert [chunk.metadata["source"] for chunk in index.knowledge.chunks] == ["good.md"]
    current = IndexDirectory(settings_.index_path).current()
    assert current is not None and current.resolve().parent == settings_.index_path.resolve()


def test_a_current_pointer_that_is_not_utf8_rebuilds_instead_of_failing(tmp_path: Path):
    docs = tmp_path / "docs"
    write_kb(docs, {})
    settings_ = index_settings(docs, tmp_path / "index")
    ensure_index(settings_, HashingEmbedder(), progress=False)
    (settings_.index_path / "CURRENT").write_bytes(b"index-\xff\xfe\x00garbage")
    index = ensure_index(settings_, HashingEmbedder(), progress=False)
    assert [chunk.metadata["source"] for chunk in index.knowledge.chunks] == ["good.md"]


def test_an_index_path_that_cannot_be_written_is_one_message_naming_it(tmp_path: Path):
    docs = tmp_path / "docs"
    write_kb(docs, {})
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the index folder should be")
    with pytest.raises(IndexFolderNotWritable, match="vector_store.index_path") as raised:
        ensure_index(index_settings(docs, blocker / "index"), HashingEmbedder(), progress=False)
    assert str(blocker / "index") in str(raised.value) and "can write to" in str(raised.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="permission bits do not stop root")
def test_a_read_only_index_folder_is_one_message_naming_it(tmp_path: Path):
    docs = tmp_path / "docs"
    write_kb(docs, {})
    index_path = tmp_path / "index"
    index_path.mkdir()
    index_path.chmod(0o555)
    try:
        with pytest.raises(IndexFolderNotWritable, match="can write to"):
            ensure_index(index_settings(docs, index_path), HashingEmbedder(), progress=False)
    finally:
        index_path.chmod(0o755)
