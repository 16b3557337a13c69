"""``rasa-context-retrieval check``: the pre-flight report alone, for people and for CI."""

from __future__ import annotations

import json
import sys

from rasa_context_retrieval.preflight.findings import CheckReport


def report_check(report: CheckReport, as_json: bool) -> int:
    """Print the findings; 1 when any is an error (warnings alone pass)."""
    if as_json:
        print(json.dumps(report.as_json(), indent=2, ensure_ascii=False))
    else:
        if report.findings:
            print(report.render())
        errors, warnings = len(report.errors), len(report.warnings)
        verdict = "ok" if report.passed else "failed"
        print(f"check {verdict}: {errors} error(s), {warnings} warning(s)", file=sys.stderr)
    return 0 if report.passed else 1
