"""The console's own answers to a new user's slips: unknown chat commands and slots, plain help.

The search itself is replaced by a recorder (these tests are about what the console says and
whether it searches, not about retrieval), so no model loads.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rasa_context_retrieval import console
from rasa_context_retrieval.console import main
from tests.conftest import REPO_ROOT
from tests.test_preflight_check import write_assistant


class RecordingSession:
    """Stands in for ConsoleSession: records the questions instead of searching."""

    asked: list[str] = []

    def __init__(self, config_path: str, endpoints_path: str) -> None:
        self.slots: dict[str, Any] = {}
        self.events: list[Any] = []

    def connect(self) -> None:
        pass

    def set_slot(self, assignment: str) -> None:
        name, _, value = assignment.partition("=")
        self.slots[name] = value

    def set_metadata(self, assignment: str) -> None:
        pass

    async def ask(self, text: str, threshold: float | None = None) -> Any:
        RecordingSession.asked.append(text)
        raise SystemExit("searched")


@pytest.fixture
def assistant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    RecordingSession.asked = []
    monkeypatch.setattr(console, "ConsoleSession", RecordingSession)
    return write_assistant(tmp_path)


def run(assistant: Path, *arguments: str) -> int:
    return main(
        [
            "--config",
            str(assistant / "config.yml"),
            "--endpoints",
            str(assistant / "endpoints.yml"),
            *arguments,
        ]
    )


def test_an_unknown_slash_command_in_chat_is_not_searched(assistant, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("/foo\n/quit\n"))
    assert run(assistant, "chat") == 0
    output = capsys.readouterr().out
    assert "unknown command /foo" in output and "/slot name=value" in output
    assert RecordingSession.asked == []


def test_an_unknown_slot_name_is_a_warning_naming_the_known_slots(assistant, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("/slot prodct=savings\n/quit\n"))
    run(assistant, "chat", "--slot", "colour=red")
    err = capsys.readouterr().err
    assert "slot 'colour'" in err and "slot 'prodct'" in err
    assert "the configuration knows: product" in err


def test_a_known_slot_gives_no_warning(assistant, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("/quit\n"))
    run(assistant, "chat", "--slot", "product=savings")
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("command", [[], ["ask"], ["chat"], ["check"], ["index"], ["eval"]])
def test_help_is_plain_text_with_help_for_every_option(command: list[str], capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = capsys.readouterr().out
    assert "``" not in text and ":class:" not in text and ":mod:" not in text
    options = re.findall(r"^  (--?[\w-]+(?: [A-Z_:=]+)?)(.*)$", text, flags=re.MULTILINE)
    undocumented = [name for name, rest in options if not rest.strip()]
    # an option whose help is on the next line (long metavar) is followed by indented text
    lines = text.splitlines()
    for name in undocumented:
        index = next(i for i, line in enumerate(lines) if line.startswith(f"  {name}"))
        assert lines[index + 1].startswith(" " * 10), f"{name} has no help"


def test_quiet_console_keeps_the_lexical_index_builders_debug_lines_off_stderr():
    script = (
        "import logging\n"
        "from rasa_context_retrieval.console_logging import configure_console_logging\n"
        "configure_console_logging(verbose=False)\n"
        "import bm25s\n"
        "logging.getLogger('bm25s').debug('Building index from tokens')\n"
        "logging.getLogger('bm25s').warning('a real warning')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert "Building index" not in done.stderr
    assert "a real warning" in done.stderr


def write_cases(folder: Path, case: dict[str, Any]) -> Path:
    path = folder / "cases.yml"
    path.write_text(yaml.safe_dump({"cases": [case]}))
    return path


def test_an_eval_turn_yaml_reads_as_a_boolean_is_told_to_be_quoted(assistant, capsys):
    case = {"name": "confirm", "turns": [{"user": True}], "expected_sources": []}
    code = run(assistant, "eval", str(write_cases(assistant, case)))
    err = capsys.readouterr().err
    assert code == 1
    assert "quote it" in err and '"yes"' in err


def test_an_expected_filter_on_an_undeclared_field_is_a_mistake_in_the_case(assistant, capsys):
    case = {
        "name": "fees",
        "turns": [{"user": "What are the card fees?"}],
        "expected_sources": ["cards/credit-card-fees.md"],
        "expected_filter": 'eq("prodcut", "credit_card")',
    }
    code = run(assistant, "eval", str(write_cases(assistant, case)))
    err = capsys.readouterr().err
    assert code == 1
    assert "case 'fees'" in err and "['prodcut']" in err and "declared: product" in err
