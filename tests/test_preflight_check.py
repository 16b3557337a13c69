"""A new assistant's first hour: every setup mistake is reported at once, before Rasa or a model.

Each test writes a small bank help-centre assistant (config.yml, endpoints.yml, documents with
front matter), makes one mistake a new user makes, and runs the console's ``check`` command (or
another command) the way a user does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rasa_context_retrieval.console import main
from tests.conftest import REPO_ROOT

STORE_CLASS = "rasa_context_retrieval.ContextRetrieval"
DOCUMENTS = {
    "cards/credit-card-fees.md": "---\nproduct: credit_card\ntitle: Fees\n---\nQ: Fee?\nA: No.",
    "cards/debit-card.md": "---\nproduct: debit_card\n---\nQ: Abroad?\nA: Yes, everywhere.",
    "savings/easy-access.md": "---\nproduct: savings\n---\nQ: Rate?\nA: 3 percent.",
}


def write_assistant(
    folder: Path,
    store: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    documents: dict[str, str] | None = None,
) -> Path:
    """A valid assistant; ``store`` and ``policy`` override keys of the two blocks."""
    for name, text in (documents or DOCUMENTS).items():
        (folder / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "docs" / name).write_text(text)
    vector_store = {
        "type": STORE_CLASS,
        "docs": str(folder / "docs"),
        "index_path": str(folder / ".index"),
        "slot_filters": {"product": "product"},
        "metadata_fields": [
            {
                "name": "product",
                "type": "string",
                "values": ["credit_card", "debit_card", "savings"],
            }
        ],
        **(store or {}),
    }
    search_policy = {
        "name": "EnterpriseSearchPolicy",
        "vector_store": {"type": STORE_CLASS},
        "use_generative_llm": False,
        **(policy or {}),
    }
    (folder / "config.yml").write_text(yaml.safe_dump({"policies": [search_policy]}))
    (folder / "endpoints.yml").write_text(yaml.safe_dump({"vector_store": vector_store}))
    return folder


def check(folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(
        [
            "--config",
            str(folder / "config.yml"),
            "--endpoints",
            str(folder / "endpoints.yml"),
            "--credentials",
            str(folder / "credentials.yml"),
            "check",
            *extra,
        ]
    )
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_valid_assistant_passes_with_no_findings(tmp_path: Path, capsys):
    code, output = check(write_assistant(tmp_path), capsys)
    assert code == 0
    assert "0 error(s), 0 warning(s)" in output


def test_a_slot_filter_on_a_misspelt_attribute_is_an_error_naming_it(tmp_path: Path, capsys):
    code, output = check(
        write_assistant(tmp_path, {"slot_filters": {"product": "prodcut"}}), capsys
    )
    assert code == 1
    assert "slot_filters.product" in output and "'prodcut'" in output
    assert "known attributes: product, title" in output


def test_an_access_filter_on_an_attribute_nothing_has_is_an_error(tmp_path: Path, capsys):
    code, output = check(write_assistant(tmp_path, {"access_filters": {"tier": "teir"}}), capsys)
    assert code == 1
    assert "access_filters.tier" in output and "'teir'" in output


def test_a_misspelt_class_name_in_vector_store_type_is_an_error(tmp_path: Path, capsys):
    folder = write_assistant(tmp_path, {"type": "rasa_context_retrieval.ContextRetreival"})
    code, output = check(folder, capsys)
    assert code == 1
    assert "vector_store.type" in output and "'ContextRetreival'" in output


def test_a_misspelt_module_in_the_policy_class_path_is_an_error(tmp_path: Path, capsys):
    folder = write_assistant(tmp_path, policy={"vector_store": {"type": "adons.store.MyStore"}})
    code, output = check(folder, capsys)
    assert code == 1
    assert "config.yml vector_store.type" in output and "no module 'adons.store'" in output


def test_a_subclass_in_the_assistants_own_package_is_followed_to_its_base(
    tmp_path: Path, capsys, monkeypatch
):
    package = tmp_path / "bank_addons"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "store.py").write_text(
        "from rasa_context_retrieval import ContextRetrieval\n\n"
        "class BankStore(ContextRetrieval):\n    pass\n\nclass Helper:\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    good = write_assistant(tmp_path, {"type": "bank_addons.store.BankStore"})
    assert check(good, capsys)[0] == 0
    bad = write_assistant(tmp_path, {"type": "bank_addons.store.Helper"})
    code, output = check(bad, capsys)
    assert code == 1 and "InformationRetrieval" in output


def test_lean_result_metadata_with_extractive_answers_is_an_error(tmp_path: Path, capsys):
    code, output = check(write_assistant(tmp_path, {"result_metadata": "lean"}), capsys)
    assert code == 1
    assert "use_generative_llm" in output and "answer_key_missing_in_metadata" in output


def test_lean_result_metadata_with_generative_answers_passes(tmp_path: Path, capsys):
    folder = write_assistant(tmp_path, {"result_metadata": "lean"}, {"use_generative_llm": True})
    assert check(folder, capsys)[0] == 0


def test_outside_the_assistants_folder_it_says_which_option_to_pass(tmp_path: Path, capsys):
    code, output = check(tmp_path, capsys)
    assert code == 1
    assert "no endpoints.yml here" in output and "--endpoints" in output
    assert "no config.yml here" in output and "--config" in output
    assert "has no vector_store" not in output


def test_misspelt_front_matter_keys_are_a_warning_with_the_files(tmp_path: Path, capsys):
    documents = {**DOCUMENTS, "cards/lost.md": "---\nprodcut: credit_card\n---\nQ: Lost?\nA: Call."}
    code, output = check(write_assistant(tmp_path, documents=documents), capsys)
    assert code == 0
    assert "warning" in output and "'prodcut'" in output and "cards/lost.md" in output


def test_a_declared_value_no_document_has_is_a_warning_listing_the_present_ones(
    tmp_path: Path, capsys
):
    fields = [{"name": "product", "type": "string", "values": ["credit_card", "premuim"]}]
    code, output = check(write_assistant(tmp_path, {"metadata_fields": fields}), capsys)
    assert code == 0
    assert "'premuim' is in no document" in output
    assert "credit_card, debit_card, savings" in output


def test_every_mistake_is_in_one_report_and_json_exits_non_zero(tmp_path: Path, capsys):
    store = {"slot_filters": {"product": "prodcut"}, "result_metadata": "lean", "top_k": 0}
    folder = write_assistant(tmp_path, store, {"vector_store": {"type": "nowhere.Store"}})
    code, output = check(folder, capsys, "--json")
    report = json.loads(output[: output.rindex("}") + 1])
    assert code == 1 and report["passed"] is False
    wheres = " ".join(error["where"] for error in report["errors"])
    assert "vector_store.top_k" in wheres and "config.yml vector_store.type" in wheres


def test_a_broken_entitled_channel_entry_in_credentials_is_an_error(tmp_path: Path, capsys):
    folder = write_assistant(tmp_path)
    channel = "rasa_context_retrieval.channels.entitled_rest.EntitledRestInput"
    entry = {"entitlement_keys": ["plan"], "requier_exp": True}
    (folder / "credentials.yml").write_text(yaml.safe_dump({channel: entry}))
    code, output = check(folder, capsys)
    assert code == 1
    assert "requier_exp" in output and "credentials.yml" in output


def test_a_configuration_error_stops_ask_before_rasa_or_a_model_is_imported(tmp_path: Path):
    folder = write_assistant(tmp_path, {"slot_filters": {"product": "prodcut"}})
    script = (
        "import sys\nfrom rasa_context_retrieval.console import main\n"
        f"code = main(['--config', {str(folder / 'config.yml')!r}, '--endpoints', "
        f"{str(folder / 'endpoints.yml')!r}, 'ask', 'What fees?'])\n"
        "heavy = [m for m in ('rasa.core', 'rasa.shared.utils.llm', 'torch', "
        "'sentence_transformers') if m in sys.modules]\n"
        "print('exit', code, 'heavy', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert "exit 1 heavy []" in done.stdout, done.stdout + done.stderr
    assert "'prodcut'" in done.stderr


def test_a_class_a_package_re_exports_with_a_relative_import_is_found(
    tmp_path: Path, capsys, monkeypatch
):
    package = tmp_path / "bank_store"
    package.mkdir()
    (package / "__init__.py").write_text("from .retrieval import BankStore\n")
    (package / "retrieval.py").write_text(
        "from rasa_context_retrieval import ContextRetrieval\n\n"
        "class BankStore(ContextRetrieval):\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    code, output = check(write_assistant(tmp_path, {"type": "bank_store.BankStore"}), capsys)
    assert code == 0, output


def test_reading_a_large_knowledge_base_shows_progress_and_a_small_one_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = write_assistant(tmp_path / "small")
    assert "Reading documents" not in check(small, capsys)[1]
    many = {
        f"faq/entry-{n}.md": f"---\nproduct: savings\n---\nQ: Rate {n}?\nA: {n}."
        for n in range(250)
    }
    large = write_assistant(tmp_path / "large", documents={**DOCUMENTS, **many})
    code, output = check(large, capsys)
    assert code == 0
    assert "Reading documents" in output and "253/253" in output


def test_the_check_reads_the_documents_as_the_index_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key that only looks like an access attribute makes the index refuse the document; the
    check reads it the same way, so it reports no attribute that the index would never see."""
    documents = {**DOCUMENTS, "savings/bonus.md": "---\nPlan: premium\n---\nQ: Bonus?\nA: Yes."}
    folder = write_assistant(
        tmp_path,
        {
            "access_filters": {"plan": "plan"},
            "metadata_fields": [{"name": "plan", "type": "string"}],
        },
        documents=documents,
    )
    code, output = check(folder, capsys)
    assert code == 0
    assert "documents carry attribute 'Plan'" not in output
    assert "savings/bonus.md:" in output and "not indexed" in output
