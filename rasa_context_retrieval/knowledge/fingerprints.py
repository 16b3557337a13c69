"""One rule for the fingerprint of whatever decides a cached artifact's contents.

An index folder, an ONNX export and the identity of an embedding model are each reused only while
the settings that made them are unchanged. Each names those settings as a JSON-able mapping; its
fingerprint is the SHA-256 of that mapping written canonically (sorted keys), so equal settings
always give equal fingerprints, in any process, and any change gives a new one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def settings_fingerprint(settings: Mapping[str, Any], length: int | None = None) -> str:
    """Hex SHA-256 of ``settings`` as canonical JSON, cut to ``length`` characters if given."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
    return digest if length is None else digest[:length]
