"""Whether a position of a text is inside an HTML tag, and which: kept as the text is read.

The ``links`` shield judges a URL inside a tag (``<img ... src=URL>``) as an image, fetched
without a click, and one outside any tag as a bare link. Looking back a bounded distance for the
tag's ``<`` would let a long ``alt``, ``class`` or run of spaces carry ``src`` out of sight, so
the tag state is instead kept by a small tokenizer that reads every character once, in order,
and can stop and resume anywhere: the state after a text is the same in any chunking.

It reads tags as a browser's HTML tokenizer does, as far as "inside a tag, and its name" goes:

- ``<`` followed by an ASCII letter opens a tag; its name runs to whitespace, ``/`` or ``>``
  (ASCII lower-cased; ``<`` followed by anything else, ``</x`` and ``<!--`` included, opens
  nothing);
- in a tag, ``>`` closes it, except inside an attribute value: after ``=`` (and optional
  whitespace) a value quoted with ``"`` or ``'`` runs to the same quote, an unquoted one to
  whitespace or ``>``. So ``<img alt="a>b" src=URL>`` and ``<img alt="x < y" src=URL>`` keep
  ``src`` inside the ``img``, as a browser reads them;
- the content of a ``<style>`` element is CSS up to ``</style``: everything in it counts as
  inside the ``style`` tag, so a URL there (``url(...)`` with any whitespace, ``@import``,
  ``image-set("...")``) is an image.

It errs towards "inside": a ``<`` + letter in prose or code ("if a<b") opens a tag that stays
open until a ``>``, which makes the URLs until then images (stricter), never the other way. A
browser drops a tag that the text never closes, but a stream cannot wait for the ``>``.

Offsets are absolute (positions in the whole text); the caller passes its buffer with the
absolute offset of its first byte. The buffer is the text's ASCII view (``bytes``, any other
character as one byte ``?``): tag syntax is ASCII, and a name with another character is never
one that matters (``a``, ``area``, ``style``). Text with complete tags is read in one regular
expression match; a tag cut by the end of what was fed is read on step by step.
"""

from __future__ import annotations

import enum
import re

__all__ = ["Tags"]


class _At(enum.Enum):
    DATA = "data"  # outside any tag
    LT = "lt"  # just after a "<" in data: a tag if a letter follows
    NAME = "name"  # reading a tag's name
    TAG = "tag"  # in a tag, between attributes (or in an attribute's name)
    BEFORE_VALUE = "before_value"  # after "=": whitespace, then the value
    DQ = "dq"  # in a "double-quoted" value
    SQ = "sq"  # in a 'single-quoted' value
    UNQUOTED = "unquoted"  # in an unquoted value
    STYLE = "style"  # in a <style> element's content, up to "</style"


