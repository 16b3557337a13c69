"""The channel's credentials: a bad entry stops start-up with one line saying how to fix it, and
the token checks it configures (expiry, leeway, audience) hold."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from rasa_context_retrieval.channels.credentials import channel_settings
from rasa_context_retrieval.channels.entitled_rest import EntitledRestInput
from rasa_context_retrieval.channels.verification_keys import CredentialsError

SECRET = "test-signing-secret-long-enough-for-hs256-0123456789"


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENTITLEMENTS_SECRET", SECRET)


def pem(key: Any) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def refusal(credentials: dict[str, Any]) -> str:
    with pytest.raises(CredentialsError) as error:
        EntitledRestInput.from_credentials(credentials)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_the_existing_credential_keys_keep_working() -> None:
    channel = EntitledRestInput.from_credentials(
        {"secret_env": "ENTITLEMENTS_SECRET", "entitlement_keys": ["plan", "tier"]}
    )
    assert channel.entitlement_keys == ("plan", "tier")
    assert [key.algorithm for key in channel.settings.verifier.keys] == ["HS256"]
    assert EntitledRestInput.from_credentials(None).entitlement_keys == ("plan",)


def test_a_missing_or_short_secret_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENTITLEMENTS_SECRET")
    assert "set the environment variable ENTITLEMENTS_SECRET" in refusal({})
    monkeypatch.setenv("SHORT", "x" * 31)
    assert "needs at least 32" in refusal({"secret_env": "SHORT"})
    monkeypatch.setenv("SHORT", "x" * 47)
    assert "HS384 needs at least 48" in refusal(
        {"keys": [{"secret_env": "SHORT", "algorithm": "HS384"}]}
    )


def test_a_misspelt_key_is_refused_rather_than_silently_ignored() -> None:
    message = refusal({"requier_exp": False})
    assert "`requier_exp` is not a known key" in message and "require_exp" in message
    assert "`keys.0.public_key` is not a known key" in refusal({"keys": [{"public_key": "k"}]})


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"keys": [{"id": "a"}]}, "exactly one of"),
        ({"keys": [{"secret_env": "ENTITLEMENTS_SECRET", "public_key_env": "X"}]}, "exactly one"),
        ({"keys": [{"secret_env": "ENTITLEMENTS_SECRET", "algorithm": "RS256"}]}, "HS256, HS384"),
        ({"keys": [{"public_key_file": "/nonexistent/key.pem"}]}, "fix `public_key_file`"),
        ({"keys": [{"public_key_env": "UNSET_PUBLIC_KEY"}]}, "UNSET_PUBLIC_KEY is empty"),
        ({"leeway_seconds": -1}, "`leeway_seconds`"),
        ({"anonymous": "allow"}, "`anonymous`"),
        ({"entitlement_keys": []}, "`entitlement_keys`"),
        (
            {"keys": [{"id": "a", "secret_env": "ENTITLEMENTS_SECRET"}] * 2},
            "share an `id`",
        ),
    ],
)
def test_a_bad_entry_stops_start_up_with_one_line_naming_the_fix(
    entry: dict[str, Any], expected: str
) -> None:
    assert expected in refusal(entry)


@pytest.mark.parametrize(
    ("entry", "decided"),
    [
        ({"client_metadata_keys": ["locale", "plan"]}, "plan"),
        ({"entitlement_keys": ["team", "plan"], "client_metadata_keys": ["team"]}, "team"),
        ({"client_metadata_keys": ["user_id"]}, "user_id"),
    ],
)
def test_a_client_metadata_key_the_token_decides_stops_start_up(
    entry: dict[str, Any], decided: str
) -> None:
    """A client can never set what the token decides: listing such a key is a mistake to fix,
    not a setting to ignore."""
    message = refusal(entry)
    assert f"`client_metadata_keys`: lists `{decided}`" in message
    assert "token" in message and "remove it" in message


def test_a_public_key_entry_refuses_a_private_key_a_weak_key_and_a_foreign_algorithm(
    tmp_path: Path,
) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (tmp_path / "private.pem").write_bytes(private_pem)
    assert "never its private key" in refusal(
        {"keys": [{"public_key_file": str(tmp_path / "private.pem")}]}
    )
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key()
    (tmp_path / "weak.pem").write_bytes(pem(weak))
    assert "1024 bits" in refusal({"keys": [{"public_key_file": str(tmp_path / "weak.pem")}]})
    (tmp_path / "rsa.pem").write_bytes(pem(private.public_key()))
    entry = {"public_key_file": str(tmp_path / "rsa.pem"), "algorithm": "HS256"}
    assert "RS256" in refusal({"keys": [entry]})


def test_an_ec_public_key_verifies_es256_tokens(tmp_path: Path) -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "ec.pem").write_bytes(pem(private.public_key()))
    settings = channel_settings({"keys": [{"public_key_file": str(tmp_path / "ec.pem")}]})
    token = jwt.encode({"sub": "e", "exp": int(time.time()) + 60}, private, algorithm="ES256")
    assert settings.verifier.bearer(f"Bearer {token}") is not None


def hs256(**claims: Any) -> str:
    return "Bearer " + jwt.encode({"sub": "u1", **claims}, SECRET, algorithm="HS256")


def test_a_token_without_exp_is_accepted_only_when_configured() -> None:
    assert channel_settings({}).verifier.bearer(hs256()) is None
    relaxed = channel_settings({"require_exp": False}).verifier
    assert relaxed.bearer(hs256()) is not None
    assert relaxed.bearer(hs256(exp=int(time.time()) - 60)) is None  # exp, when given, holds


def test_leeway_admits_a_token_that_expired_within_it_and_no_later() -> None:
    just_expired = hs256(exp=int(time.time()) - 10)
    assert channel_settings({}).verifier.bearer(just_expired) is None
    assert channel_settings({"leeway_seconds": 30}).verifier.bearer(just_expired) is not None
    long_expired = hs256(exp=int(time.time()) - 60)
    assert channel_settings({"leeway_seconds": 30}).verifier.bearer(long_expired) is None


def test_a_token_with_an_audience_is_refused_where_none_is_configured() -> None:
    """A token issued for another service cannot be replayed at a channel that names none."""
    exp = int(time.time()) + 60
    assert channel_settings({}).verifier.bearer(hs256(exp=exp, aud="other-service")) is None
    listed = channel_settings({"audience": ["help", "other-service"]}).verifier
    assert listed.bearer(hs256(exp=exp, aud="other-service")) is not None


def test_a_key_configured_without_an_id_verifies_tokens_whatever_kid_they_name() -> None:
    """An issuer that starts sending ``kid`` does not lock out a channel keyed by ``secret_env``;
    a key configured with an id verifies only tokens that name it or none."""
    exp = int(time.time()) + 60
    named = "Bearer " + jwt.encode(
        {"sub": "u1", "exp": exp}, SECRET, algorithm="HS256", headers={"kid": "2026-11"}
    )
    assert channel_settings({}).verifier.bearer(named) is not None
    other_id = {"keys": [{"id": "2026-05", "secret_env": "ENTITLEMENTS_SECRET"}]}
    assert channel_settings(other_id).verifier.bearer(named) is None
    assert channel_settings(other_id).verifier.bearer(hs256(exp=exp)) is not None
