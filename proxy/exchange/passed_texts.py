"""Texts a policy's output shields passed, remembered per policy.

Some upstream text around an answer repeats from reply to reply — response headers
(``Content-Type: application/json``, a server's name), a reply's envelope (``chat.completion``,
the model's name, ``stop``, the usage keys). Checked once and remembered, only what is new in a
reply (a date, a request id) costs a scan. What is remembered is a fact about a text and a
policy — never stale while the policy lives — so the memory is bounded twice and nothing else:
a few policies (a reload makes a new one; the old one's entry ages out) and a few thousand texts
each (the oldest go first). Only texts the shields passed are kept: a flagged one is checked
every time it comes.
"""

from __future__ import annotations

from collections import OrderedDict

from shields.policy import CompiledPolicy

__all__ = ["PassedTexts", "passed_texts"]

_POLICIES_REMEMBERED = 8
_TEXTS_REMEMBERED = 4096
_MAX_TEXT_REMEMBERED = 512  # characters: a longer text is scanned every time, not kept


class PassedTexts:
    """The texts one policy's output shields passed, oldest first."""

    __slots__ = ("policy", "texts")

    def __init__(self, policy: CompiledPolicy) -> None:
        # Held so that ``id(policy)``, the key, cannot be reused by another while this lives.
        self.policy = policy
        self.texts: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, text: str) -> bool:
        return text in self.texts

    def remember(self, texts: list[str]) -> None:
        kept = self.texts
        for text in texts:
            if len(text) <= _MAX_TEXT_REMEMBERED:
                kept[text] = None
        while len(kept) > _TEXTS_REMEMBERED:
            kept.popitem(last=False)


_by_policy: OrderedDict[int, PassedTexts] = OrderedDict()


def passed_texts(policy: CompiledPolicy) -> PassedTexts:
    """The memory of ``policy`` (made on first use)."""
    key = id(policy)
    entry = _by_policy.get(key)
    if entry is None or entry.policy is not policy:
        entry = _by_policy[key] = PassedTexts(policy)
        if len(_by_policy) > _POLICIES_REMEMBERED:
            _by_policy.popitem(last=False)
    else:
        _by_policy.move_to_end(key)
    return entry