_DATA, _LT, _NAME, _TAG = _At.DATA, _At.LT, _At.NAME, _At.TAG
_BEFORE_VALUE, _DQ, _SQ, _UNQUOTED, _STYLE = (
    _At.BEFORE_VALUE,
    _At.DQ,
    _At.SQ,
    _At.UNQUOTED,
    _At.STYLE,
)
# A tag name longer than this is kept cut: it is then no name that matters.
_NAME_LIMIT = 16
_NAME_END = re.compile(rb"[\t\n\f\r />]")
# The attributes of a tag up to its ">" (or as far as they are complete): plain characters, and
# each "=" with its whole value - quoted, or unquoted and ended by whitespace or ">", or none
# before ">". A value not complete yet stops it at its "=" (read on step by step). Each
# character has one reading (a value is entered only at "=", a quote opens one only there), and
# the quantifiers are possessive: the match is the tokenizer's reading and never backtracks.
_ATTRIBUTES_BODY = (
    rb"(?:[^>=]++|=[\t\n\f\r ]*+"
    rb"(?:\"[^\"]*+\"|'[^']*+'|[^\t\n\f\r >\"'][^\t\n\f\r >]*+(?=[\t\n\f\r >])|(?=>)))*+"
)
_ATTRIBUTES = re.compile(_ATTRIBUTES_BODY)
# Text with complete tags, in one match: characters but "<", a "<" that opens no tag, and whole
# tags (name, attributes, ">") but a <style>, whose content is CSS. It stops at the "<" of a tag
# that is not complete yet (or of a <style>), or at a "<" that ends the text.
_SKIP = re.compile(
    rb"(?:[^<]++|<(?=[^A-Za-z])|<(?![sS][tT][yY][lL][eE][\t\n\f\r />])[A-Za-z][^\t\n\f\r />]*+"
    rb"(?:>|[\t\n\f\r /]" + _ATTRIBUTES_BODY + rb">))*+"
)
_TAG_STOP = re.compile(rb"[>=]")
_VALUE_START = re.compile(rb"[^\t\n\f\r ]")
_UNQUOTED_END = re.compile(rb"[\t\n\f\r >]")
_STYLE_END = re.compile(rb"</[sS][tT][yY][lL][eE][\t\n\f\r />]")
_STYLE_END_LEN = len(b"</style>")
_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class Tags:
    """The tokenizer's state after the text up to ``at`` (absolute)."""

    __slots__ = ("at", "name", "resume", "where")

    def __init__(self) -> None:
        self.at = 0
        self.where = _DATA
        self.name = b""  # the open tag's name, lower case (cut at _NAME_LIMIT)
        # In STYLE: where the search for "</style" goes on (a few bytes before ``at``: the end
        # tag may be cut between two reads).
        self.resume = 0

    def copy(self) -> Tags:
        other = Tags()
        other.at, other.where, other.name, other.resume = (
            self.at,
            self.where,
            self.name,
            self.resume,
        )
        return other

    def name_at(self, data: bytes, off: int, at: int) -> str | None:
        """The name of the tag (or the ``style`` element) the position ``at`` (not before
        ``self.at``) is inside, None outside; ``self`` stays where it is."""
        state = self
        if at > self.at:
            if self.where is _DATA and data.find(b"<", self.at - off, at - off) < 0:
                return None
            state = self.copy()
            state.advance(data, off, at)
        where = state.where
        if where is _DATA or where is _LT:
            return None
        return state.name.decode("ascii", "replace")

    def needed_from(self) -> int:
        """The first position of the text that reading on may still look at."""
        return min(self.resume, self.at) if self.where is _STYLE else self.at

    def advance(self, data: bytes, off: int, to: int) -> None:
        """Reads on from ``self.at`` to ``to`` (absolute; ``data[0]`` is at ``off``, and
        ``data`` holds the text from ``self.at`` to ``to``). ``to <= self.at`` changes
        nothing."""
        pos = self.at - off
        end = to - off
        if end <= pos:
            return
        self.at = to
        where = self.where
        if where is _DATA:  # the common case: text without a tag
            found = data.find(b"<", pos, end)
            if found < 0:
                return
            pos = found
        name, resume = self.name, self.resume
        while pos < end:
            if where is _DATA:
                pos = _SKIP.match(data, pos, end).end()  # type: ignore[union-attr]
                if pos >= end:
                    break
                if pos + 1 == end:  # "<": a letter may follow in the next text
                    where = _LT
                    break
                # the "<" + letter of a tag not complete yet, or of a <style>
                where, name, pos = _NAME, b"", pos + 1
            elif where is _LT:
                # Not consumed: the letter is the name's first, anything else is data.
                where, name = (_NAME if data[pos] in _LETTERS else _DATA), b""
            elif where is _NAME:
                match = _NAME_END.search(data, pos, end)
                stop = end if match is None else match.start()
                if len(name) < _NAME_LIMIT:
                    name = (name + data[pos:stop].lower())[:_NAME_LIMIT]
                if match is None:
                    break
                pos = stop + 1
                if data[stop] == 0x3E:  # ">"
                    where, resume = _closed(name, off + pos)
                else:
                    where = _TAG
            elif where is _TAG:
                pos = _ATTRIBUTES.match(data, pos, end).end()  # type: ignore[union-attr]
                if pos >= end:
                    break
                pos += 1
                if data[pos - 1] == 0x3E:
                    where, resume = _closed(name, off + pos)
                else:  # "=" whose value is not complete yet
                    where = _BEFORE_VALUE
            elif where is _BEFORE_VALUE:
                match = _VALUE_START.search(data, pos, end)
                if match is None:
                    break
                pos = match.start()
                char = data[pos]
                if char == 0x22:  # '"'
                    where, pos = _DQ, pos + 1
                elif char == 0x27:  # "'"
                    where, pos = _SQ, pos + 1
                elif char == 0x3E:  # "=" then ">": no value, the tag ends
                    pos += 1
                    where, resume = _closed(name, off + pos)
                else:
                    where = _UNQUOTED
            elif where is _DQ or where is _SQ:
                stop = data.find(b'"' if where is _DQ else b"'", pos, end)
                if stop < 0:
                    break
                where, pos = _TAG, stop + 1
            elif where is _UNQUOTED:
                match = _UNQUOTED_END.search(data, pos, end)
                if match is None:
                    break
                pos = match.start() + 1
                if data[pos - 1] == 0x3E:
                    where, resume = _closed(name, off + pos)
                else:
                    where = _TAG
            else:  # STYLE
                match = _STYLE_END.search(data, max(resume - off, 0), end)
                if match is None:
                    resume = max(resume, to - _STYLE_END_LEN + 1)
                    break
                where, pos = _DATA, match.end()
        self.where, self.name, self.resume = where, name, resume


def _closed(name: bytes, at: int) -> tuple[_At, int]:
    """Where the text is after the ``>`` that closes a tag called ``name`` (at ``at``)."""
    return (_STYLE, at) if name == b"style" else (_DATA, 0)
