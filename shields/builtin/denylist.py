"""``denylist``: phrases (substring match) and words (whole-word match), in one pass.

All entries of a shield go into one Aho-Corasick automaton (pyahocorasick, in C), so a deny list
of ten thousand entries costs one pass over the text, not ten thousand. The automaton's search
iterator resumes across chunks, so a stream is scanned with no overlap and no re-scan.
"""

from __future__ import annotations

from typing import Any, Literal

import ahocorasick
from pydantic import Field, model_validator

from shields.base import Chunk, Finding, Scanner, Shield
from shields.normalize import StreamNormalizer, normalize
from shields.registry import register
from shields.spec import ShieldSpecBase

__all__ = ["DenylistShield", "DenylistSpec"]


class DenylistSpec(ShieldSpecBase):
    type: Literal["denylist"] = "denylist"
    phrases: list[str] = Field(default_factory=list, max_length=1_000_000)
    words: list[str] = Field(default_factory=list, max_length=1_000_000)

    @model_validator(mode="after")
    def _not_empty(self) -> DenylistSpec:
        if not self.phrases and not self.words:
            raise ValueError("a denylist needs at least one entry in `phrases` or `words`")
        for key in ("phrases", "words"):
            for i, entry in enumerate(getattr(self, key)):
                if not normalize(entry)[0].strip():
                    raise ValueError(f"{key}[{i}]: {entry!r} is empty after normalization")
        return self


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


class DenylistShield(Shield):
    type_name = "denylist"

    def __init__(self, spec: DenylistSpec) -> None:
        super().__init__(spec)
        automaton = ahocorasick.Automaton()
        longest = 0
        # Several entries can normalize to the same key ("Bomb", "bomb"); the first label wins.
        for is_word, entries in ((False, spec.phrases), (True, spec.words)):
            for entry in entries:
                key = normalize(entry)[0].strip()
                if key in automaton:
                    _, _, was_word = automaton.get(key)
                    # A phrase is the weaker condition: it matches wherever the word does.
                    automaton.add_word(key, (entry, len(key), was_word and is_word))
                    continue
                automaton.add_word(key, (entry, len(key), is_word))
                longest = max(longest, len(key) + (1 if is_word else 0))
        automaton.make_automaton()
        self._automaton = automaton
        # A word needs one character of look-ahead to know its right boundary.
        self._max_match = longest
        self._context = longest + 1

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return _DenylistScanner(self)


class _DenylistScanner(Scanner):
    __slots__ = ("_iter", "_pending", "_shield", "_tail", "_tail_start")

    def __init__(self, shield: DenylistShield) -> None:
        self._shield = shield
        self._iter: Any = shield._automaton.iter("")
        # The last few normalized characters, for word-boundary checks on both sides.
        self._tail = ""
        self._tail_start = 0
        # Word matches whose right boundary is the next, not yet seen, character.
        self._pending: list[tuple[int, int, str]] = []

    def feed(self, chunk: Chunk) -> list[Finding]:
        shield = self._shield
        findings: list[Finding] = []
        text = self._tail + chunk.norm
        base = self._tail_start
        end_of_text = chunk.norm_start + len(chunk.norm)
        if self._pending:
            pending, self._pending = self._pending, []
            for start, end, label in pending:
                self._check_word(text, base, start, end, label, end_of_text, findings, chunk)
        if chunk.norm:
            self._iter.set(chunk.norm, False)
            for last, (label, length, is_word) in self._iter:
                start, end = last + 1 - length, last + 1
                if is_word:
                    self._check_word(text, base, start, end, label, end_of_text, findings, chunk)
                else:
                    findings.append(self._found(label, start, end, chunk.normalizer))
        keep = shield._context
        self._tail = text[-keep:] if len(text) > keep else text
        self._tail_start = base + len(text) - len(self._tail)
        return findings

    def _check_word(
        self,
        text: str,
        base: int,
        start: int,
        end: int,
        label: str,
        end_of_text: int,
        findings: list[Finding],
        chunk: Chunk,
    ) -> None:
        if start > 0 and _is_word_char(text[start - 1 - base]):
            return
        if end >= end_of_text:
            self._pending.append((start, end, label))
            return
        if not _is_word_char(text[end - base]):
            findings.append(self._found(label, start, end, chunk.normalizer))

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        pending, self._pending = self._pending, []
        return [self._found(label, start, end, normalizer) for start, end, label in pending]

    def _found(self, label: str, start: int, end: int, normalizer: StreamNormalizer) -> Finding:
        orig_start, orig_end = normalizer.orig_span(start, end)
        return self._shield.finding(label, orig_start, orig_end)


register(DenylistSpec, DenylistShield)
