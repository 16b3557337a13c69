"""The one place that decides "is this message a follow-up?", for every stage that asks.

A follow-up leans on earlier turns ("and how long does it take?", "is it encrypted there?"); a
standalone message opens a subject of its own. Two stages need the answer: the rewrite (only a
follow-up gets words from earlier turns, ``rewrite.heuristic`` and ``rewrite.context``) and the
carried filters (only a follow-up keeps the conditions of earlier turns,
``planning.carried_filters``).

Each stage asks :func:`follows_up` with its :class:`Stage`. Today the two stages still read a
message differently, exactly as they did before this seam existed:

* ``Stage.REWRITE``: a pronoun or other pointing word anywhere ("it", "same", "other", ...), an
  elliptical opening ("and ", "what about "), or fewer than three content words (stop words and
  dialogue words such as "wow" or "tell" do not count);
* ``Stage.CARRIED_FILTERS``: anything but a complete new question (``is_complete_question``): an
  opening word of continuation ("and", "same", "what if", ...), or a message that both readings
  find leaning on earlier turns. Its own reading alone (a pointing word from a shorter list, or
  fewer than three words that are not English stop words and are longer than two letters) called
  "What is the UK VAT rate?" thin, and carried the previous subject's conditions into it.

They disagree on some messages: "Is the same true for the business tier?" is a follow-up for the
rewrite ("same" points back) and not for carried filters (it names "business" and "tier" and
"true", and does not open with a continuation word). :func:`decisions` returns both answers so that
such messages can be found and a later change can choose one reading for every stage.

Both readings first set aside what says nothing about the subject: an opening acknowledgement
("ok.", "got it.") is not read, and a message that announces a new subject ("separate thing,
...", "different question: ...") never follows up; "also" is read by what follows it. An answer
to the bot's clarifying question ("home, storm knocked the fence down" after "Is the claim for
your home or your car?") follows up however much it names (``answers_the_bot``).

The English (pointing words, openings, acknowledgements, announcements of a new subject) is
phrase data in ``follow_up.yaml``, read once by ``phrase_data``; this module holds only the
logic. Tokenisation is a regular expression plus scikit-learn's English stop words: no tagger
or parser is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from rasa_context_retrieval import phrase_data


class Stage(StrEnum):
    """A stage that needs to know whether the latest message is a follow-up."""

    REWRITE = "rewrite"
    """Whether earlier turns add words (or vectors) to the search text."""
    CARRIED_FILTERS = "carried_filters"
    """Whether conditions said in earlier turns still scope the search."""


WORDS = phrase_data.words("follow_up")
"""The word lists of ``follow_up.yaml`` (pointing words, dialogue words, greetings, ...)."""
OPENINGS = phrase_data.openings("follow_up")
PATTERNS = phrase_data.patterns("follow_up")
STOP_WORDS = ENGLISH_STOP_WORDS | WORDS.DIALOGUE_WORDS | WORDS.GREETINGS
"""Words that name no subject: scikit-learn's English stop words, the dialogue words and the
words that only greet."""

# A message with fewer content words than this is too thin to stand alone.
MIN_STANDALONE_CONTENT_WORDS = 3
"""Both readings use the same threshold today."""
DECISIONS_KEPT = 2_048
"""Follow-up decisions kept (``follows_up``): a few per turn, so some hundreds of conversations;
turns are cut at 4,000 characters by default, so a few megabytes at most."""


@lru_cache(maxsize=DECISIONS_KEPT)
def follows_up(message: str, stage: Stage) -> bool:
    """Whether ``message`` leans on earlier turns, as ``stage`` reads it (module docstring).

    An opening acknowledgement ("ok.", "got it.") is not read ("got it. what order do you board
    in" points at nothing), and a message that announces a new subject ("separate thing, my
    surname is misspelled by one letter") never follows up.

    The answer depends on the message alone, and every search of a conversation asks it again
    about the earlier user turns (the rewrite, the context model and the carried filters), so
    the latest answers are kept.
    """
    if announces_new_subject(message):
        return False
    question = without_acknowledgement(message)
    if stage is Stage.REWRITE:
        return _leans_on_earlier_turns(question)
    return not is_complete_question(question)


def clarifying_question(bot_text: str) -> str | None:
    """The question ``bot_text`` ends with when it asks the user something about their last
    question ("Is that for home or car insurance?"), not when it offers more help ("Anything
    else I can help with?"); None otherwise."""
    said = sentences(bot_text)
    if not said or not said[-1].endswith("?") or PATTERNS.CLOSING_OFFER.search(said[-1]):
        return None
    return said[-1]


def answers_the_bot(message: str, last_bot: str) -> bool:
    """Whether ``message`` answers the bot's clarifying question (``clarifying_question``):
    a reply that neither asks a question of its own nor announces a new subject ("car",
    "home, storm knocked the fence down", "new york to lisbon via lindmoor").

    Such a reply follows up however much it names: it qualifies the question the user asked
    before, and alone it would be searched as a statement.
    """
    if clarifying_question(last_bot) is None or announces_new_subject(message):
        return False
    reply = without_acknowledgement(message)
    return "?" not in reply and not PATTERNS.QUESTION_OPENING.match(reply)


def follows_up_after(message: str, last_bot: str, stage: Stage) -> bool:
    """``follows_up``, and also true for an answer to the bot's clarifying question."""
    return answers_the_bot(message, last_bot) or follows_up(message, stage)


def without_acknowledgement(message: str) -> str:
    """``message`` without an opening that acknowledges the answer before: the acknowledgement
    words ("ok and how often ...": "and how often ..."), or the whole first sentence when it
    opens with one and another sentence follows ("ok i'll ring. how do i book ..."). A message
    that is only an acknowledgement comes back unchanged."""
    first = PATTERNS.FIRST_SENTENCE.match(message)
    if first is None or not PATTERNS.ACKNOWLEDGEMENT.match(message):
        return message
    return message[first.end() :]


def announces_new_subject(message: str) -> bool:
    """Whether ``message`` (after an acknowledgement: "ok.", "ok, and ...") says it opens a new
    subject ("separate question, ...", "different q: ...", "unrelated but ...")."""
    question = without_acknowledgement(message)
    return bool(PATTERNS.NEW_SUBJECT.match(PATTERNS.ACKNOWLEDGEMENT.sub("", question, count=1)))


def is_complete_question(message: str) -> bool:
    """Whether ``message`` is a complete new question: it does not open like a continuation,
    and at least one reading finds it complete on its own.

    Carried filters ask this: a condition from earlier turns must not cross a change of
    subject. The rewrite's reading counts two-letter words and digits ("Do EU invoices show
    VAT?" names three things), so it finds complete questions the carried filters' reading
    called thin; an opening like "what if ..." still continues the subject.
    """
    message = PATTERNS.ALSO_OPENING.sub("", message, count=1)
    if PATTERNS.CONTINUATIONS.match(message):
        return False
    return not (_leans_on_earlier_turns(message) and _continues_the_subject(message))


@dataclass(frozen=True)
class FollowUpDecisions:
    """Every stage's answer for one message."""

    message: str
    by_stage: dict[Stage, bool]

    @property
    def agree(self) -> bool:
        """Whether every stage reads the message the same way."""
        return len(set(self.by_stage.values())) == 1


def decisions(message: str) -> FollowUpDecisions:
    """What every stage decides for ``message``."""
    return FollowUpDecisions(message, {stage: follows_up(message, stage) for stage in Stage})


def content_words(text: str) -> list[str]:
    """Words that carry the subject, in order, first spelling kept, duplicates dropped."""
    words = (word for word in PATTERNS.WORD.findall(text) if is_content_word(word.lower()))
    return unique_words(words)


def is_greeting(message: str) -> bool:
    """Whether ``message`` only greets ("hi", "hello there", "good morning")."""
    words = {word.lower() for word in PATTERNS.WORD.findall(message)}
    greetings = WORDS.GREETINGS | WORDS.GREETING_TIMES
    return bool(greetings & words) and not any(is_content_word(word) for word in words - greetings)


def is_content_word(lowered: str) -> bool:
    """Not a stop word, dialogue word or pointing word, and more than one letter (or a digit)."""
    return (
        lowered not in STOP_WORDS
        and lowered not in WORDS.ANAPHORA
        and (len(lowered) > 1 or lowered.isdigit())
    )


def opens_elliptically(message: str) -> bool:
    """Whether ``message`` opens like an elliptical follow-up ("and for Android?", "what about
    the price?"; ``ELLIPSIS_OPENINGS`` in ``follow_up.yaml``)."""
    return message.lower().strip().startswith(OPENINGS.ELLIPSIS_OPENINGS)


def word_tokens(text: str) -> list[str]:
    """The words of ``text`` as typed: letters and digits, hyphenated compounds whole,
    apostrophes splitting ("Brazil's": "Brazil", "s")."""
    return PATTERNS.WORD.findall(text)  # type: ignore[no-any-return]


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each with its closing punctuation, spaces stripped."""
    return [part.strip() for part in PATTERNS.SENTENCE.findall(text) if part.strip()]


def _leans_on_earlier_turns(message: str) -> bool:
    """The rewrite's reading: a pronoun, an elided subject, or too short."""
    message = PATTERNS.ALSO_OPENING.sub("", message, count=1)
    if pointing_words(message) or opens_elliptically(message):
        return True
    return len(content_words(message)) < MIN_STANDALONE_CONTENT_WORDS


def pointing_words(message: str) -> list[str]:
    """The words of ``message`` that point back at an earlier turn ("it", "same", "there").

    Not counted: a pointing word in a use that points at nothing ("is there a fee", "how much
    is it to ring Poland", ``NON_POINTING_USES`` in ``follow_up.yaml``); "that" between a noun
    and a verb (a relative pronoun: "a grant that can help"); and a pronoun after a
    first-person possessive noun of the same sentence ("my dad is on dialysis, how does he sign up",
    ``OWN_REFERENT_PRONOUNS`` in ``follow_up.yaml``); and a pointing word after a clause of
    its sentence that names two things ("my rental fine came late, is that normal"): the
    message names what it points at.
    """
    pointing = []
    for sentence in PATTERNS.SENTENCE.findall(PATTERNS.NON_POINTING_USES.sub(" ", message)):
        own = PATTERNS.OWN_REFERENT_OPENING.search(sentence)
        words = [match for match in PATTERNS.WORD.finditer(sentence)]
        for number, match in enumerate(words):
            word = match.group(0).lower()
            if word not in WORDS.ANAPHORA:
                continue
            if (
                own is not None
                and match.start() > own.start()
                and word in WORDS.OWN_REFERENT_PRONOUNS
            ):
                continue
            if word == WORDS.RELATIVE_THAT and _between_noun_and_verb(words, number):
                continue
            if _names_its_own_referent(sentence[: match.start()]):
                continue
            pointing.append(word)
    return pointing


def _names_its_own_referent(before: str) -> bool:
    """Whether a clause before the pointing word, in the same sentence, names two things
    ("i got a parking fine after my rental, is that normal", "can i go down to a cheaper
    tier, how does that work"): the word points at that clause, not at an earlier turn."""
    clauses = PATTERNS.CLAUSE_BREAK.split(before)
    return len(clauses) > 1 and len(content_words(" ".join(clauses[:-1]))) >= 2


def _between_noun_and_verb(words: list[re.Match[str]], number: int) -> bool:
    """Whether the word at ``number`` follows a content word and precedes an auxiliary verb."""
    if number == 0 or number + 1 >= len(words):
        return False
    before, after = words[number - 1].group(0).lower(), words[number + 1].group(0).lower()
    return is_content_word(before) and after in WORDS.AUXILIARIES


def _continues_the_subject(message: str) -> bool:
    """The carried filters' reading: a continuation opening, a pointer back, or too short."""
    words = [word.lower() for word in PATTERNS.FILTER_WORD.findall(message)]
    if PATTERNS.CONTINUATIONS.match(message) or WORDS.POINTING_BACK.intersection(words):
        return True
    content = {word for word in words if word not in ENGLISH_STOP_WORDS and len(word) > 2}
    return len(content) < MIN_STANDALONE_CONTENT_WORDS


def unique_words(items: Iterable[str]) -> list[str]:
    """``items`` in order, the first spelling of each word kept (case-insensitive)."""
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        if item.lower() not in seen:
            seen.add(item.lower())
            kept.append(item)
    return kept
