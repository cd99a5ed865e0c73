"""The shape of an injection lexicon and the helpers that turn its words into patterns.

A lexicon (``Lexicon``) holds one language's words for each injection intent; the languages live
in ``injection_lexicon.py`` and ``injection_lexicon_more.py``, the rules that read them in
``injection_rules.py`` and ``injection_any_order.py``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["OPTIONAL_FIELDS", "Lexicon", "alt", "forms", "typos", "words"]

# Words shorter than this match exactly: one edit away from a short word is another word.
TYPO_MIN_LEN = 5


def typos(word: str) -> str:
    """A regex for ``word`` and the common slips of the keyboard one edit away from it: a letter
    dropped ("ignre"), doubled ("ignorre") or swapped with its neighbour ("ignroe").

    Every form is a literal: a letter class per position ("ign[a-z]re") would catch changed
    letters too, but multiplies the states of the one DFA all rules share (the prefilter then
    runs out of memory and falls back to a slow engine). The first letter is kept (typos
    rarely hit it) and nothing is added after the last one, so inflections ("ignored") are
    not typos of the imperative; the rules' vetoes drop real words among the forms.
    """
    if len(word) < TYPO_MIN_LEN or not word.isalpha():
        return word
    forms = {word}
    for i in range(1, len(word)):
        forms.add(word[:i] + word[i + 1 :])  # dropped
        forms.add(word[:i] + word[i] + word[i:])  # doubled
        if i + 1 < len(word) and word[i] != word[i + 1]:
            forms.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])  # swapped
    return "(?:" + "|".join(sorted(forms, key=_longest_first)) + ")"


def _longest_first(word: str) -> tuple[int, str]:
    # Longest first, so that RE2's leftmost-first alternation takes the longest word, as the
    # normalized view spells it: decomposed, "করো" (U+09CB) is "করে" and a sign, so it goes
    # before "করে", which would otherwise match its start and leave "না" after it unread. Then
    # in a fixed order: a set's own order changes with the process's hash seed.
    return -len(unicodedata.normalize("NFKD", word)), word


def alt(words: Iterable[str], *, tolerant: bool = False) -> str:
    """A non-capturing alternation of ``words`` (phrases allowed), longest first."""
    unique = sorted(set(words), key=_longest_first)
    parts = [typos(w) if tolerant and " " not in w else w for w in unique]
    return "(?:" + "|".join(parts) + ")"


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The words of one language for the intents above (space-separated; ``|`` separates
    phrases of several words)."""

    # "ignore", "forget", "disregard": the imperative, familiar and polite.
    override: str
    # Words that may stand between the verb and its object: articles, "all", "your".
    fillers: str
    # "all", "your": an override of every instruction, or of the model's own.
    every: str
    # "previous", "above", "earlier": where the overridden text sits.
    prior: str
    # "instructions", "rules", "orders": what the model was told.
    instructions: str
    # "what was said before", "everything above": the earlier text as a whole.
    said_before: str
    # "from now on", "starting now".
    from_now_on: str
    # "new task", "new instruction": a label that hands over another job.
    new_task: str
    # "print", "repeat", "show", "translate", "spell-check": verbs that hand text back.
    extract: str
    # "the text above", "your instructions", "your prompt": the text to hand back.
    prior_text: str
    # "your instructions", "your initial prompt": the model's own prompt to hand back.
    own_prompt: str
    # "and say": what an override hands over to ("ignore the function and say ...").
    say: str
    # "instead": the override's new order replaces the old one.
    instead: str
    # "what is your password": the secret the application's prompt guards.
    secret: str
    # "I am your developer / creator / administrator".
    authority: str
    # "maintenance mode", "developer mode", "god mode".
    mode: str
    # "you have amnesia", "you have lost your memory".
    amnesia: str
    # Whether the key verbs and nouns also match one edit away: for the languages users type
    # (machine-translated attacks are spelled right, and every tolerant word grows the DFA).
    typos: bool = False
    # "you are now": the persona switch (a weak cue: "you are now ready" is how tutorials talk).
    you_are_now: str = ""
    # Word order and spacing. ``verb_last``: the verb comes after its object ("पिछले निर्देशों को
    # अनदेखा करें", "önceki talimatları unut", "以前の指示を無視して"). ``spaced=False``: words run
    # together (Japanese, Chinese, Thai) or take their particles attached (Korean "지침을"), so
    # the parts of a phrase may or may not have a space between them.
    verb_last: bool = False
    spaced: bool = True
    # Words right before an override verb that make it something else: "do not" ("не забудь",
    # "不要忽略", "อย่าลืม"), or a subject ("我忘记了": a narrative). Only the languages written
    # with these rules (every order and spacing) use them.
    negation: str = ""
    # The same right after the verb, where the language puts it there ("無視しないで",
    # "무시하지 마", "উপেক্ষা করো না", "忘记了").
    negated_after: str = ""
    # "and" between an override and the order that replaces it ("abaikan ... dan katakan").
    conj: str = ""
    # Words that put a mode on, before or after its name ("войди в режим разработчика",
    # "メンテナンスモードに入って").
    activate: str = ""

    @property
    def any_order(self) -> bool:
        """Written for the rules of every word order and spacing (the languages that name the
        words putting a mode on); the others are read by the rules for verb-first languages
        written with spaces, which have their own words for modes."""
        return bool(self.activate)


# Fields a lexicon may leave empty: the flags, the negations a language does not need, "and"
# (a language with the verb last has no "ignore X and say"), and the words putting a mode on,
# which only the languages written for the rules of every word order give (``any_order``).
OPTIONAL_FIELDS = frozenset(
    {"typos", "verb_last", "spaced", "negation", "negated_after", "conj", "activate"}
)


def words(field: str) -> list[str]:
    """A lexicon field as its entries: ``|`` separates phrases, else spaces separate words."""
    return [w.strip() for w in field.split("|")] if "|" in field else field.split()


def forms(firsts: str, seconds: str) -> str:
    """Every first part followed by every second part (``|``-separated): "अनदेखा" + "करें"."""
    return "|".join(a + b for a in firsts.split("|") for b in seconds.split("|"))
