"""The shield interface: typed findings and verdicts, whole-text checks and incremental scanners.

A *shield* is configured once from its policy spec and is immutable. For every text it looks at
it opens a *scanner*: an incremental matcher fed the normalized text chunk by chunk (a stream)
or all at once (a whole-text check — the same code path, so streams and whole texts agree).

A scanner must report a match as soon as the text fed so far contains it, at the latest once
``max_match`` normalized characters past the match's first character have been fed. The stream
guard relies on that: it never holds back more than ``holdback_chars >= max_match``
characters, so nothing a scanner could still report has left the proxy.

Adaptive hold-back: after every feed a scanner also says where its *open candidate* starts,
``Scanner.open_from(end, window)``: the earliest offset at which a finding it may still report
(by a later ``feed`` or by ``finish``) could start, or ``end`` — the end of what it was fed —
when nothing is pending. Offsets are those the scanner matches in: normalized ones, original
ones for ``matches_raw`` shields (as for ``max_match``); ``shields.scan.TextScan`` takes the
smallest over its scanners and maps it to the original text once. The contract is one-sided:
a smaller value than necessary only holds text longer; a larger one would let a match leave.
The default is the fixed window, ``end - window`` with ``window`` the shield's ``max_match``,
which the reporting rule above makes sound for every scanner: a scanner that does not know
better holds exactly what the fixed-window guard held for it. Normalization adds no
look-ahead: the normalized view of a text is defined character by character (see
``shields.normalize``), so a character that arrives later never changes what was emitted
before it (a combining mark or a zero-width character after a letter is dropped, never
composed with it).
"""

from __future__ import annotations

import enum
import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from shields.normalize import StreamNormalizer
    from shields.screen import WholeText
    from shields.spec import ShieldSpecBase

__all__ = [
    "NOTHING_OPEN",
    "Action",
    "Chunk",
    "Finding",
    "OpenAt",
    "Role",
    "Scanner",
    "Shield",
    "Stage",
    "StageShields",
    "Verdict",
    "verdict_of",
]


class Action(enum.StrEnum):
    BLOCK = "block"
    REDACT = "redact"


class Stage(enum.StrEnum):
    INPUT = "input"
    OUTPUT = "output"


class Role(enum.StrEnum):
    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    FUNCTION = "function"


class Verdict(enum.StrEnum):
    ALLOW = "allow"
    REDACT = "redact"
    BLOCK = "block"


@dataclass(frozen=True, slots=True)
class Finding:
    """One match of one shield. ``start``/``end`` are offsets in the ORIGINAL text."""

    shield_id: str
    shield_type: str
    label: str
    action: Action
    start: int
    end: int
    placeholder: str = "[REDACTED]"
    monitor: bool = False  # found by a shield in monitor mode: logged, never enforced
    # A keyed hash of the matched text, for audit trails that must not hold the text itself
    # (set by TextScan when it is given a ``fingerprint`` function).
    digest: str | None = None


def verdict_of(findings: Sequence[Finding]) -> Verdict:
    enforced = [f for f in findings if not f.monitor]
    if any(f.action is Action.BLOCK for f in enforced):
        return Verdict.BLOCK
    if enforced:
        return Verdict.REDACT
    return Verdict.ALLOW


@dataclass(frozen=True, slots=True)
class Chunk:
    """The next piece of one text, in both views. Offsets are global to the text.

    ``normalizer`` has already consumed the chunk: it maps normalized offsets back to original
    ones (``normalizer.orig_span``).
    """

    raw: str
    raw_start: int
    norm: str
    norm_start: int
    normalizer: StreamNormalizer


# ``open_at`` when nothing is open: larger than any offset.
NOTHING_OPEN = 1 << 62


class OpenAt(Protocol):
    """What keeps an open candidate up to date as a scanner is fed (``Scanner.track_open``):
    the scanner itself, or a part of it."""

    open_at: int


