"""The zip-bomb guard shared by every Office file (Word, PowerPoint, Excel): checked before
anything is parsed, and before the optional library that reads the file is imported.

A .docx or .xlsx is a zip of XML files. Its members' declared unpacked size is compared with the
file's own size, so a file that would unpack to gigabytes is refused without unpacking it.
"""

from __future__ import annotations

import importlib
import io
import zipfile
from types import ModuleType

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


def missing_extra(reading: str) -> str:
    """The one-line message for a format whose library (the ``office`` extra) is not installed."""
    return (
        f"reading {reading} needs the 'office' extra: pip install 'rasa-context-retrieval[office]'"
    )


def office_library(
    raw: bytes, library: str, reading: str, unreadable: type[ContextRetrievalError]
) -> ModuleType:
    """The library that parses ``raw`` (e.g. ``docx``), once ``raw`` passed the zip checks.

    Imported here, on first use, so that an assistant without the ``office`` extra starts and
    reads its other formats; every Office reader refuses a bad zip and a missing library alike.

    Raises:
        unreadable: the file is not a zip or is a zip bomb, or ``library`` is not installed.
    """
    try:
        check_unpacked_size(raw)
    except OfficeZipRefused as refused:
        raise unreadable(str(refused)) from None
    try:
        return importlib.import_module(library)
    except ImportError:
        raise unreadable(missing_extra(reading)) from None
