"""Read the assistant's files as plain YAML and check each, collecting every finding."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rasa_context_retrieval.channels.credentials import channel_credentials, channel_settings
from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.preflight.class_path import ClassPathError, check_class_path
from rasa_context_retrieval.preflight.documents import check_documents
from rasa_context_retrieval.preflight.entitlement_keys import check_entitlement_keys
from rasa_context_retrieval.preflight.findings import CheckReport
from rasa_context_retrieval.result_metadata import ANSWER, FULL

POLICY_NAME = "EnterpriseSearchPolicy"
DEFAULT_CREDENTIALS = "credentials.yml"
CHANNEL_PATH = "rasa_context_retrieval.channels.entitled_rest.EntitledRestInput"
"""The entitled REST channel's key in credentials.yml (named, not imported: it imports Rasa)."""
_ENV_REFERENCE = re.compile(r"\$\{([^}]+)\}")


@dataclass
class AssistantSetup:
    """What the check read: the validated store config (when valid) and the policy block."""

    report: CheckReport = field(default_factory=CheckReport)
    policy: dict[str, Any] = field(default_factory=dict)
    config: StoreConfig | None = None


def check_assistant(
    config_path: str,
    endpoints_path: str,
    credentials_path: str | None = DEFAULT_CREDENTIALS,
    read_documents: bool = True,
) -> AssistantSetup:
    """Every problem of the setup in one report; nothing heavy is imported or loaded."""
    setup = AssistantSetup()
    report = setup.report
    policy_file = _read_yaml(Path(config_path), "--config", report)
    if policy_file is not None:
        setup.policy = _policy(policy_file, config_path, report)
        _check_embeddings(setup.policy, config_path, report)
    endpoints = _read_yaml(Path(endpoints_path), "--endpoints", report)
    block = _vector_store(endpoints, endpoints_path, report) if endpoints is not None else None
    types = [
        (config_path, (setup.policy.get("vector_store") or {}).get("type")),
        (endpoints_path, (block or {}).get("type")),
    ]
    for where, dotted in types:
        if isinstance(dotted, str):
            try:
                check_class_path(dotted)
            except ClassPathError as error:
                report.error(f"{where} vector_store.type", str(error))
    if block is not None:
        setup.config = _store_config(block, endpoints_path, report)
    if setup.config is not None:
        _check_combinations(setup.config, setup.policy, config_path, report)
        if read_documents:
            check_documents(setup.config, report, endpoints_path)
    entitlement_keys = (
        _check_credentials(Path(credentials_path), report) if credentials_path else None
    )
    if entitlement_keys is not None and setup.config is not None:
        check_entitlement_keys(
            setup.config.access_filters,
            entitlement_keys,
            endpoints_path,
            str(credentials_path),
            CHANNEL_PATH,
            report,
        )
    return setup


def _read_yaml(path: Path, option: str, report: CheckReport) -> dict[str, Any] | None:
    if not path.is_file():
        report.error(
            str(path),
            f"no {path.name} here; run the command in the assistant's folder or pass {option}",
        )
        return None
    try:
        loaded = yaml.safe_load(_with_environment(path.read_text(encoding="utf-8"), path, report))
    except yaml.YAMLError as error:
        report.error(str(path), f"is not valid YAML: {' '.join(str(error).split())}")
        return None
    if not isinstance(loaded, dict):
        report.error(str(path), "must be a YAML mapping of top-level keys")
        return None
    return loaded


def _with_environment(text: str, path: Path, report: CheckReport) -> str:
    """``${NAME}`` replaced by the environment variable, as Rasa reads its YAML files."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            report.error(str(path), f"environment variable {name} is not set; export it")
            return match.group(0)
        return os.environ[name]

    return _ENV_REFERENCE.sub(value, text)


def _policy(config: dict[str, Any], where: str, report: CheckReport) -> dict[str, Any]:
    for policy in config.get("policies") or []:
        if isinstance(policy, dict) and policy.get("name") == POLICY_NAME:
            return policy
    report.error(where, f"has no {POLICY_NAME} under policies:; add it")
    return {}


def _check_embeddings(policy: dict[str, Any], where: str, report: CheckReport) -> None:
    from rasa_context_retrieval.assistant import check_local_model

    try:
        check_local_model(dict(policy.get("embeddings") or {}))
    except ValueError as error:
        report.error(where, str(error))


def _vector_store(
    endpoints: dict[str, Any], where: str, report: CheckReport
) -> dict[str, Any] | None:
    block = endpoints.get("vector_store")
    if not isinstance(block, dict):
        report.error(where, "has no vector_store: block; add one with at least `docs: <folder>`")
        return None
    return block


def _store_config(block: dict[str, Any], where: str, report: CheckReport) -> StoreConfig | None:
    kwargs = {key: value for key, value in block.items() if key != "type"}
    try:
        return StoreConfig.from_kwargs(kwargs)
    except ConfigurationError as error:
        lines = str(error).splitlines()
        for line in lines[1:] or lines:
            key, _, message = line.strip().partition(": ")
            report.error(f"{where} {key}", message or key)
        return None


def _check_combinations(
    config: StoreConfig, policy: dict[str, Any], where: str, report: CheckReport
) -> None:
    """What the store cannot see under ``rasa run``: config.yml's answer mode."""
    extractive = policy.get("use_generative_llm") is False
    choice = config.result_metadata
    if extractive and choice != FULL and (not isinstance(choice, tuple) or ANSWER not in choice):
        report.error(
            f"{where} use_generative_llm",
            f"is false (extractive answers read each result's `answer`), but "
            f"vector_store.result_metadata `{choice if isinstance(choice, str) else list(choice)}` "
            "drops it, so every answer fails with answer_key_missing_in_metadata; set "
            "result_metadata: full (or list `answer`), or use_generative_llm: true",
        )


def _check_credentials(path: Path, report: CheckReport) -> tuple[str, ...] | None:
    """The entitled channel's entry checked; its entitlement keys when it is there and valid
    (even with a signing secret missing from this environment), else ``None``."""
    if not path.is_file():
        return None  # no credentials.yml: the entitled channel is not used
    credentials = _read_yaml(path, "--credentials", report)
    if not credentials or CHANNEL_PATH not in credentials:
        return None
    try:
        channel_settings(credentials[CHANNEL_PATH])
    except ValueError as error:
        report.error(f"{path} {CHANNEL_PATH}", str(error))
    try:
        return tuple(channel_credentials(credentials[CHANNEL_PATH]).entitlement_keys)
    except ValueError:
        return None  # reported above
