"""The keys a token may be signed with, each bound to the one algorithm it verifies.

A shared secret verifies HMAC tokens only and a public key verifies its own family only, so a
token can never choose how it is checked (the "alg confusion" attacks: ``none``, or an RSA public
key used as an HMAC secret). Several keys can be configured at once to rotate them: a token that
names a key (``kid`` in its header) is checked against the key with that ``id`` and against keys
configured without one; a token that names none, against every key of its algorithm. Removing
a key from the configuration refuses every token it signed.

Keys are read once, at start-up, from environment variables or files, never from
``credentials.yml`` itself (it is usually versioned); every fault is a :class:`CredentialsError`
whose one line says how to fix it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from rasa_context_retrieval.errors import ContextRetrievalError

HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
RSA_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_ALGORITHMS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
HMAC_MINIMUM_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
"""RFC 7518 section 3.2: a secret at least as long as the hash output; shorter ones can be
guessed offline from any token."""
RSA_MINIMUM_BITS = 2048
NEW_SECRET_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(48))'"


class CredentialsError(ContextRetrievalError, ValueError):
    """The channel's ``credentials.yml`` entry cannot be used; the message says how to fix it."""


@dataclass(frozen=True)
class VerificationKey:
    """One key, the single algorithm it verifies, and the ``kid`` tokens name it by (if any)."""

    key_id: str | None
    algorithm: str
    material: Any
    """The secret as bytes, or a ``cryptography`` public key object."""

    def verifies(self, key_id: Any, algorithm: Any) -> bool:
        """Whether a token with this header is checked against this key."""
        named = key_id is None or self.key_id is None or key_id == self.key_id
        return named and algorithm == self.algorithm


def shared_secret(env: str, key_id: str | None, algorithm: str | None) -> VerificationKey:
    """An HMAC secret from the environment variable ``env``."""
    chosen = algorithm or "HS256"
    if chosen not in HMAC_ALGORITHMS:
        raise CredentialsError(
            f"a shared secret ({env}) verifies {', '.join(HMAC_ALGORITHMS)} only, not {chosen}: "
            "fix `algorithm` or give a public key instead"
        )
    secret = os.environ.get(env, "").encode("utf-8")
    if not secret:
        raise CredentialsError(
            f"EntitledRestInput needs a signing secret: set the environment variable {env} "
            f"(see `secret_env`), e.g. to the output of {NEW_SECRET_HINT}"
        )
    if len(secret) < HMAC_MINIMUM_BYTES[chosen]:
        raise CredentialsError(
            f"the signing secret in {env} is {len(secret)} bytes; {chosen} needs at least "
            f"{HMAC_MINIMUM_BYTES[chosen]}: use e.g. the output of {NEW_SECRET_HINT}"
        )
    return VerificationKey(key_id, chosen, secret)


def public_key(
    pem: bytes, origin: str, key_id: str | None, algorithm: str | None
) -> VerificationKey:
    """An RSA or EC public key in PEM form; ``origin`` names where it came from for errors."""
    try:
        loaded = load_pem_public_key(pem)
    except (ValueError, TypeError):
        raise CredentialsError(
            f"{origin} does not hold a PEM public key (-----BEGIN PUBLIC KEY-----): "
            "export the issuer's public key, never its private key"
        ) from None
    if isinstance(loaded, rsa.RSAPublicKey):
        if loaded.key_size < RSA_MINIMUM_BITS:
            raise CredentialsError(
                f"the RSA key in {origin} has {loaded.key_size} bits; "
                f"use one of at least {RSA_MINIMUM_BITS}"
            )
        return VerificationKey(key_id, _within(algorithm, RSA_ALGORITHMS, origin), loaded)
    if isinstance(loaded, ec.EllipticCurvePublicKey) and loaded.curve.name in EC_ALGORITHMS:
        allowed = (EC_ALGORITHMS[loaded.curve.name],)
        return VerificationKey(key_id, _within(algorithm, allowed, origin), loaded)
    raise CredentialsError(
        f"the public key in {origin} is neither RSA nor an EC key on P-256, P-384 or P-521: "
        "give one of those"
    )


def public_key_from_file(path: Path, key_id: str | None, algorithm: str | None) -> VerificationKey:
    try:
        pem = path.read_bytes()
    except OSError as error:
        raise CredentialsError(
            f"cannot read the public key file {path} ({error.strerror}): fix `public_key_file`"
        ) from None
    return public_key(pem, f"the file {path}", key_id, algorithm)


def public_key_from_env(env: str, key_id: str | None, algorithm: str | None) -> VerificationKey:
    pem = os.environ.get(env, "")
    if not pem.strip():
        raise CredentialsError(
            f"the environment variable {env} is empty: set it to the issuer's PEM public key "
            "(see `public_key_env`)"
        )
    return public_key(pem.encode("utf-8"), f"the environment variable {env}", key_id, algorithm)


def _within(algorithm: str | None, allowed: Sequence[str], origin: str) -> str:
    chosen = algorithm or allowed[0]
    if chosen not in allowed:
        raise CredentialsError(
            f"the key in {origin} verifies {', '.join(allowed)}, not {chosen}: fix `algorithm`"
        )
    return chosen
