"""Constants the tests share: the repository's paths, and facts of the shipped default policy
that many tests lean on (change them here, and in ``policies/default.yaml``, together)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
POLICIES = REPO_ROOT / "policies"
# The public dev data beside the project (``../shared/eval``); tests using it skip without it.
EVAL_DATA = REPO_ROOT.parent / "shared" / "eval"

# ``shieldgate`` run as a module, as the console script runs it.
MODULE = (sys.executable, "-m", "proxy")

# policies/default.yaml: its refusal message, an input and output deny-list phrase, and an
# output-only one.
REFUSAL = "I'm sorry, but I can't help with that."
BANNED = "build a bomb"
BANNED_OUT = "synthesize sarin"

# The scripted upstream's model name and a harmless conversation.
MODEL = "fake-model"
USER = [{"role": "user", "content": "Say hello"}]

# The last event of an OpenAI-compatible stream, as it is written on the wire.
DONE = b"data: [DONE]\n\n"
