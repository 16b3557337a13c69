"""The channel's entitlement keys against the store's ``access_filters``: both files at once.

The entitled REST channel (credentials.yml) writes each of its ``entitlement_keys`` into every
message's metadata from the verified token; the store's ``access_filters`` (endpoints.yml) read
entitlements under their keys. Neither file sees the other at run time, so a mismatch shows
only here:

* a key the store reads that the channel never sets is an error: no token can grant it, so no
  signed-in user reads the documents it guards, while the channel passes a key it does not set
  from the request body as the client wrote it, so any client can claim it;
* a key the channel sets that no access filter reads is a warning: most likely a misspelling
  of the key the store reads (which then grants nothing), else an entitlement left unused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rasa_context_retrieval.channels.credentials import token_metadata_keys
from rasa_context_retrieval.preflight.findings import CheckReport


def check_entitlement_keys(
    access_filters: Mapping[str, str],
    entitlement_keys: Sequence[str],
    endpoints_path: str,
    credentials_path: str,
    channel: str,
    report: CheckReport,
) -> None:
    """One finding per key set on one side and not read on the other (module docstring)."""
    set_by_channel = token_metadata_keys(entitlement_keys)
    listed = _listed(entitlement_keys)
    for key in access_filters:
        if key not in set_by_channel:
            report.error(
                f"{endpoints_path} vector_store.access_filters.{key}",
                f"reads the channel metadata key `{key}`, which the entitled channel in "
                f"{credentials_path} never sets (its entitlement_keys: {listed}): no token can "
                f"grant it, so no signed-in user reads the documents it guards, while any client "
                f"can claim it in the request body's metadata, which the channel passes on for "
                f"the keys it does not set; add `{key}` to entitlement_keys under {channel} in "
                f"{credentials_path}, or correct the key in access_filters",
            )
    read = _listed(list(access_filters)) if access_filters else "none"
    for key in entitlement_keys:
        if key not in access_filters:
            report.warning(
                f"{credentials_path} {channel} entitlement_keys",
                f"`{key}` is set on every message, but no access_filters key in "
                f"{endpoints_path} reads it (they read: {read}); if it is misspelt, correct "
                f"it, else add an access filter that reads it or remove it",
            )


def _listed(keys: Sequence[str]) -> str:
    return "[" + ", ".join(keys) + "]"
