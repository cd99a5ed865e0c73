"""Screens for whole texts: which of a stage's shields provably find nothing in a text.

A whole-text check (a non-stream reply, a request's message) sets up a ``TextScan``: a
normalizer and a scanner per shield, each walking the text in Python with its stream
bookkeeping (tails, pending words, hold-back). On a short reply that set-up and bookkeeping cost
more than the searches themselves: some 40 µs for the default output shields on 600 characters
of prose, most of the proxy's own work on a non-stream request.

Most texts hold nothing any shield is looking for, and a shield can often tell that from a
search or two in C: no character outside ASCII (nothing invisible), no place where a URL may
start, no secret rule's trigger, no deny-list key in the views the deny list reads. A shield
says so in ``Shield.screen``: False only when a fresh scan of the whole text by that shield
would report nothing at all — never a guess — and True whenever it may, or cannot tell.
``screened`` keeps the shields that may find something, in their order, and the check scans the
text with those alone: a shield's findings do not depend on the other shields of the scan, so
the findings are those of the full scan, in the same order (``tests/shields/test_screen.py``
compares the two on texts made to come close to every screen).

The views a screen reads are those its scanner reads, computed once per text for all screens
and only when a screen asks (``WholeText``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from shields.base import Role, Shield, StageShields
from shields.normalize import StreamNormalizer

__all__ = ["WholeText", "screened"]


class WholeText:
    """One whole text as screens read it: ``raw``, and views computed on first use."""

    __slots__ = ("_ascii", "_normalized", "raw")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._ascii: bytes | None = None
        self._normalized: tuple[str, StreamNormalizer] | None = None

    @property
    def ascii(self) -> bytes:
        """The text as the shields that search it with RE2 read it: one byte per character,
        every non-ASCII one as ``?`` (``str.encode("ascii", "replace")``)."""
        view = self._ascii
        if view is None:
            raw = self.raw
            view = self._ascii = (
                raw.encode("ascii") if raw.isascii() else raw.encode("ascii", "replace")
            )
        return view

    def normalized(self) -> tuple[str, StreamNormalizer]:
        """The normalized view of the whole text, as a scan's first feed makes it, and the
        normalizer that made it (its ``overridden`` stretches, its ``ascii_view``)."""
        normalized = self._normalized
        if normalized is None:
            normalizer = StreamNormalizer()
            normalized = self._normalized = (normalizer.feed(self.raw), normalizer)
        return normalized


# Per shield class: whether its ``screen`` speaks for its scanner (``_screens``).
_SCREENS: dict[type[Shield], bool] = {}


def _screens(cls: type[Shield]) -> bool:
    """Whether the class's ``screen`` was written for the scanner it makes: both come from
    the same class. A subclass that makes other scanners (a plugin deriving from a built-in
    shield, say) is scanned whatever its parent's screen would say."""
    known = _SCREENS.get(cls)
    if known is None:
        owners = [next(c for c in cls.__mro__ if name in vars(c)) for name in ("screen", "scanner")]
        known = _SCREENS[cls] = owners[0] is owners[1] and owners[0] is not Shield
    return known


_Screen = Callable[[WholeText], bool]


@lru_cache(maxsize=256)
def _plan(
    shields: tuple[Shield, ...], role: Role | None
) -> tuple[tuple[Shield, _Screen | None], ...]:
    """The shields that apply to ``role``, each with its screen (None: always scanned),
    worked out once per stage and role (a stage's shields are immutable)."""
    return tuple(
        (shield, shield.screen if _screens(type(shield)) else None)
        for shield in shields
        if shield.applies_to(role)
    )


def screened(shields: Sequence[Shield], text: str, role: Role | None) -> Sequence[Shield]:
    """The shields of ``shields`` that apply to ``role`` and may find something in the whole
    ``text``, in their order: ``shields`` itself when none can be left out.

    A stage that decodes (``StageShields.decode``) is not screened: its decoding shield reads
    what the text's encoded runs decode to, which no screen of the text itself speaks for.
    A screen that fails keeps its shield, and so does a shield whose scanner is not the one
    its screen was written for (``_screens``): the scan then runs, and fails closed if it
    fails, as it would have.
    """
    if not shields or (isinstance(shields, StageShields) and shields.decode):
        return shields
    # A plain tuple as the key: a stage that decodes compares equal to one of the same shields.
    plan = _plan(tuple(shields), role)
    whole = WholeText(text)
    kept: list[Shield] = []
    for shield, screen in plan:
        if screen is not None:
            try:
                if not screen(whole):
                    continue
            except Exception:
                pass  # kept: its scan says what it finds, or fails closed
        kept.append(shield)
    if len(kept) == len(shields):
        return shields
    # A tuple: a scan works out what it needs of a tuple of shields once (``shields.scan``).
    return tuple(kept)