class Scanner(ABC):
    """Incremental matcher over one text (one message, or one channel of a stream)."""

    @abstractmethod
    def feed(self, chunk: Chunk) -> list[Finding]:
        """Consumes the next chunk; returns the findings it completes, in original offsets."""

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        """The text has ended: report matches that were waiting for more text."""
        return []

    def open_from(self, end: int, window: int) -> int:
        """Where the earliest finding this scanner may still report could start (see the
        module docstring); ``end`` when none can start before the text fed so far ends.

        ``end`` is the length of the text fed so far and ``window`` the shield's
        ``max_match``, in the scanner's offsets. Called after a feed, never after
        ``finish``. This default is the fixed window: sound for every scanner that keeps the
        ``max_match`` promise, and as tight as the stream guard used to be.
        """
        return end - window

    def track_open(self) -> Sequence[OpenAt]:
        """Asks the scanner to keep its open candidate up to date in every ``feed`` from now on
        (it has not been fed yet); returns what holds it then, in ``open_at``: what
        ``open_from`` would answer after the last feed (the smallest over them, when the
        scanner returns several parts), or ``NOTHING_OPEN`` for the end of the text. Empty:
        the scanner cannot, and ``open_from`` is asked instead.

        The adaptive hold-back needs every scanner's open candidate after every feed of a
        stream, a token at a time: a call per scanner and token is a measurable part of a
        stream's cost, which a scanner that works its candidate out as it feeds (often from
        what it just did) saves. Whole texts and the fixed window never ask: they pay nothing.
        """
        return ()


class Shield(ABC):
    """A configured shield. Subclasses register themselves in ``shields.registry``."""

    type_name: ClassVar[str]
    # Whether what the shield finds depends on the characters of a text, not only on its size:
    # such shields check a text again after a redaction changed it (a stripped character can
    # join a token). A size limit reads the client's text; a truncation's placeholder would
    # only trip it again.
    reads_content: ClassVar[bool] = True

    def __init__(self, spec: ShieldSpecBase) -> None:
        self.spec = spec
        # True for shields that look at the original text rather than the normalized view (a
        # case-sensitive secret format, say); their ``max_match`` then counts original chars.
        self.matches_raw = False
        self.id = spec.id
        self.action = Action(spec.action)
        self.monitor = spec.mode == "monitor"

    @property
    @abstractmethod
    def max_match(self) -> int:
        """The longest stretch from a match's first character to the last character the
        scanner must see to report it (look-ahead included), counted in normalized characters
        (original ones for ``matches_raw`` shields)."""

    @abstractmethod
    def scanner(self) -> Scanner:
        """A fresh scanner for one text."""

    @property
    def adaptive_holdback(self) -> bool:
        """Whether the shield's scanners bound their open candidate more tightly than the
        fixed ``max_match`` window (``Scanner.open_from``). Those that do not hold
        ``max_match`` characters of every stream: worth knowing when tuning a policy."""
        return type(self.scanner()).open_from is not Scanner.open_from

    def screen(self, text: WholeText) -> bool:
        """Whether a fresh scan of the whole ``text`` by this shield may report a finding.

        False is a promise: such a scan (``feed`` of the whole text, then ``finish``) reports
        nothing, so a whole-text check may leave the shield out (``shields.screen``). A shield
        answers False only when a few cheap searches prove it; this default always scans."""
        return True

    def check_request(self, messages: Sequence[tuple[Role, str]]) -> list[Finding]:
        """Request-wide checks at the input stage (message counts, total size...).

        Called once per request with every message's role and text, besides the per-text
        scanners. Findings here have no span (0, 0). Most shields need nothing here.
        """
        return []

    def applies_to(self, role: Role | None) -> bool:
        roles = self.spec.roles
        return roles is None or role is None or role in roles

    def error_finding(self) -> Finding:
        """The finding of a shield that failed under fail-closed: a block without a span."""
        return Finding(
            shield_id=self.id,
            shield_type=self.type_name,
            label="shield_error",
            action=Action.BLOCK,
            start=0,
            end=0,
            monitor=self.monitor,
        )

    def finding(self, label: str, start: int, end: int) -> Finding:
        return Finding(
            shield_id=self.id,
            shield_type=self.type_name,
            label=label,
            action=self.action,
            start=start,
            end=end,
            placeholder=self.spec.placeholder,
            monitor=self.monitor,
        )


class StageShields(tuple[Shield, ...]):
    """A stage's local shields, as a policy compiles them: a tuple that also says whether
    whole texts are decoded (``shields.decode``) before those shields read them.

    The setting travels with the shields because every whole-text check — the proxy's
    input stage, non-stream replies, ``shieldgate scan`` and ``test`` — is handed the
    stage's shields and nothing else of the policy. A list built from them (a subset) is a
    plain sequence again: it decodes nothing.
    """

    decode: bool
    # Which build of a stage this is, never reused in a process: what a stage's shields found
    # in a text is remembered under it (``shields.openai.input_cache``), so the outcomes of a
    # policy that a reload replaced never answer for its successor.
    serial: int

    def __new__(cls, shields: Iterable[Shield] = (), *, decode: bool = False) -> StageShields:
        self = super().__new__(cls, shields)
        self.decode = decode
        self.serial = next(_SERIALS)
        return self


_SERIALS = itertools.count()
