"""Tables of where a test run's CPU went, from the records of ``bench/suite_probe.py``.

    python bench/suite_cpu.py probe-folder [--top 40]

Prints, per pytest process: CPU before pytest configured it (interpreter and plugin imports),
collection, tests, and the rest; then the test files and the tests that took the most CPU of a
core (own + children waited for), and how much CPU tests in each size band took in all.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

BANDS = ((1.0, "over 1 s"), (0.1, "0.1 to 1 s"), (0.0, "under 0.1 s"))


def read_records(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        path.stem: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for path in sorted(folder.glob("*.jsonl"))
    }


def process_table(processes: dict[str, list[dict[str, Any]]]) -> list[str]:
    rows = [
        "| process | start-up | collection | tests | tests' children | after | total |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, records in processes.items():
        marks = {record["event"]: record for record in records if record["event"] != "test"}
        tests = [record for record in records if record["event"] == "test"]
        configured = marks.get("configured", {}).get("cpu", 0.0)
        collected = marks.get("collected", {}).get("cpu", configured)
        finished = marks.get("finished", {}).get("cpu", collected)
        in_tests = sum(record["cpu"] for record in tests)
        children = sum(record["children"] for record in tests)
        after = finished - collected - in_tests
        rows.append(
            f"| {name} | {configured:.1f} | {collected - configured:.1f} | {in_tests:.1f} | "
            f"{children:.1f} | {after:.1f} | {finished + children:.1f} |"
        )
    return rows


def heaviest(tests: list[dict[str, Any]], top: int) -> list[str]:
    by_file: dict[str, float] = defaultdict(float)
    for record in tests:
        by_file[record["nodeid"].split("::", 1)[0]] += record["cpu"] + record["children"]
    rows = ["| test file | CPU s |", "|---|---|"]
    rows += [
        f"| {name} | {cpu:.1f} |"
        for name, cpu in sorted(by_file.items(), key=lambda item: -item[1])[:top]
    ]
    rows += ["", "| test | CPU s | of it children | wall s |", "|---|---|---|---|"]
    ranked = sorted(tests, key=lambda record: -(record["cpu"] + record["children"]))
    for record in ranked[:top]:
        cpu = record["cpu"] + record["children"]
        rows.append(
            f"| {record['nodeid']} | {cpu:.2f} | {record['children']:.2f} | {record['wall']:.1f} |"
        )
    return rows


def bands(tests: list[dict[str, Any]]) -> list[str]:
    rows = ["| tests taking | count | CPU s |", "|---|---|---|"]
    for floor, label in BANDS:
        ceiling = next((f for f, _ in reversed(BANDS) if f > floor), float("inf"))
        chosen = [
            record for record in tests if floor <= record["cpu"] + record["children"] < ceiling
        ]
        total = sum(record["cpu"] + record["children"] for record in chosen)
        rows.append(f"| {label} | {len(chosen)} | {total:.1f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    processes = read_records(args.folder)
    tests = [
        record for records in processes.values() for record in records if record["event"] == "test"
    ]
    for block in (process_table(processes), bands(tests), heaviest(tests, args.top)):
        print("\n".join(block), end="\n\n")


if __name__ == "__main__":
    main()
