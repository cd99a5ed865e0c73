"""A Hugging Face-style sequence classifier exported to ONNX: loading, windows, inference.

A model directory as ``optimum-cli export onnx --task text-classification`` writes it:
``model.onnx`` (or the file the policy names), ``tokenizer.json`` (a ``tokenizers`` tokenizer)
and ``config.json`` with ``id2label``; ``tokenizer_config.json``'s ``model_max_length``, when
there, bounds a window. Everything here is synchronous and safe to call from several threads at
once: ``shields.builtin.classifier_engine`` calls it on its worker threads, never on an event
loop. Importing this module imports onnxruntime, tokenizers and numpy — the ``classifier``
extra — so ``shields.builtin.classifier`` imports it only when a policy uses the type.

Long texts are cut into windows of the model's maximum length, each overlapping the one before
by ``overlap`` tokens (the tokenizer's own overflow, as ``return_overflowing_tokens`` does in
``transformers``), and every window is scored; a window's span is its characters in the text.

A load problem raises ``ClassifierLoadError`` (a ``ValueError``, so a policy load reports it at
the shield's key path) naming the file or label at fault.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray
from tokenizers import Encoding, Tokenizer

from shields.builtin.classifier_engine import Window

__all__ = [
    "ClassifierLoadError",
    "ClassifierModel",
    "ClassifierRunError",
    "ModelOptions",
    "load_model",
]

# Inputs an exported text classifier may take; anything else is not a model this code can feed.
_TEXT_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
_INT_TYPES: dict[str, type[np.signedinteger[Any]]] = {
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
}
# Output names that already hold probabilities (a graph ending in Softmax or Sigmoid); HF
# exports name raw scores ``logits``.
_PROBABILITY_OUTPUTS = frozenset({"probabilities", "probs", "scores", "probability"})
_PAD_TOKENS = ("[PAD]", "<pad>", "<|pad|>")
# tokenizer_config.json says 1e30 when the tokenizer itself has no limit.
_NO_LIMIT = 1_000_000
_DEFAULT_MAX_LENGTH = 512
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MESSAGE_LIMIT = 300


class ClassifierLoadError(ValueError):
    """The model directory cannot be used; the message says which file or label and why."""


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """How to load and cut texts for one model (from the shield's spec)."""

    directory: str
    file: str = "model.onnx"
    scores: Literal["auto", "logits", "probabilities"] = "auto"
    max_length: int | None = None
    overlap: int = 64
    threads: int = 0  # onnxruntime's intra-op threads; 0: its default (the physical cores)


@dataclass(frozen=True, slots=True)
class ClassifierModel:
    """A loaded model. ``labels`` in the model's output order (``id2label``)."""

    name: str
    labels: tuple[str, ...]
    max_length: int
    tokenizer: Tokenizer
    session: ort.InferenceSession
    inputs: tuple[tuple[str, type[np.signedinteger[Any]]], ...]
    output: str
    activation: Literal["softmax", "sigmoid", "none"]
    pad_id: int
    fixed_batch: int | None  # a batch dimension fixed in the graph (exports with static shapes)
    fixed_length: int | None

    def windows(self, text: str) -> list[Window]:
        """``text`` as the windows the model scores, in order (at least one)."""
        # A lone surrogate (possible in a JSON string) cannot cross into Rust; the same-length
        # replacement keeps every offset.
        clean = _LONE_SURROGATE.sub("\ufffd", text)
        # encode_batch lets go of the GIL while it works, encode does not.
        first = self.tokenizer.encode_batch([clean])[0]
        return [_window(e, len(clean)) for e in (first, *first.overflowing)]

    def scores(self, windows: Sequence[Window]) -> NDArray[np.float32]:
        """Scores in [0, 1], one row per window, one column per label. Raises
        ``ClassifierRunError`` when the model's answer is not such a matrix."""
        rows: list[NDArray[np.float32]] = []
        step = self.fixed_batch or len(windows)
        for first in range(0, len(windows), step):
            rows.append(self._run(windows[first : first + step]))
        return np.concatenate(rows) if len(rows) > 1 else rows[0]

    def _run(self, windows: Sequence[Window]) -> NDArray[np.float32]:
        length = self.fixed_length or max(len(w.ids) for w in windows)
        batch = self.fixed_batch or len(windows)
        ids = np.full((batch, length), self.pad_id, dtype=np.int64)
        mask = np.zeros((batch, length), dtype=np.int64)
        type_ids = np.zeros((batch, length), dtype=np.int64)
        for row, window in enumerate(windows):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = 1
            type_ids[row, : len(window.type_ids)] = window.type_ids
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": type_ids}
        feed = {name: arrays[name].astype(dtype, copy=False) for name, dtype in self.inputs}
        try:
            (raw,) = self.session.run([self.output], feed)
        except Exception as exc:  # onnxruntime raises its own (untyped) exceptions
            raise ClassifierRunError(f"inference failed: {_short(exc)}") from None
        out = np.asarray(raw)
        if out.ndim != 2 or out.shape[0] != batch or out.shape[1] != len(self.labels):
            raise ClassifierRunError(
                f"the model answered a {list(out.shape)} tensor, not [{batch}, "
                f"{len(self.labels)}] (one score per label of config.json's id2label)"
            )
        scores = _activate(out[: len(windows)].astype(np.float32), self.activation)
        if not np.all(np.isfinite(scores)):
            raise ClassifierRunError("the model answered a score that is not a number")
        return scores


class ClassifierRunError(Exception):
    """Inference failed or answered something that is not one score per label and window."""


def load_model(options: ModelOptions) -> ClassifierModel:
    """Loads and checks a model directory; raises ``ClassifierLoadError``."""
    directory = Path(os.path.expanduser(options.directory))
    if not directory.is_dir():
        raise ClassifierLoadError(f"model directory {str(directory)!r} does not exist")
    config = _json_file(directory / "config.json", required=True)
    labels = _labels(config, directory / "config.json")
    tokenizer_config = _json_file(directory / "tokenizer_config.json", required=False)
    tokenizer = _tokenizer(directory / "tokenizer.json")
    session = _session(directory / options.file, options.threads)
    inputs = _inputs(session, directory / options.file)
    output, fixed_width = _output(session, directory / options.file)
    if fixed_width is not None and fixed_width != len(labels):
        raise ClassifierLoadError(
            f"{directory / options.file} answers {fixed_width} scores, but config.json's "
            f"id2label names {len(labels)} labels"
        )
    ids_shape = next(arg.shape for arg in session.get_inputs() if arg.name == "input_ids")
    fixed_batch = ids_shape[0] if isinstance(ids_shape[0], int) and ids_shape[0] > 0 else None
    fixed_length = ids_shape[1] if isinstance(ids_shape[1], int) and ids_shape[1] > 0 else None
    max_length = _max_length(options, config, tokenizer_config, fixed_length)
    _set_windows(tokenizer, max_length, options.overlap)
    return ClassifierModel(
        name=directory.resolve().name,
        labels=labels,
        max_length=max_length,
        tokenizer=tokenizer,
        session=session,
        inputs=inputs,
        output=output,
        activation=_activation(options.scores, output, config),
        pad_id=_pad_id(tokenizer),
        fixed_batch=fixed_batch,
        fixed_length=fixed_length,
    )


def _window(encoding: Encoding, length: int) -> Window:
    spans = [
        span
        for span, special in zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
        if not special
    ]
    start = min((s for s, _ in spans), default=0)
    end = max((e for _, e in spans), default=length)
    return Window(tuple(encoding.ids), tuple(encoding.type_ids), start, max(start, end))


def _activate(
    raw: NDArray[np.float32], activation: Literal["softmax", "sigmoid", "none"]
) -> NDArray[np.float32]:
    if activation == "softmax":
        shifted = np.exp(raw - raw.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]
    if activation == "sigmoid":
        return (1.0 / (1.0 + np.exp(-raw))).astype(np.float32)
    return raw


def _json_file(path: Path, *, required: bool) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not required:
            return {}
        raise ClassifierLoadError(
            f"{path} is missing (a Hugging Face export has model.onnx, tokenizer.json and "
            f"config.json)"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ClassifierLoadError(f"cannot read {path}: {_short(exc)}") from None
    if not isinstance(value, dict):
        raise ClassifierLoadError(f"{path} is not a JSON object")
    return value


def _labels(config: dict[str, Any], path: Path) -> tuple[str, ...]:
    id2label = config.get("id2label")
    if not isinstance(id2label, dict) or not id2label:
        raise ClassifierLoadError(f"{path} has no id2label (the names of the model's outputs)")
    try:
        by_id = {int(key): value for key, value in id2label.items()}
    except ValueError:
        raise ClassifierLoadError(f"{path}: id2label's keys are not output indices") from None
    if sorted(by_id) != list(range(len(by_id))) or not all(
        isinstance(v, str) and v for v in by_id.values()
    ):
        raise ClassifierLoadError(
            f"{path}: id2label must name every output 0..{len(by_id) - 1} with a string"
        )
    labels = tuple(by_id[i] for i in range(len(by_id)))
    if len(set(labels)) != len(labels):
        raise ClassifierLoadError(f"{path}: id2label names one label twice")
    return labels


def _tokenizer(path: Path) -> Tokenizer:
    if not path.is_file():
        raise ClassifierLoadError(
            f"{path} is missing (the model's `tokenizers` tokenizer; optimum-cli writes it)"
        )
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a bad file
        raise ClassifierLoadError(f"cannot load {path}: {_short(exc)}") from None


def _session(path: Path, threads: int) -> ort.InferenceSession:
    if not path.is_file():
        raise ClassifierLoadError(f"{path} is missing (the ONNX model)")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    # One graph at a time per call: the engine already runs batches, not many small calls.
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # onnxruntime's own warnings go to stderr otherwise
    # Idle inference threads sleep instead of spinning: between runs the cores belong to the
    # event loop and the other shields.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's exception types are not importable portably
        raise ClassifierLoadError(f"cannot load {path}: {_short(exc)}") from None


def _inputs(
    session: ort.InferenceSession, path: Path
) -> tuple[tuple[str, type[np.signedinteger[Any]]], ...]:
    inputs = []
    for arg in session.get_inputs():
        if arg.name not in _TEXT_INPUTS:
            raise ClassifierLoadError(
                f"{path} takes an input {arg.name!r}; a text classifier takes input_ids, "
                f"attention_mask and perhaps token_type_ids"
            )
        dtype = _INT_TYPES.get(arg.type)
        if dtype is None or len(arg.shape) != 2:
            raise ClassifierLoadError(
                f"{path}: input {arg.name!r} is a {arg.type} of shape {arg.shape}, not a "
                f"matrix of integers [batch, tokens]"
            )
        inputs.append((arg.name, dtype))
    names = {name for name, _ in inputs}
    if not {"input_ids", "attention_mask"} <= names:
        raise ClassifierLoadError(
            f"{path} must take input_ids and attention_mask (texts of different lengths are "
            f"batched together, padded and masked)"
        )
    return tuple(inputs)


def _output(session: ort.InferenceSession, path: Path) -> tuple[str, int | None]:
    outputs = session.get_outputs()
    first = outputs[0]
    if len(first.shape) != 2:
        raise ClassifierLoadError(
            f"{path}: its first output {first.name!r} has shape {first.shape}, not [batch, labels]"
        )
    width = first.shape[1]
    return first.name, width if isinstance(width, int) and width > 0 else None


def _activation(
    scores: Literal["auto", "logits", "probabilities"], output: str, config: dict[str, Any]
) -> Literal["softmax", "sigmoid", "none"]:
    if scores == "probabilities" or (scores == "auto" and output in _PROBABILITY_OUTPUTS):
        return "none"
    if scores == "auto" and output != "logits":
        raise ClassifierLoadError(
            f"the model's output is named {output!r}: say whether it holds `logits` or "
            f"`probabilities` (the shield's `scores` setting)"
        )
    # HF's rule: a multi-label head scores each label on its own.
    multi = config.get("problem_type") == "multi_label_classification"
    return "sigmoid" if multi else "softmax"


def _max_length(
    options: ModelOptions,
    config: dict[str, Any],
    tokenizer_config: dict[str, Any],
    fixed: int | None,
) -> int:
    if options.max_length is not None:
        length = options.max_length
    else:
        candidates = [
            value
            for value in (
                tokenizer_config.get("model_max_length"),
                config.get("max_position_embeddings"),
            )
            if isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and 0 < value < _NO_LIMIT
        ]
        length = int(candidates[0]) if candidates else _DEFAULT_MAX_LENGTH
    if fixed is not None:
        length = min(length, fixed)
    return length


def _set_windows(tokenizer: Tokenizer, max_length: int, overlap: int) -> None:
    # The policy decides windows, not whatever truncation or padding the export saved.
    tokenizer.no_padding()
    special = tokenizer.num_special_tokens_to_add(is_pair=False)
    room = max_length - special
    if room < 2:
        raise ClassifierLoadError(
            f"max_length {max_length} leaves no room for text beside the model's {special} "
            f"special tokens"
        )
    # The tokenizer refuses a stride that is not shorter than a window's text.
    stride = min(overlap, room // 2)
    tokenizer.enable_truncation(max_length, stride=stride, strategy="longest_first")


def _pad_id(tokenizer: Tokenizer) -> int:
    for token in _PAD_TOKENS:
        found = tokenizer.token_to_id(token)
        if found is not None:
            return found
    return 0  # masked out: any id the embedding table has will do


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first[:_MESSAGE_LIMIT]
