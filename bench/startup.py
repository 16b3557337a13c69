"""Start-up time of ``rasa-context-retrieval ask`` against its floor: the embedding client + model.

Every console command has to import Rasa's embedding client and load the embedding model before
it can embed a question; that is the floor. What the console adds on top (reading the two YAML
files, importing the retrieval engine, loading the persisted index, planning and searching) is
the overhead this script measures. The goal is ``ask`` <= 1.2 x the floor.

Each round runs, as separate fresh processes and in rotating order (the machine's load drifts):
* floor: ``embedder_factory(<the embeddings: block of config.yml>)`` then one ``embed()`` call;
* ask: ``rasa-context-retrieval ask --json QUESTION`` (the index is built once beforehand);
* with ``--compare-with FOLDER``: the same ``ask`` in another copy of the repository, e.g. an
  earlier commit exported with ``git archive <commit> | tar -x -C FOLDER`` (same interpreter).

Prints a Markdown table (median and min wall seconds per variant, ratio of medians) plus the
slowest imports of one ``ask`` (``python -X importtime``).

Usage: ``python bench/startup.py --rounds 7``
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How do I share a folder?"
GOAL_RATIO = 1.2
FLOOR_PROGRAM = """
import sys
sys.path.insert(0, {root!r})
from rasa_context_retrieval.assistant import policy_config as _policy_config
from pathlib import Path
from rasa.core.policies.enterprise_search_policy_config import DEFAULT_EMBEDDINGS_CONFIG
from rasa.shared.utils.llm import embedder_factory
policy = _policy_config(Path({config!r}))
client = embedder_factory(dict(policy["embeddings"]), DEFAULT_EMBEDDINGS_CONFIG)
client.embed([{question!r}])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--config", default="config.yml")
    parser.add_argument("--endpoints", default="endpoints.yml")
    parser.add_argument("--compare-with", type=Path, help="another copy of the repository")
    args = parser.parse_args()
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    ask = [sys.executable, "-m", "addons", "--config", args.config, "--endpoints", args.endpoints]
    ask += ["ask", "--json", QUESTION]
    floor = [
        sys.executable,
        "-c",
        FLOOR_PROGRAM.format(root=str(REPO_ROOT), config=args.config, question=QUESTION),
    ]
    variants = {"floor": (floor, REPO_ROOT), "ask": (ask, REPO_ROOT)}
    if args.compare_with:
        variants["ask, compared copy"] = (ask, args.compare_with.resolve())
    for command, folder in list(variants.values())[1:]:
        index = [*command[:-3], "index"]
        subprocess.run(index, cwd=folder, env=environment, check=True, capture_output=True)
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for round_number in range(args.rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            command, folder = variants[name]
            times[name].append(_wall_seconds(command, folder, environment))
    _report(times, args.rounds)
    _slowest_imports(ask, environment)


def _wall_seconds(command: list[str], folder: Path, environment: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, env=environment, check=True, capture_output=True)
    return time.perf_counter() - started


def _report(times: dict[str, list[float]], rounds: int) -> None:
    floor = statistics.median(times["floor"])
    load = os.getloadavg()
    print(f"## Start-up of `python -m rasa_context_retrieval ask`, {rounds} rounds")
    print(
        f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{dt.date.today()}, load average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}"
    )
    print()
    print("| process | median s | min s | max s | median / floor |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"| {name} | {median:.2f} | {min(values):.2f} | {max(values):.2f} "
            f"| {median / floor:.2f} |"
        )
    ratio = statistics.median(times["ask"]) / floor
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    print()
    print(f"`ask` / floor, ratio of medians: **{ratio:.2f}** ({verdict} the {GOAL_RATIO} goal)")


def _slowest_imports(ask: list[str], environment: dict[str, str], shown: int = 12) -> None:
    done = subprocess.run(
        [ask[0], "-X", "importtime", *ask[1:]],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    top_level = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            top_level.append((int(parts[1]), parts[2].strip()))
    print()
    print(f"Slowest top-level imports of one `ask` (cumulative, first importer pays), top {shown}:")
    print()
    print("| module | seconds |")
    print("|---|---:|")
    for micros, module in sorted(top_level, reverse=True)[:shown]:
        print(f"| `{module}` | {micros / 1e6:.2f} |")


if __name__ == "__main__":
    main()
