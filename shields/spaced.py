"""Spelled-out words ("b.o.m.b", "b o m b", "b-o-m-b", "b_o_m_b"): a second, collapsed view.

``SpacedView`` turns the normalized text into a view in which the separators *inside a run of
spelled-out letters* are removed: "how to make a b.o.m.b now" becomes "how to make abomb now",
where a shield can match "bomb". Everything else is kept as it is, so ordinary prose reads the
same in both views.

A *run* is three or more single-letter tokens in a row — a token is a maximal stretch of
letters or digits (``str.isalnum``) — each separated from the next by 1 to ``max_gap``
separator characters (anything else: space, punctuation, "_"). Two letters are not a run, so
"a bomb", "e.g." and "A. Smith" stay as they are; "U.S.A." and "a b c" do become "usa" and
"abc", which only matters to a shield that looks for those.

Like the normalizer, the view is incremental and exact: feeding the normalized text in any
chunking yields the same view as feeding it whole, and ``norm_span`` maps a span of the view
back to the normalized text (a span that crosses removed separators covers them). Whether a
separator goes depends on text that may not have arrived yet ("b.o.m" may continue "b.o.mx"),
so the view holds back the undecided tail of a run — at most the letters and separators of
one run that has fewer than three letters so far, or the last separator of a longer run. A
letter that closes a run of three or more is released as soon as the character after it has
been fed: a match that ends on it is reported one character later than in the plain view.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from functools import cache

__all__ = ["MAX_GAP", "SpacedView", "find_runs", "spaced_span"]

# Separators between two spelled-out letters: 1 for "b.o.m.b", 2 for "b. o. m. b.", 3 for
# "b - o - m - b". Each unit widens the text a spelled-out word may span, hence the stream
# hold-back a shield needs (see ``spaced_span``).
MAX_GAP = 3

# Letters and digits are ``[^\W_]`` (Python's ``\w`` is ``str.isalnum()`` plus "_"), everything
# else separates. Kept as regex classes so that the run finder and the separator removal agree
# on every character.
_SEPARATORS = re.compile(r"[\W_]+")


# Runs are found in a *class string*: every character becomes "a" (a letter or digit, i.e.
# ``str.isalnum()``, which is what ``[^\W_]`` means) or "." (a separator). ASCII text is
# classified by ``bytes.translate``; the rare non-ASCII stretches of mostly-ASCII text by
# ``str.translate`` first. The pattern then starts with the literal ".a." — a single letter —
# which the engine skips to without trying every position: ~100 MB/s on prose, where a
# Unicode-class pattern runs at ~20 MB/s in Python's engine.
_LETTER, _OTHER = ord("a"), ord(".")
_ASCII_CLASSES = bytes(_LETTER if chr(i).isalnum() else _OTHER for i in range(256))
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


class _Classes(dict[int, int]):
    """Code point -> "a" or "." for ``str.translate``, filled in as characters are met."""

    def __missing__(self, code: int) -> int:
        value = _LETTER if chr(code).isalnum() else _OTHER
        if len(self) < 65536:  # bounded: a text of every code point must not grow it forever
            self[code] = value
        return value


_CLASSES = _Classes()


def _classify(stretch: re.Match[str]) -> str:
    return stretch.group().translate(_CLASSES)


@cache
def _run_pattern(max_gap: int) -> re.Pattern[bytes]:
    # A fixed pattern (not a policy's) in Python's ``re``: over the class string padded with "."
    # at both ends (the text's ends separate like separators), a single letter, then 2 or more
    # times 1..max_gap separators and a letter, then a separator. "a" and "." are disjoint, so
    # each repetition splits the text one way only and a failed attempt stops within one token:
    # no catastrophic backtracking, linear time.
    return re.compile(rb"\.a\.\.{0,%d}a(?:\.{1,%d}a)+(?=\.)" % (max_gap - 1, max_gap))


def find_runs(text: str, max_gap: int) -> Iterator[tuple[int, int]]:
    """The spans of the runs in ``text``, whose end counts as the end of the text."""
    if not text.isascii():
        text = _NON_ASCII.sub(_classify, text)  # one ASCII character per character
    classes = b"." + text.encode("ascii").translate(_ASCII_CLASSES) + b"."
    for found in _run_pattern(max_gap).finditer(classes):
        # Padded offsets: the run starts after the leading ".", its end is one off.
        yield found.start(), found.end() - 1


def spaced_span(letters: int, max_gap: int) -> int:
    """The most normalized characters a run spelling ``letters`` letters can span."""
    return letters + (letters - 1) * max_gap


class SpacedView:
    """The collapsed view of a normalized text fed in chunks, with a map back to it.

    ``feed`` takes the next normalized chunk and returns the view text it completes (possibly
    nothing: the tail of a run waits for its next character); ``finish`` returns the rest.
    ``norm_span(vs, ve)`` is the normalized span a view span came from; ``forget_before`` drops
    map entries below a view offset, which keeps memory bounded on long streams.
    """

    __slots__ = (
        "_bp_delta",
        "_bp_view",
        "_buf",
        "_buf_start",
        "_context",
        "_emitted",
        "_max_gap",
        "norm_len",
        "view_len",
    )

    def __init__(self, max_gap: int = 1) -> None:
        if not 1 <= max_gap <= MAX_GAP:
            raise ValueError(f"max_gap must be between 1 and {MAX_GAP}")
        self._max_gap = max_gap
        # Text kept before the undecided tail, so that deciding a separator can look at the
        # three tokens before it, their separators and the character before the first one.
        self._context = 3 * max_gap + 6
        self._buf = ""  # recent normalized text: the context, then the undecided tail
        self._buf_start = 0  # normalized offset of _buf[0]
        self._emitted = 0  # normalized offset of the first undecided character
        self.norm_len = 0
        self.view_len = 0
        # Breakpoints: from view index _bp_view[i] on, norm = view + _bp_delta[i].
        self._bp_view: list[int] = [0]
        self._bp_delta: list[int] = [0]

    def feed(self, norm: str) -> str:
        if not norm:
            return ""
        self._buf += norm
        self.norm_len += len(norm)
        return self._release(self._stable_end())

    def finish(self) -> str:
        """The text has ended: its end closes the last token, every separator is decided."""
        return self._release(len(self._buf))

    @property
    def undecided_from(self) -> int:
        """Normalized offset of the first character whose view is not released yet: a match of
        the view that is still to come starts there or later, or in the released view."""
        return self._emitted

    def norm_index(self, view_index: int) -> int:
        """Normalized offset of the view character ``view_index`` (< ``view_len``)."""
        i = bisect_right(self._bp_view, view_index) - 1
        return view_index + self._bp_delta[max(i, 0)]

    def norm_span(self, view_start: int, view_end: int) -> tuple[int, int]:
        """The normalized span of the view span ``[view_start, view_end)`` (non-empty)."""
        return self.norm_index(view_start), self.norm_index(view_end - 1) + 1

    def forget_before(self, view_index: int) -> None:
        i = bisect_right(self._bp_view, view_index) - 1
        if i > 0:
            del self._bp_view[:i]
            del self._bp_delta[:i]

    def _release(self, cut: int) -> str:
        """Emits the view of ``_buf`` up to ``cut`` (decided) and trims the buffer."""
        buf = self._buf
        pending = self._emitted - self._buf_start
        if cut <= pending:
            return ""
        out = self._collapse(buf, pending, cut)
        self._emitted = self._buf_start + cut
        drop = cut - self._context
        if drop > 0:
            self._buf = buf[drop:]
            self._buf_start += drop
        return out

    def _collapse(self, buf: str, lo: int, hi: int) -> str:
        """The view of ``buf[lo:hi]``: separators inside runs removed, the map updated."""
        pieces: list[str] = []
        pos = lo
        for run_start, run_end in find_runs(buf, self._max_gap):
            if run_end <= lo:
                continue
            if run_start >= hi:
                break
            for sep in _SEPARATORS.finditer(buf, max(run_start, lo), min(run_end, hi)):
                sep_start, sep_end = sep.span()
                pieces.append(buf[pos:sep_start])
                self.view_len += sep_start - pos
                pos = sep_end
                # The next view character comes from normalized offset ``sep_end``.
                self._add_breakpoint(self.view_len, self._buf_start + sep_end - self.view_len)
        pieces.append(buf[pos:hi])
        self.view_len += hi - pos
        return "".join(pieces)

    def _add_breakpoint(self, view_index: int, delta: int) -> None:
        if self._bp_view[-1] == view_index:
            self._bp_delta[-1] = delta
        else:
            self._bp_view.append(view_index)
            self._bp_delta.append(delta)

    def _stable_end(self) -> int:
        """How far into ``_buf`` the view no longer depends on text still to come.

        Only the separators of a run that may still form, grow or end are undecided: the
        trailing separator (or the one before a trailing single letter, which may grow into a
        word) and, while the letters chained before it are fewer than three, theirs too.
        """
        buf = self._buf
        end = len(buf)
        last = end - 1
        if buf[last].isalnum():
            if last > 0 and buf[last - 1].isalnum():
                return end  # a word of two letters or more: the separator before it stays
            open_end = last  # a single letter so far, which may still grow into a word
        else:
            open_end = end  # a trailing separator, which may still sit inside a run
        open_start = self._separator_start(open_end)
        if open_start is None:
            return end
        if open_start < 0:
            return 0
        cut = open_start
        letters = 1
        pos = open_start - 1  # the single letter before the open separator
        while letters < 3:
            sep_start = self._separator_start(pos)
            if sep_start is None:
                break
            if sep_start < 0:
                return 0
            letters += 1
            if letters == 2:
                cut = sep_start  # two letters so far: their separator waits for a third
            pos = sep_start - 1
        return open_start if letters >= 3 else cut

    def _separator_start(self, sep_end: int) -> int | None:
        """Start of the separator that ends at ``sep_end`` if it joins single letters.

        None when it cannot (too wide, no letter before it, the letter before it is part of a
        word): then nothing before ``sep_end`` waits on it. -1 when the buffer is too short to
        tell, which the context makes impossible; callers then decide nothing.
        """
        buf = self._buf
        at_text_start = self._buf_start == 0
        start = sep_end
        while start > 0 and not buf[start - 1].isalnum():
            start -= 1
            if sep_end - start > self._max_gap:
                return None
        if start == sep_end:  # no separator: a letter right before, or the start of the text
            return None if sep_end > 0 or at_text_start else -1
        if start == 0:
            return None if at_text_start else -1
        letter = start - 1
        if letter == 0:
            return start if at_text_start else -1
        if buf[letter - 1].isalnum():
            return None  # part of a word
        return start
