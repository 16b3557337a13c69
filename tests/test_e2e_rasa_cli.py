"""The example assistant trains and passes its Rasa e2e tests (tests/e2e) through the real CLI.

Every `rasa` CLI command checks for a Rasa Pro licence in RASA_LICENSE, so without one this test
is skipped. The model is trained into a temporary folder; the knowledge base is indexed by the
plugin itself when the e2e run first connects (into `.index`, as configured in endpoints.yml).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TRAIN_TIMEOUT_SECONDS = 30 * 60
E2E_TIMEOUT_SECONDS = 30 * 60


def _rasa(*arguments: str, timeout: int) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "RASA_TELEMETRY_ENABLED": "false",
    }
    return subprocess.run(
        [sys.executable, "-m", "rasa", *arguments],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,  # never an interactive licence prompt
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _tail(result: subprocess.CompletedProcess[str], lines: int = 60) -> str:
    return "\n".join((result.stdout + result.stderr).splitlines()[-lines:])


@pytest.mark.e2e
def test_example_assistant_trains_and_passes_its_e2e_tests(tmp_path: Path) -> None:
    if not os.environ.get("RASA_LICENSE"):
        pytest.skip("RASA_LICENSE is not set: rasa train and rasa test e2e need a Rasa Pro licence")
    model = tmp_path / "lumen-drive.tar.gz"

    trained = _rasa(
        "train",
        "--config",
        "config.yml",
        "--domain",
        "domain.yml",
        "--data",
        "data",
        "--endpoints",
        "endpoints.yml",
        "--out",
        str(tmp_path),
        "--fixed-model-name",
        "lumen-drive",
        timeout=TRAIN_TIMEOUT_SECONDS,
    )
    assert trained.returncode == 0, f"rasa train failed:\n{_tail(trained)}"
    assert model.is_file(), f"rasa train wrote no {model.name}:\n{_tail(trained)}"

    tested = _rasa(
        "test",
        "e2e",
        "tests/e2e",
        "--model",
        str(model),
        "--endpoints",
        "endpoints.yml",
        timeout=E2E_TIMEOUT_SECONDS,
    )
    output = tested.stdout + tested.stderr
    assert tested.returncode == 0, f"rasa test e2e failed:\n{_tail(tested, 120)}"
    assert " passed" in output and "FAILED " not in output, _tail(tested, 120)
