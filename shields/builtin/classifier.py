"""``classifier``: a local sequence-classification model (ONNX) as an awaited shield.

A Hugging Face text classifier exported to ONNX — Meta's Prompt Guard 2, ProtectAI's DeBERTa-v3
prompt-injection model, a toxicity classifier of the same shape — loaded from a directory the
policy names (``model``: ``model.onnx``, ``tokenizer.json``, ``config.json`` with ``id2label``)
and run in the proxy's process, without a model server. It needs the ``classifier`` extra
(onnxruntime, tokenizers); without it a policy that uses the type fails to load, saying what to
install, and the rest of shieldgate never imports them.

It is a ``RemoteShield`` though nothing is remote: like a judge it is awaited on whole texts,
never fed chunk by chunk, so it shares everything remote shields have — the per-shield
``timeout`` and ``on_error`` (fail closed by default), the verdict cache, the stream checkpoints
(``stream.every_chars``, ``release: after_check | immediately``), the input stage's turns and the
reply's channels. The model runs on the engine's worker threads with micro-batching
(``shields.builtin.classifier_engine``), never on an event loop.

``labels`` says which of the model's labels count and from which score (a label -> threshold
map, checked against ``id2label`` when the policy loads). A long text is scored window by window
(the model's maximum length, ``overlap`` tokens shared between neighbours); a label's score is
its highest in any window, and its finding's span is that window. The verdict depends on the
judged text alone, not on the conversation around it, and is cached by it.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from shields.base import Finding
from shields.builtin.classifier_engine import ClassifierEngine, EngineOverloaded, WindowScores
from shields.builtin.classifier_engine import shared_engine as _shared_engine
from shields.registry import register
from shields.remote import (
    JudgeRequest,
    RemoteAnswerError,
    RemoteBackends,
    RemoteCallError,
    RemoteShield,
    RemoteSpec,
    Vote,
)

__all__ = ["EXTRA", "ClassifierShield", "ClassifierSpec"]

EXTRA = "pip install 'shieldgate[classifier]'"


class ClassifierSpec(RemoteSpec):
    type: Literal["classifier"]
    # The exported model's directory (absolute, or relative to the working directory).
    model: str = Field(min_length=1, max_length=4096)
    # The ONNX file in it: optimum writes model.onnx; a quantized export another name.
    file: str = Field(default="model.onnx", pattern=r"^[^/\\]+\.onnx$", max_length=255)
    # The labels that count (as config.json's id2label names them) and the score from which
    # each does: {INJECTION: 0.9, JAILBREAK: 0.8}.
    labels: dict[str, float] = Field(min_length=1, max_length=1000)
    # What the model's output holds; auto: an output named ``logits`` (HF's name) is logits,
    # ``probabilities``/``probs``/``scores`` probabilities, anything else must be said.
    scores: Literal["auto", "logits", "probabilities"] = "auto"
    # Tokens per window, special tokens included; unset: tokenizer_config.json's
    # model_max_length, else config.json's max_position_embeddings, else 512.
    max_length: int | None = Field(default=None, ge=4, le=32768)
    # Tokens a window shares with the one before (at most half a window's text).
    overlap: int = Field(default=64, ge=0, le=16384)
    # Micro-batching: a worker collects texts for up to batch_wait_ms, or until it holds
    # batch_size windows, and scores batch_size windows per inference run.
    batch_size: int = Field(default=8, ge=1, le=512)
    batch_wait_ms: float = Field(default=2.0, ge=0, le=100)
    # Worker threads of the model (each runs one batch at a time), and onnxruntime's threads
    # per run (0: its default, the physical cores).
    workers: int = Field(default=1, ge=1, le=32)
    threads: int = Field(default=0, ge=0, le=256)
    # Texts that may wait for a worker; past that a check fails at once (on_error decides).
    max_queue: int = Field(default=256, ge=1, le=100_000)
    # Nothing to retry: a local model that failed fails again.
    retries: int = Field(default=0, ge=0, le=0)

    @field_validator("labels")
    @classmethod
    def _thresholds(cls, value: dict[str, float]) -> dict[str, float]:
        for label, threshold in value.items():
            if not label:
                raise ValueError("a label cannot be empty")
            if not (math.isfinite(threshold) and 0 < threshold <= 1):
                raise ValueError(f"the threshold of {label!r} must be in (0, 1]")
        return value


class ClassifierShield(RemoteShield):
    type_name = "classifier"
    spec: ClassifierSpec

    def __init__(self, spec: ClassifierSpec) -> None:
        super().__init__(spec)
        self.spec = spec
        self.engine = _engine(spec)
        labels = self.engine.model.labels
        unknown = [label for label in spec.labels if label not in labels]
        if unknown:
            raise ValueError(
                f"labels: {', '.join(map(repr, unknown))} "
                f"{'is not a label' if len(unknown) == 1 else 'are not labels'} of the model "
                f"in {spec.model!r} (config.json's id2label: {', '.join(labels)})"
            )
        self._counted = tuple(
            (labels.index(label), label, threshold) for label, threshold in spec.labels.items()
        )

    async def check(self, request: JudgeRequest, backends: RemoteBackends) -> list[Finding]:
        # The model reads the judged text alone: the conversation around it changes nothing,
        # so it is left out of the verdict cache's key too.
        return await super().check(replace(request, conversation=()), backends)

    async def judge(self, request: JudgeRequest, backends: RemoteBackends) -> list[Vote]:
        try:
            windows = await self.engine.classify(request.text)
        except EngineOverloaded as exc:
            raise RemoteCallError(str(exc), retryable=False, kind="overloaded") from None
        except (RemoteCallError, RemoteAnswerError):
            raise
        except Exception as exc:
            # What the model or tokenizer raised (``ClassifierRunError`` and the libraries'
            # own): an answer that cannot be read, which fails closed like a judge's.
            raise RemoteAnswerError(f"classifier {self.id}: {exc}") from None
        return self.votes(windows)

    def votes(self, windows: list[WindowScores]) -> list[Vote]:
        """A vote per counted label whose highest window score reaches its threshold, with
        that window as its span."""
        votes = []
        for index, label, threshold in self._counted:
            best = max(windows, key=lambda window: window.scores[index])
            if best.scores[index] >= threshold:
                votes.append(Vote(label, self.action, span=(best.start, best.end)))
        return votes


def _engine(spec: ClassifierSpec) -> ClassifierEngine:
    """The engine of ``spec``'s model, shared with every shield that loads the same files
    with the same settings (a policy reload reuses it while the old policy lives)."""
    try:
        # Imported only now: it brings the extra's libraries, which a policy without
        # classifiers never needs.
        from shields.builtin.classifier_model import ModelOptions, load_model
    except ImportError as exc:
        missing = (exc.name or "onnxruntime").split(".")[0]
        raise ValueError(
            f"the classifier shield needs {missing}, which is not installed: {EXTRA}"
        ) from None
    options = ModelOptions(
        directory=spec.model,
        file=spec.file,
        scores=spec.scores,
        max_length=spec.max_length,
        overlap=spec.overlap,
        threads=spec.threads,
    )
    key = (
        _files_key(spec),
        options,
        spec.batch_size,
        spec.batch_wait_ms,
        spec.workers,
        spec.max_queue,
    )

    def build() -> ClassifierEngine:
        return ClassifierEngine(
            load_model(options),
            batch_size=spec.batch_size,
            batch_wait=spec.batch_wait_ms / 1000,
            workers=spec.workers,
            max_queue=spec.max_queue,
        )

    return _shared_engine(key, build)


def _files_key(spec: ClassifierSpec) -> tuple[object, ...]:
    """The model's files as they are now: a file replaced on disk is a different model."""
    directory = Path(os.path.expanduser(spec.model))
    stats: list[object] = [str(directory.resolve())]
    for name in (spec.file, "tokenizer.json", "config.json", "tokenizer_config.json"):
        try:
            found = (directory / name).stat()
            stats.append((name, found.st_size, found.st_mtime_ns, found.st_ino))
        except OSError:
            stats.append((name, None))
    return tuple(stats)


register(ClassifierSpec, ClassifierShield)
