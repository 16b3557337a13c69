"""`language`: BM25 stems and drops stop words in the knowledge base's language, and says when
the documents do not look like the configured one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.retrieve.languages import (
    ANALYZERS,
    guess_language,
    warn_about_english_only_steps,
    warn_if_documents_are_not_in,
)
from rasa_context_retrieval.retrieve.lexical import SETTINGS_FILENAME, LexicalIndex, LexicalSettings
from tests.store_support import connected_store

GERMAN = [
    "Klicken Sie mit der rechten Maustaste auf eine Datei und wählen Sie Offline verfügbar.",
    "Die Rückerstattung erfolgt innerhalb von vierzehn Tagen auf Ihr Konto.",
    "Der kostenlose Tarif enthält fünf Gigabyte Speicher für alle Geräte.",
]
GERMAN_PAGES = [
    "Wie aktiviere ich Offline-Dateien? Klicken Sie mit der rechten Maustaste auf eine Datei "
    "oder einen Ordner und wählen Sie Offline verfügbar machen. Lumen Drive behält dann eine "
    "Kopie auf diesem Gerät und hält sie synchron, wann immer Sie online sind. Offline-Dateien "
    "sind in Plus, Premium und Business ohne Aufpreis enthalten, aber nicht im kostenlosen Tarif.",
    "Kann ich mein Geld zurückbekommen? Wenn Sie ein neues Abonnement innerhalb von vierzehn "
    "Tagen kündigen, erhalten Sie den vollen Betrag zurück. Danach werden Jahresabonnements "
    "anteilig für die ungenutzten Monate erstattet. Das Geld ist nach fünf bis zehn Werktagen "
    "auf Ihrer Karte oder Ihrem Konto, und Sie bekommen eine Bestätigung per E-Mail.",
]
ENGLISH_PAGE = (
    "How do I enable offline files? Right-click a file or folder and choose Make available "
    "offline. Lumen Drive then keeps a copy on that device and keeps it in sync whenever you are "
    "online. Offline files are included in Plus, Premium and Business at no extra cost, but they "
    "are not part of the Free plan."
)


def rows(index: LexicalIndex, query: str) -> list[int]:
    return [row for row, _ in index.search(query, k=3)]


def test_german_stemming_matches_inflected_german_words() -> None:
    german = LexicalIndex.build(GERMAN, LexicalSettings(language="de"))
    english = LexicalIndex.build(GERMAN, LexicalSettings(language="en"))

    assert rows(german, "Dateien") == [0]  # "Datei" and "Dateien" share the German stem
    assert rows(english, "Dateien") == []


def test_german_stop_words_are_not_search_terms() -> None:
    german = LexicalIndex.build(GERMAN, LexicalSettings(language="de"))
    english = LexicalIndex.build(GERMAN, LexicalSettings(language="en"))

    assert rows(german, "der die und") == []
    assert rows(english, "der die und") != []


def test_the_language_is_saved_with_the_index(tmp_path: Path) -> None:
    LexicalIndex.build(GERMAN, LexicalSettings(language="de")).save(tmp_path)

    loaded = LexicalIndex.load(tmp_path)

    assert loaded.settings.language == "de"
    assert rows(loaded, "Dateien") == [0]


def test_an_index_saved_before_the_language_key_reads_as_english(tmp_path: Path) -> None:
    LexicalIndex.build(GERMAN, LexicalSettings(language="en")).save(tmp_path)
    settings_file = tmp_path / SETTINGS_FILENAME
    payload = json.loads(settings_file.read_text(encoding="utf-8"))
    del payload["settings"]["language"]
    settings_file.write_text(json.dumps(payload), encoding="utf-8")

    assert LexicalIndex.load(tmp_path).settings == LexicalSettings(language="en")


def test_the_language_defaults_to_english_and_an_unknown_code_names_the_key(
    tmp_path: Path,
) -> None:
    assert StoreConfig.from_kwargs({"docs": str(tmp_path)}).language == "en"
    assert StoreConfig.from_kwargs({"docs": str(tmp_path), "language": "de"}).language == "de"
    with pytest.raises(ConfigurationError, match=r"vector_store\.language: unknown language"):
        StoreConfig.from_kwargs({"docs": str(tmp_path), "language": "german"})


@pytest.mark.parametrize("code", sorted(ANALYZERS))
def test_every_offered_language_builds_and_searches(code: str) -> None:
    index = LexicalIndex.build(GERMAN + [ENGLISH_PAGE], LexicalSettings(language=code))
    assert isinstance(index.search("Lumen Drive offline", k=2), list)


def test_documents_are_guessed_from_their_stop_words() -> None:
    assert [guess_language(page) for page in GERMAN_PAGES] == ["de", "de"]
    assert guess_language(ENGLISH_PAGE) == "en"
    assert guess_language("LD-207: storage full") is None  # too short to tell


def test_a_mismatch_is_reported_once_naming_the_likely_language() -> None:
    with capture_logs() as logs:
        likely = warn_if_documents_are_not_in([*GERMAN_PAGES, ENGLISH_PAGE], "en")
        fitting = warn_if_documents_are_not_in([*GERMAN_PAGES, ENGLISH_PAGE], "de")

    assert (likely, fitting) == ("de", None)
    warnings = [log for log in logs if log["event"] == "knowledge.language.mismatch"]
    assert len(warnings) == 1
    assert "language: de" in warnings[0]["event_info"]


def test_english_only_rules_are_named_for_another_language() -> None:
    assert warn_about_english_only_steps("de", "heuristic", "rules") == [
        "rewrite: heuristic",
        "self_query: rules",
    ]
    assert warn_about_english_only_steps("de", "llm", "off") == []
    assert warn_about_english_only_steps("en", "heuristic", "rules") == []


def test_indexing_german_documents_as_english_warns_once(tmp_path: Path, embedder: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for number, page in enumerate(GERMAN_PAGES):
        (docs / f"seite-{number}.md").write_text(page, encoding="utf-8")
    block = {
        "type": "rasa_context_retrieval.ContextRetrieval",
        "docs": str(docs),
        "index_path": str(tmp_path / "index"),
    }

    with capture_logs() as first_start:
        connected_store(embedder, block)
    with capture_logs() as restart:
        connected_store(embedder, block)
    with capture_logs() as in_german:
        connected_store(embedder, {**block, "language": "de"})

    def events(logs: list[dict[str, Any]]) -> list[str]:
        return [log["event"] for log in logs if log["event"].startswith("knowledge.language")]

    assert events(first_start) == ["knowledge.language.mismatch"]
    assert events(restart) == []  # the index is loaded, not built again
    assert events(in_german) == ["knowledge.language.english_only_steps"]
