"""What a pre-flight check found: one line per problem, each naming where it is and the fix.

Errors stop the console before Rasa or a model loads; warnings are printed and the command goes
on. The same list prints as text for people and as one JSON object for CI (``check --json``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem: where it is (a file and key) and a message that says how to fix it."""

    severity: Severity
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message}"


@dataclass
class CheckReport:
    """Every finding of one pass over the assistant's setup."""

    findings: list[Finding] = field(default_factory=list)

    def error(self, where: str, message: str) -> None:
        self.findings.append(Finding("error", where, " ".join(message.split())))

    def warning(self, where: str, message: str) -> None:
        self.findings.append(Finding("warning", where, " ".join(message.split())))

    @property
    def errors(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.severity == "warning"]

    @property
    def passed(self) -> bool:
        return not self.errors

    def as_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "errors": [asdict(finding) for finding in self.errors],
            "warnings": [asdict(finding) for finding in self.warnings],
        }

    def render(self) -> str:
        return "\n".join(str(finding) for finding in self.errors + self.warnings)
