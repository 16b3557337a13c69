"""Glyph names and ligatures in a PDF's extracted text → the letters a reader sees.

A font can name its glyphs without saying which characters they are. TeX's Source Sans
(``sourcesanspro``, the font of pandoc's popular Eisvogel template) draws its figures with
glyphs named ``one.pnum`` (a proportional 1) and the "ft" of "After" with ``f_t``; ``pypdf``
cannot map those names and writes them as they are, so a manual read
``MPPT /one.pnum/two.pnum/one.pnum/zero.pnum HUS`` and ``A/f_ter``, and no search for "1210"
found it. The names follow the Adobe Glyph List rules (a base name, ``_`` between the letters
of a ligature, ``.`` before a variant suffix), which ``fontTools.agl`` reads. Typographic
ligature characters (``ﬀ`` in ``diﬀerent``) become their letters, as a person types them.
"""

from __future__ import annotations

import re

VARIANT_SUFFIXES = (
    *("pnum", "tnum", "onum", "lnum", "lf", "osf", "tf", "tosf"),  # figures
    *("sups", "subs", "sinf", "numr", "dnom"),  # superiors, inferiors, fractions
    *("sc", "smcp", "c2sc", "case", "alt", "swsh", "ital"),
)
"""Variant suffixes seen after a glyph's base name (``one.pnum``); listed, because a suffix is
followed by ordinary text with no separator (``/three.pnumD`` is "3D")."""
_SUFFIX = "|".join(sorted(VARIANT_SUFFIXES, key=len, reverse=True))
_GLYPH_NAME = re.compile(
    rf"/(?P<name>[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*(?:\.(?:{_SUFFIX}|ss\d\d|cv\d\d))+"
    r"|[A-Za-z](?:_[A-Za-z])+)"
)
"""A glyph name ``pypdf`` left in the text: a base name with a variant suffix, or a ligature of
single letters (``f_t``: its last letter is followed directly by the word's rest, ``er``)."""
LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
    | {"\ufb05": "st", "\ufb06": "st"}
)


def readable(text: str) -> str:
    """``text`` with glyph names the extractor could not map, and ligatures, as letters."""
    if "/" in text:
        text = _GLYPH_NAME.sub(_letters, text)
    return text.translate(LIGATURES)


def _letters(match: re.Match[str]) -> str:
    try:
        from fontTools.agl import toUnicode
    except ImportError:  # the office extra installs it; without it the name stays as read
        return match[0]
    letters = toUnicode(match["name"])
    return letters if letters and letters.isprintable() else match[0]
