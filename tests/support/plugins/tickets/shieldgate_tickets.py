"""``tickets``: internal ticket references ("OPS-1234") of the projects a policy lists.

A complete shield plugin (docs/library.md walks through it): a spec, a shield, a streaming
scanner, and the ``ShieldType`` that the ``shieldgate.shields`` entry point names.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from shields import Chunk, Finding, Scanner, Shield, ShieldSpecBase, ShieldType, StreamNormalizer


class TicketsSpec(ShieldSpecBase):
    type: Literal["tickets"] = "tickets"
    placeholder: str = Field(default="[TICKET]", max_length=200)
    projects: list[str] = Field(min_length=1)  # the project keys: OPS, SEC, ...
    max_digits: int = Field(default=6, ge=1, le=12)


class TicketsShield(Shield):
    type_name = "tickets"

    def __init__(self, spec: TicketsSpec) -> None:
        super().__init__(spec)
        for project in spec.projects:
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", project):
                # A ValueError becomes a policy load error at this shield's key path.
                raise ValueError(f"a project key is letters and digits: {project!r}")
        # Scanners read the normalized text: casefolded, confusable dashes and digits folded.
        keys = "|".join(re.escape(p.casefold()) for p in spec.projects)
        self.pattern = re.compile(rf"\b(?:{keys})-[0-9]{{1,{spec.max_digits}}}\b")
        # A match is reported once the character after it is seen (it may have more digits).
        self._max_match = max(map(len, spec.projects)) + 1 + spec.max_digits + 1

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return TicketsScanner(self)


# Where the normalized text ends with letters, digits and dashes: what a match is made of.
_TRAILING_RUN = re.compile(r"[a-z0-9-]*\Z")


class TicketsScanner(Scanner):
    """Searches each chunk together with the last ``max_match`` characters before it."""

    def __init__(self, shield: TicketsShield) -> None:
        self._shield = shield
        self._tail = ""  # the end of the text fed so far: matches may cross chunks

    def feed(self, chunk: Chunk) -> list[Finding]:
        text = self._tail + chunk.norm
        base = chunk.norm_start - len(self._tail)  # the offset of text[0] in the whole text
        found = []
        for match in self._shield.pattern.finditer(text):
            # Reported when the character after the match is new: the previous feed reported
            # those followed by a character it had; one at the end waits for the next feed.
            if len(self._tail) <= match.end() < len(text):
                found.append(self._finding(match, base, chunk.normalizer))
        self._tail = text[-self._shield.max_match :]
        return found

    def open_from(self, end: int, window: int) -> int:
        # Optional (the default holds ``max_match`` characters): a match still to come lies in
        # the run of letters, digits and dashes the text ends with, so a stream holds that run.
        run = _TRAILING_RUN.search(self._tail)
        assert run is not None  # the pattern matches the empty string at the end
        return end - (len(self._tail) - run.start())

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        # The text ended: a match at its very end is complete now.
        base = normalizer.norm_len - len(self._tail)
        return [
            self._finding(match, base, normalizer)
            for match in self._shield.pattern.finditer(self._tail)
            if match.end() == len(self._tail)
        ]

    def _finding(self, match: re.Match[str], base: int, normalizer: StreamNormalizer) -> Finding:
        start, end = normalizer.orig_span(base + match.start(), base + match.end())
        return self._shield.finding("ticket", start, end)


SHIELD_TYPE = ShieldType(TicketsSpec, TicketsShield)
