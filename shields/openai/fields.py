"""One piece of text inside a JSON object (a request's or a reply's), and how to write a
redacted version back into it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shields.openai.channels import Channel

__all__ = ["TextField", "joined_text", "serialize_arguments"]


@dataclass(slots=True)
class TextField:
    """One piece of text inside a JSON object, and where to write a redacted version back."""

    channel: Channel  # which text this piece continues (per choice, per field or call)
    holder: dict[str, Any]
    key: str
    text: str
    json_object: bool = False  # the value is a JSON object, checked in its serialized form

    def write(self, text: str) -> None:
        # ``text`` follows what was written, so later readers (remote shields, which run after
        # the local ones) see the redacted text.
        self.text = text
        if self.json_object:
            try:
                self.holder[self.key] = json.loads(text)
                return
            except ValueError:
                pass  # a redaction broke the JSON: the string form is the honest one
        self.holder[self.key] = text


def joined_text(fields: Sequence[TextField], separator: str = "") -> tuple[str, list[int]]:
    """The fields' texts joined by ``separator`` (one text to scan), and where each starts in
    it (to write a redaction back into each field)."""
    if len(fields) == 1:  # most texts: one field, which starts at 0
        return fields[0].text, [0]
    offsets = []
    start = 0
    for text_field in fields:
        offsets.append(start)
        start += len(text_field.text) + len(separator)
    return separator.join([text_field.text for text_field in fields]), offsets


def serialize_arguments(value: dict[str, Any]) -> str:
    """A JSON object (a tool call's arguments, a tool definition) as the text shields read:
    the JSON a chat template prints, non-ASCII characters as they are."""
    return json.dumps(value, ensure_ascii=False)
