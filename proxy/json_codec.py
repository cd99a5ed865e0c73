"""The proxy's JSON codec is the library's (``shields.json_codec``): requests, replies, stored
responses and error bodies are read by the same decoder the offline tools use."""

from __future__ import annotations

from shields.json_codec import MAX_DEPTH, DuplicateKey, InvalidJSON, dumps, go_fold, loads

__all__ = ["MAX_DEPTH", "DuplicateKey", "InvalidJSON", "dumps", "go_fold", "loads"]
