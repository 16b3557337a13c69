"""The zip-bomb guard shared by every Office file (Word, Excel): checked before anything is parsed.

A .docx or .xlsx is a zip of XML files. Its members' declared unpacked size is compared with the
file's own size, so a file that would unpack to gigabytes is refused without unpacking it.
"""

from __future__ import annotations

import io
import zipfile

from rasa_context_retrieval.errors import ContextRetrievalError

MAX_UNPACKED_RATIO = 100
"""Unpacked size over packed size above which an Office file is refused as a zip bomb (real
Office files stay well under 20: XML compresses about 5-10 times)."""
MAX_UNPACKED_BYTES = 200 * 1024 * 1024


class OfficeZipRefused(ContextRetrievalError, ValueError):
    """Not a zip, or a zip bomb; the message is the one-line reason."""


def check_unpacked_size(raw: bytes) -> None:
    """Refuse an Office zip whose declared unpacked size is out of proportion.

    Raises:
        OfficeZipRefused: not a zip, or a zip bomb.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        raise OfficeZipRefused("corrupt or truncated Office file (not a valid zip)") from None
    if unpacked > MAX_UNPACKED_BYTES or unpacked > MAX_UNPACKED_RATIO * max(len(raw), 1):
        raise OfficeZipRefused(
            f"unpacks to {unpacked / 1e6:.0f} MB from {len(raw) / 1e6:.1f} MB, out of "
            "proportion (a zip bomb?); not read"
        )
