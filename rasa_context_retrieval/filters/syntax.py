"""Metadata filters as text: LangChain's self-query filter syntax, printed and parsed.

The filter IR (``langchain_core.structured_query``) is what every stage passes around; the text
form, e.g. ``and(eq("plan", "premium"), gte("updated", "2024-03-01"))``, is what an LLM writes,
what debug logs show and what a developer types in the console. Parsing uses LangChain's own lark
grammar (``get_parser``) so that we read exactly what its query constructor produces; printing is
hand-written because LangChain has no printer for its IR.

The grammar has no escape sequences: the parser only strips the surrounding quotes. A string is
therefore printed in double quotes, or in single quotes when it contains a double quote or a line
break. A string that would need both (``'`` together with ``"``, a line break or a final
backslash), starts or ends with a quote, or merely starts with a date cannot be written and raises
``ValueError``. The grammar reads any quoted ``YYYY-MM-DD`` as a date value
``{"date": ..., "type": "date"}``, so a plain string that is exactly a date comes back as a date.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from langchain_core.structured_query import Comparison, FilterDirective, Operation, Operator
from lark import Lark
from lark.exceptions import LarkError

from rasa_context_retrieval.filters.bounds import check_filter, check_filter_text

# The grammar's DATE/DATETIME terminals outrank strings, so a quoted string beginning like this is
# lexed as a date, whatever follows it.
_DATE_PREFIX = re.compile(r"\d{4}-[01]\d-[0-3]\d")
_WHOLE_DATE = re.compile(r"\d{4}-[01]\d-[0-3]\d(T[0-2]\d:[0-5]\d:[0-5]\d[Zz]?)?")
_QUOTES = "\"'"

_parser: Lark | None = None


def _get_parser() -> Lark:
    # Building the LALR tables takes a few milliseconds; the parser holds no per-parse state.
    # Imported here, not at the top: importing the parser runs langchain_classic's
    # query_constructor package, which loads LangChain's chain and tracing machinery (seconds of
    # start-up), and only parsing (LLM answers, tests) needs it; printing filters does not.
    global _parser
    if _parser is None:
        from langchain_classic.chains.query_constructor.parser import get_parser

        _parser = get_parser()
    return _parser


def parse_filter(text: str) -> FilterDirective:
    """Parse one filter expression, e.g. ``eq("genre", "animated")``, into the filter IR.

    Raises:
        ValueError: if the text is not a single well-formed comparison or operation.
        FilterTooLarge: (a ValueError) if it passes the bounds of ``filters.bounds``.
    """
    check_filter_text(text)
    try:
        directive = _get_parser().parse(text)
    except (LarkError, ValueError, IndexError, TypeError) as error:
        raise ValueError(
            f"Cannot parse filter {text!r}: {error}. Expected a call such as "
            'and(eq("plan", "premium"), gt("price", 10)) with quoted attribute names.'
        ) from error
    if not isinstance(directive, FilterDirective):
        raise ValueError(f"Cannot parse filter {text!r}: it is a value, not a comparison.")
    check_filter(directive)
    return directive


def to_filter_syntax(directive: FilterDirective | None) -> str | None:
    """Print a filter in the self-query syntax that ``parse_filter`` reads back.

    ``None`` (no filter) prints as ``None``. An ``and``/``or`` with a single argument prints as
    that argument, as the parser would read it anyway.

    Raises:
        ValueError: if a value has no representation in the grammar (see module docstring).
    """
    if directive is None:
        return None
    if isinstance(directive, Comparison):
        return (
            f"{directive.comparator.value}({_string(directive.attribute)}, "
            f"{_value(directive.value)})"
        )
    if isinstance(directive, Operation):
        if directive.operator in (Operator.AND, Operator.OR) and len(directive.arguments) == 1:
            return to_filter_syntax(directive.arguments[0])
        arguments = ", ".join(str(to_filter_syntax(arg)) for arg in directive.arguments)
        return f"{directive.operator.value}({arguments})"
    raise ValueError(f"Cannot print filter node of type {type(directive).__name__}.")


def attributes_of(directive: FilterDirective | None) -> frozenset[str]:
    """Every attribute a filter names (comparisons and nested operations)."""
    if isinstance(directive, Comparison):
        return frozenset({directive.attribute})
    if isinstance(directive, Operation):
        return frozenset().union(*(attributes_of(argument) for argument in directive.arguments))
    return frozenset()


def conjoin(*directives: FilterDirective | None) -> FilterDirective | None:
    """AND of the given filters, skipping ``None``; nested ANDs are flattened, repeats dropped.

    Returns ``None`` when no filter is given and a single filter unchanged.
    """
    present = [directive for directive in directives if directive is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    arguments: list[FilterDirective] = []
    for directive in present:
        parts = (
            directive.arguments
            if isinstance(directive, Operation) and directive.operator == Operator.AND
            else [directive]
        )
        # a condition stated twice (a slot and an earlier turn that agree) is one condition
        arguments.extend(part for part in parts if part not in arguments)
    if len(arguments) == 1:
        return arguments[0]
    return Operation(operator=Operator.AND, arguments=arguments)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Cannot write the number {value!r} in the filter syntax.")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping) and value.get("type") in ("date", "datetime"):
        return _temporal(value)
    raise ValueError(f"Cannot write the value {value!r} in the filter syntax.")


def _temporal(value: Mapping[str, Any]) -> str:
    text = value.get(str(value["type"]))
    if not isinstance(text, str) or not _is_whole_date(text):
        raise ValueError(
            f"Cannot write the date value {value!r}: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[Z]."
        )
    return f'"{text}"'


def _string(text: str) -> str:
    if text and (text[0] in _QUOTES or text[-1] in _QUOTES):
        raise ValueError(f"Cannot write {text!r}: the grammar strips leading/trailing quotes.")
    if _DATE_PREFIX.match(text) and not _is_whole_date(text):
        raise ValueError(f"Cannot write {text!r}: the grammar reads its start as a date.")
    # The double-quoted terminal stops at a line break and treats a final backslash as an escape.
    if '"' not in text and "\n" not in text and not text.endswith("\\"):
        return f'"{text}"'
    if "'" not in text:
        return f"'{text}'"
    raise ValueError(
        f"Cannot write {text!r}: it contains a single quote and also a double quote, a line "
        "break or a final backslash, which only double quotes or only single quotes could carry."
    )


def _is_whole_date(text: str) -> bool:
    return _WHOLE_DATE.fullmatch(text) is not None
