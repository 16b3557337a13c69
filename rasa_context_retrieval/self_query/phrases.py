"""The English words that turn a mention into a filter, kept in one place to read and extend.

The rule-based self-query constructor decides from the words around a value or a number whether
the user is narrowing the search ("for Android", "under $20") or just talking ("contact us",
"error 404"). These lists are that judgement; the extractors only apply them. All entries are
lower case; every list is matched as whole words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Common English words that are also typical metadata values. Such a value is only a filter when
# something marks it as one: a scope noun after it ("free plan", "US customers"), its field's name,
# a capital letter mid-sentence ("on Plus") or a marked neighbour ("free or plus plans").
EVERYDAY_WORDS = frozenset(
    [
        "us",
        "it",
        "me",
        "free",
        "plus",
        "pro",
        "basic",
        "standard",
        "business",
        "personal",
        "home",
        "family",
        "team",
        "general",
        "other",
        "all",
        "any",
        "none",
        "new",
        "old",
        "data",
        "files",
        "help",
        "support",
        "access",
        "account",
    ]
)

# Nouns that, right after a value, say "this value scopes the question": "premium tier",
# "android users", "eu customers". Field names are added per schema.
SCOPE_NOUNS = frozenset(
    [
        "tier",
        "tiers",
        "plan",
        "plans",
        "edition",
        "editions",
        "subscription",
        "subscriptions",
        "subscriber",
        "subscribers",
        "user",
        "users",
        "customer",
        "customers",
        "member",
        "members",
        "account",
        "accounts",
        "app",
        "apps",
        "client",
        "clients",
        "version",
        "versions",
        "device",
        "devices",
        "phone",
        "phones",
        "region",
        "regions",
        "platform",
        "platforms",
        "based",
        "only",
        "package",
    ]
)

# Field names that say "my values are topics" (what a question is about, not whom or where it
# applies to). Ranking already handles topics; filtering on a topic word ("sync on android" when
# the answer is filed under troubleshooting) would hide the answer. Such values need their field
# named ("in the billing category").
TOPIC_FIELD_WORDS = frozenset(
    ["category", "categories", "topic", "topics", "section", "sections", "type", "kind", "tag"]
)

# Words that announce a value's field as strongly as its name does, for topic fields.
TOPIC_ANCHOR_WORDS = ("category", "section", "topic", "docs", "articles")

# Words that negate what follows them, for values and booleans alike: "not", "nothing" (not
# "nothing but"), "isn't", "except", "excluding", "without", "with no", "other than", "apart
# from", "outside", "anything but", "anyone but", "anywhere but", "any language but", "don't
# want", "didn't like".
NEGATORS = (
    r"not|never|no\s+longer|nothing(?!\s+but\b)|cannot|\w+n['’]t|(?:is|are|was|were|ca|do|does|did|wo|has|have)nt"
    r"|except(?:\s+for)?|excluding|exclude|without|with\s+no|other\s+than|apart\s+from"
    r"|outside(?:\s+of)?|(?:(?:any|every)(?:thing|one|body|where)?|all)(?:\s+[a-z]+)?\s+but"
    r"|but\s+not"
    r"|(?:(?:do|does|did)\s+not|\w+n['’]?t)\s+(?:want|like|need|enjoy)"
)
# "non-premium", "non vegetarian": the prefix form of a negation.
NEGATING_PREFIX = r"\bnon\s*-?\s*"

# A negator directly before a value, optionally followed by prepositions and articles, or by a
# participle and its preposition: "not on Android", "except the enterprise tier", "non-premium",
# "not directed by Greta Gerwig", "isn't made by Apple", "not under the GPL", "not written in
# Python", "not available in English", "aren't dramas", "I don't want horror", "outside
# finance", and "no" right before it ("but no politics"). "never been to Rome" is where the
# user has been, not a participle that describes documents. Other words in between ("not working
# on android") break it on purpose: that is a question about Android.
PREPOSITIONS = r"on|in|at|to|of|for|from|with|under|within|using|via|by|about|as"
NEGATION_BEFORE_VALUE = re.compile(
    rf"(?:\b(?:{NEGATORS})\s+(?:(?:{PREPOSITIONS}|the|a|an|any|my|our"
    rf"|(?:(?!been\b)\w+(?:ed|en|able|ible)|made)\s+(?:{PREPOSITIONS}))\s+){{0,2}}"
    rf"|{NEGATING_PREFIX}"
    r"|\bno\s+)$",
    re.IGNORECASE,
)

# Nouns for the things a knowledge base holds. A topic value right before one of them ("python
# articles", "comedy films") names what the user wants; the schema adds its own (the noun its
# field descriptions talk about, as "movie" in "The year the movie was released").
ITEM_NOUNS = frozenset(
    [
        "article",
        "blog",
        "doc",
        "document",
        "tutorial",
        "movie",
        "film",
        "episode",
        "video",
        "book",
        "story",
        "recipe",
        "song",
        "album",
        "product",
        "item",
    ]
)
# Nouns that are everyday verbs in the singular ("show me", "read", "post"): plural only.
PLURAL_ITEM_NOUNS = frozenset(
    ["posts", "reads", "shows", "series", "guides", "pages", "papers", "models", "deals", "offers"]
)

# Words right before a topic value that say "this is what I want": "a thriller", "any
# smartwatch", "which monitor", "articles about python".
DETERMINERS_BEFORE_TOPIC = re.compile(
    r"(?:\b(?:a|an|any|which|some|another|about|regarding)|\b(?:anything|something|stuff)\s+on)\s+$",
    re.IGNORECASE,
)

# A clause that sets values side by side to explain them ("What's the difference between a gravel
# and a road frame?"): a question about the values, not a filter. ("Compare the top 5
# smartwatches" is a wish for smartwatches.)
CONCEPT_QUESTION_BEFORE = re.compile(r"\bdifferences?\s+between\b[^,.;!?]*$", re.IGNORECASE)

# Words directly before a value that belong to the filter phrase and go when it is stripped.
CUE_BEFORE_VALUE = re.compile(
    r"\b(?:(?:only|just|not|except(?:\s+for)?|excluding|without|other\s+than|apart\s+from)\s+)?"
    r"(?:(?:for|on|in|with|using|via|from)\s+)?(?:the\s+)?$",
    re.IGNORECASE,
)

# What joins values of one field into one list: "android and ios", "free, plus or premium".
COORDINATION = re.compile(r"\s*(?:,|/|&|\band\b|\bor\b|\bnor\b)(?:\s*(?:and|or)\b)?\s*(?:the\s+)?")

# Words for "money" in front of or behind a number.
CURRENCY_SYMBOLS = "$€£"
CURRENCY_WORDS = tuple(
    ["usd", "eur", "gbp", "dollars", "dollar", "euros", "euro", "pounds", "bucks", "quid"]
)

# Field name or description words that make a numeric field monetary, and the words a user uses
# for money, which then count as that field's cues.
MONETARY_FIELD_WORDS = frozenset(
    ["price", "cost", "fee", "usd", "eur", "gbp", "dollar", "euro", "amount", "charge", "money"]
)
MONETARY_CUES = frozenset(
    ["currency", "price", "cost", "pay", "cheap", "expensive", "fee", "charge", "priced"]
)

# Spellings of a period that all mean one cue word: "a month", "/mo", "monthly".
PERIOD_WORDS = {
    "month": "month",
    "mo": "month",
    "monthly": "month",
    "year": "year",
    "yr": "year",
    "yearly": "year",
    "annually": "year",
    "annual": "year",
    "week": "week",
    "weekly": "week",
    "day": "day",
    "daily": "day",
}

# Units a duration may be said or kept in ("90 minutes", "Total cooking time in minutes"), with
# their length in seconds. A month or a year has no fixed length in seconds: it converts only to
# itself and to the other (a year is twelve months, "a year or less" on a term kept in months).
TIME_UNIT_SECONDS: dict[str, int | None] = {
    "second": 1,
    "minute": 60,
    "hour": 3_600,
    "day": 86_400,
    "week": 604_800,
    "month": None,
    "year": None,
}
MONTHS_IN = {"month": 1, "year": 12}
# Every spelling of those units.
TIME_UNIT_WORDS = {
    **{unit: unit for unit in TIME_UNIT_SECONDS},
    **{unit + "s": unit for unit in TIME_UNIT_SECONDS},
    **dict.fromkeys(["sec", "secs"], "second"),
    **dict.fromkeys(["min", "mins"], "minute"),
    **dict.fromkeys(["hr", "hrs"], "hour"),
    **dict.fromkeys(["mo", "mos"], "month"),
    **dict.fromkeys(["yr", "yrs"], "year"),
}

# Units of measure as fields abbreviate them in their names (``height_cm``, ``weight_g``): a
# user's "centimetres" is a cue for the one, and the short forms may be written onto the number.
MEASURE_ABBREVIATIONS = {
    **dict.fromkeys(["centimetre", "centimetres", "centimeter", "centimeters"], "cm"),
    **dict.fromkeys(["millimetre", "millimetres", "millimeter", "millimeters"], "mm"),
    **dict.fromkeys(["metre", "metres", "meter", "meters"], "m"),
    **dict.fromkeys(["kilometre", "kilometres", "kilometer", "kilometers"], "km"),
    **dict.fromkeys(["gram", "grams", "gramme", "grammes"], "g"),
    **dict.fromkeys(["kilogram", "kilograms", "kilo", "kilos"], "kg"),
    **dict.fromkeys(["litre", "litres", "liter", "liters"], "l"),
    **dict.fromkeys(["millilitre", "millilitres", "milliliter", "milliliters"], "ml"),
}
# Sizes of data, as a user writes them ("10GB", "50 gigs").
DATA_SIZES = {"gb": "gb", "gig": "gb", "gigs": "gb", "gigabytes": "gb", "mb": "mb", "tb": "tb"}
# A currency's hundredth, as fields keep small prices ("Unit rate in pence per kWh") and users
# write them ("25p", "30 cents"): a unit of its own, never converted to or from the currency, so
# "£20" is no unit rate and "25p" no fee kept in pounds.
SUBUNIT = "pence"
SUBUNIT_WORDS = dict.fromkeys(["p", "pence", "penny", "pennies", "cent", "cents", "ct"], SUBUNIT)
# Every word for a unit a number may be said in: after a count it makes the count a quantity
# ("my first 10 km walk"), not a number of results.
UNIT_WORDS = frozenset(
    [*TIME_UNIT_WORDS, *MEASURE_ABBREVIATIONS, *MEASURE_ABBREVIATIONS.values(), *DATA_SIZES]
    + [*SUBUNIT_WORDS, "miles", "mile", "percent", "%"]
)

# Words right after a number that multiply it: "$80k", "100 thousand dollars".
# "40 grand" is money: the word is a currency as well as a multiplier (see numbers._has_currency).
MULTIPLIERS = {"k": 1_000, "thousand": 1_000, "grand": 1_000, "million": 1_000_000}

# Words that carry no cue when matching a number to a field by name or description.
CUE_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "per",
        "in",
        "on",
        "for",
        "to",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "be",
        "can",
        "that",
        "which",
        "it",
        "its",
        "this",
        "max",
        "min",
        "maximum",
        "minimum",
        "number",
        "num",
        "count",
        "total",
        "value",
        "amount",
        "plan",
        "plans",
        "i",
        "my",
        "we",
        "our",
        "you",
        "do",
        "does",
        "what",
        "how",
        "any",
        "all",
        "have",
        "has",
        "at",
        "than",
        "less",
        "more",
        "most",
        "least",
        "under",
        "over",
        "below",
        "above",
    ]
)

SMALL_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "fifty": 50,
    "hundred": 100,
}

# A date in a message is often part of a story ("I was charged twice in March 2024"), not a wish
# for documents of that time. A date condition therefore needs one of these words (or the date
# field's name) in the same message: "what changed since March 2024", "docs updated in 2024".
DATE_SCOPE_WORDS = tuple(
    [
        "changed",
        "change",
        "changes",
        "changelog",
        "new",
        "news",
        "updated",
        "update",
        "updates",
        "latest",
        "recent",
        "recently",
        "released",
        "release",
        "releases",
        "introduced",
        "added",
        "announced",
        "launched",
        "launch",
        "came out",
        "come out",
        "brought out",
        "published",
        "modified",
        "revised",
        "docs",
        "articles",
        "article",
        "documentation",
        "announcements",
    ]
)


def alternation(words: Iterable[str]) -> str:
    """``words`` as one regular-expression alternation, each escaped and said once, the longest
    first (so that "new york" is tried before "new"): how every list of words or values is
    matched as a whole."""
    return "|".join(re.escape(word) for word in sorted(dict.fromkeys(words), key=len, reverse=True))


def any_word(words: Sequence[str], *, or_any_of: str = "") -> re.Pattern[str]:
    """Any of ``words`` as a whole word (or any one character of ``or_any_of``), case ignored:
    the one place a word list of this module becomes a pattern, so a new word is a new entry of
    its list and never a new expression."""
    said = rf"\b(?:{'|'.join(words)})\b"
    return re.compile(rf"[{or_any_of}]|{said}" if or_any_of else said, re.IGNORECASE)


# Past forms that tell of a day gone before a date ("was released in March", "since April").
# Regular "-ed" forms are left out: a participle says nothing of when ("scheduled for March").
TOLD_GONE_WORDS = [
    "since",
    "was",
    "were",
    "did",
    "had",
    "took",
    "went",
    "came",
    "began",
    "became",
    "gave",
    "saw",
    "wrote",
    "ran",
    "rode",
    "drove",
    "flew",
    "grew",
    "knew",
    "threw",
    "fell",
    "ate",
    "drank",
    "swam",
    "sang",
    "chose",
    "got",
]
# Verbs of asking to be shown things; most messages have none, so one scan spares the rest.
REQUEST_VERBS = ("show", "give", "find", "list", "send", "suggest", "recommend")
# Words that open another phrase after a number: what follows names something else.
PHRASE_OPENERS = ("with", "and", "or", "but", "that", "which", "while", "whereas")
# Verbs of something working: negated, they report a problem where the value is.
FUNCTIONING_VERBS = [
    "work",
    "works",
    "working",
    "worked",
    "load",
    "loads",
    "loading",
    "open",
    "opens",
    "opening",
    "start",
    "starts",
    "starting",
    "sync",
    "syncs",
    "syncing",
    "connect",
    "connects",
    "connecting",
    "install",
    "installs",
    "installing",
    "launch",
    "launches",
    "launching",
    "boot",
    "boots",
    "booting",
    "respond",
    "responding",
    "run",
    "runs",
    "running",
    "show",
    "shows",
    "showing",
    "display",
    "displaying",
    "play",
    "plays",
    "playing",
    "print",
    "printing",
    "charge",
    "charging",
]
# Words that open another clause, after which a negation no longer governs a value.
CLAUSE_OPENERS = [
    "that",
    "which",
    "who",
    "whom",
    "whose",
    "where",
    "when",
    "while",
    "because",
    "since",
    "if",
    "so",
    "though",
    "although",
    "but",
    "whereas",
    "unless",
]
# Words that end the clause a date is told in ("released in May and ...").
DATE_CLAUSE_BREAKS = ("and", "but", "or", "because", "while")
CLAUSE_PUNCTUATION = ",.;:!?"
# Words that join coordinated values.
JOINING_WORDS = ("and", "or", "nor")
