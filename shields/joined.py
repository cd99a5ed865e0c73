"""The joined view: words written with joiners ("build-a-bomb", "make_napalm", "build.a.bomb")
and digits or symbols for letters ("b0mb", "n@palm", "$arin") read as plain words.

A deny list reads entries in this view besides the normalized text. It is defined character by
character, so it is one to one with the normalized text (offsets need no map) and a stream
needs no look-ahead for it:

- *Letters for digits* (``LEET``): 0 o, 1 i, 3 e, 4 a, 5 s, 7 t, @ a, $ s, and "l" reads as
  "i" too, in the text and in the keys alike, since "1" stands for both ("napa1m", "r1c1n").
- *Joiners* (``JOINERS``), the separators of identifiers, paths, slugs, file names and markup,
  read as spaces: "build-a-bomb" is "build a bomb". The normalizer has already collapsed runs
  of whitespace and no key holds two spaces in a row, so a joiner next to a space or another
  joiner (" - ", "--", "build. A") makes two spaces, where no key matches.

The view is looser than the text: "mail" reads "maii" like "mall", "c--" like "c++". A deny
list therefore takes a match of this view only if the text is an entry as written, or differs
from one by joiners between two letters or digits, by digits and symbols for letters, or by its
words run together (``relaxed_reading``), and reads those looser matches as whole words.
"""

from __future__ import annotations

import re

__all__ = [
    "JOINERS",
    "JOINER_CHARS",
    "VIEW",
    "VIEW_BYTES",
    "joined_view",
    "joiners_as_spaces",
    "relaxed_reading",
]

JOINERS = "-_./\\+*~|:,;"
JOINER_CHARS = frozenset(JOINERS)
# Digits and symbols written for letters, and "l", which "1" stands for as often as for "i".
# Letters never read as digits: a text without these characters reads as itself but for "l".
_LEET_FROM, _LEET_TO = "013457@$l", "oieastasi"
VIEW = str.maketrans(_LEET_FROM + JOINERS, _LEET_TO + " " * len(JOINERS))
# The same for ``shields.normalize.ascii_bytes`` of a text (0x80, any non-ASCII, stays).
VIEW_BYTES = bytes.maketrans(
    (_LEET_FROM + JOINERS).encode("ascii"), (_LEET_TO + " " * len(JOINERS)).encode("ascii")
)
# The characters that read as another one in the view, but for "l" and the joiners: a text with
# one of them in a match is written with a digit or symbol for a letter.
_SUBSTITUTES = re.compile("[013457@$]")
# A joiner between two letters or digits (Python's ``[^\W_]`` is ``str.isalnum()``), written
# with the joiner first, which the engine skips to without trying every position.
_JOINING = re.compile("[" + re.escape(JOINERS) + r"](?<=[^\W_].)(?=[^\W_])")
# ``str.translate`` folds an ASCII string in C at a few ms per MB, but walks any other string
# character by character through the table (~100 ns each). The characters it changes are all
# ASCII, so a text that is not is folded by its stretches of ASCII.
_ASCII_RUN = re.compile("[\\x00-\\x7f]+")


def _fold_run(run: re.Match[str]) -> str:
    return run.group().translate(VIEW)


def joined_view(text: str) -> str:
    """The view of ``text``: of a key, a whole text, or any piece of one."""
    if text.isascii():
        return text.translate(VIEW)
    return _ASCII_RUN.sub(_fold_run, text)


def joiners_as_spaces(text: str) -> str:
    """``text`` with its joiners between two letters or digits read as spaces, and nothing
    else changed: how a text differs from an entry by joiners only."""
    return _JOINING.sub(" ", text)


def relaxed_reading(text: str, keys: frozenset[str]) -> bool:
    """Whether ``text``, which reads as a key in the view but is no key itself, is one written
    loosely: with digits or symbols for letters, or with joiners between the words of a key
    in ``keys`` (the keys with their joiners read as spaces; a key run together is a key in
    its own right). Otherwise it only reads alike ("mail" for "mall", "c--" for "c++")."""
    return _SUBSTITUTES.search(text) is not None or joiners_as_spaces(text) in keys
