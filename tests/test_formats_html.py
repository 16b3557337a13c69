"""Saved web pages: main content only, headings and anchors kept, title and canonical URL read."""

from __future__ import annotations

from pathlib import Path

import pytest

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import load_knowledge_base
from rasa_context_retrieval.result_metadata import citable_source

pytest.importorskip("lxml")

HTML = (".html", ".htm")

HELP_PAGE = """<!doctype html>
<html><head>
  <title>Pausing sync | Lumen help centre</title>
  <link rel="canonical" href="https://help.example.com/sync">
  <script>var tracking = "SCRIPT-TEXT";</script>
  <style>.x { color: red }</style>
</head><body>
  <header><a href="/">Lumen</a> <span>SITE-HEADER</span></header>
  <nav><ul><li>NAV-LINK Home</li><li>NAV-LINK Pricing</li></ul></nav>
  <div id="cookie-banner">COOKIE-BANNER We use cookies. <button>Accept</button></div>
  <main>
    <h1>Sync</h1>
    <p>Sync keeps your files in step.</p>
    <section id="pausing">
      <h2>Pausing sync</h2>
      <p>Open the app and tap <b>Pause</b>.</p>
      <ul><li>Pauses last an hour</li><li>Resume any time</li></ul>
      <p>Q: Does pausing delete files?<br>A: No, files stay where they are.</p>
    </section>
    <h2 id="limits">Limits</h2>
    <table><tr><th>Plan</th><th>Devices</th></tr><tr><td>Free</td><td>3</td></tr></table>
    <script>document.write("INLINE-SCRIPT")</script>
  </main>
  <footer>FOOTER-TEXT Copyright</footer>
</body></html>
"""


def test_only_the_main_content_is_indexed_with_headings_lists_and_tables(tmp_path: Path):
    (tmp_path / "help").mkdir()
    (tmp_path / "help/sync.html").write_text(HELP_PAGE, encoding="utf-8")
    assert load_knowledge_base(tmp_path).documents == []  # opt-in only

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=HTML)
    indexed = "\n".join(document.text for document in knowledge.documents)

    for furniture in ("SCRIPT", "SITE-HEADER", "NAV-LINK", "COOKIE", "FOOTER", "color"):
        assert furniture not in indexed
    assert [d.source for d in knowledge.documents] == [
        "help/sync.html",
        "help/sync.html#pausing",
        "help/sync.html#limits",
    ]
    intro, pausing, limits = knowledge.documents
    assert intro.text == "# Sync\n\nSync keeps your files in step."
    assert pausing.text.startswith(
        "## Pausing sync\n\nOpen the app and tap Pause.\n\n"
        "- Pauses last an hour\n\n- Resume any time"
    )
    assert limits.text == "## Limits\n\n| Plan | Devices |\n| --- | --- |\n| Free | 3 |"
    assert intro.metadata == {
        "title": "Pausing sync | Lumen help centre",
        "url": "https://help.example.com/sync",
        "section": "Sync",
    }
    assert pausing.metadata["anchor"] == "pausing"
    assert [d.metadata["section"] for d in knowledge.documents] == [
        "Sync",
        "Sync > Pausing sync",
        "Sync > Limits",
    ]


def test_a_section_is_cited_with_its_anchor_and_qa_entries_keep_their_answer(tmp_path: Path):
    (tmp_path / "sync.htm").write_text(HELP_PAGE, encoding="utf-8")
    knowledge = load_knowledge_base(tmp_path, extra_suffixes=HTML)
    chunks = chunk_documents(knowledge.documents, 500, 50)

    qa = next(chunk for chunk in chunks if "question" in chunk.metadata)
    assert qa.metadata["answer"] == "No, files stay where they are."
    assert qa.metadata["source"] == "sync.htm#pausing"
    assert citable_source(qa.metadata) == "https://help.example.com/sync#pausing"
    untitled = {k: v for k, v in qa.metadata.items() if k != "url"}
    assert citable_source(untitled) == "Pausing sync | Lumen help centre, #pausing"


def test_a_page_of_scripts_is_refused_with_a_reason_and_the_rest_is_served(tmp_path: Path):
    (tmp_path / "good.html").write_text(HELP_PAGE, encoding="utf-8")
    (tmp_path / "app.html").write_text(
        "<html><head><title>App</title></head><body><div id='root'></div>"
        + "<script>render('"
        + "x" * 5000
        + "')</script>" * 20
        + "<noscript>Enable JavaScript</noscript><nav>Home</nav></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "empty.html").write_bytes(b"")

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=HTML)
    reasons = {problem.file: problem.reason for problem in knowledge.problems}

    assert {d.source.split("#")[0] for d in knowledge.documents} == {"good.html"}
    assert "no text left once scripts, navigation" in reasons["app.html"]
    assert "empty.html" in reasons


def test_links_in_a_page_are_never_followed(tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("OUTSIDE-SECRET")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.html").write_text(
        f'<!DOCTYPE html [<!ENTITY x SYSTEM "file://{secret}">]><html><body><main>'
        f'<p>Hello &x;</p><iframe src="file://{secret}"></iframe>'
        f'<object data="file://{secret}"></object></main></body></html>',
        encoding="utf-8",
    )
    knowledge = load_knowledge_base(docs, extra_suffixes=HTML)
    assert "OUTSIDE-SECRET" not in "".join(d.text for d in knowledge.documents)


def test_a_documentation_fragment_reads_as_a_browser_shows_it(tmp_path: Path):
    """No ``<meta charset>`` (UTF-8 bytes), a hard-wrapped paragraph, a numbered list, and a
    Q/A entry on two source lines: as the Fossil project's help pages are written."""
    fragment = (
        "<div class='doc'>\n<h2 id='prep'>Repository Prep</h2>\n"
        "<p>Give it a much stronger password\nunder Admin → Users.</p>\n"
        "<ol><li>Run the audit.</li><li>Take it\nprivate.</li></ol>\n"
        "<p>Q: Is a server required?\nA: No, but it can be useful.</p>\n</div>\n"
    )
    (tmp_path / "server.html").write_bytes(fragment.encode("utf-8"))

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=HTML)
    chunks = chunk_documents(knowledge.documents, 500, 50)

    assert knowledge.documents[0].text.splitlines() == [
        "## Repository Prep",
        "",
        "Give it a much stronger password under Admin → Users.",
        "",
        "1. Run the audit.",
        "",
        "2. Take it private.",
        "",
        "Q: Is a server required?",
        "A: No, but it can be useful.",
    ]
    assert chunks[-1].metadata["answer"] == "No, but it can be useful."
