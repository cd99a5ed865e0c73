"""A small, real text classifier for tests and the bench: an ONNX graph made with the ``onnx``
helper API, a ``tokenizers`` WordLevel tokenizer and a ``config.json``, laid out as
``optimum-cli export onnx --task text-classification`` lays out a Hugging Face model.

The graph is a bag of words: each token's embedding (``Gather``), optionally through ``layers``
ReLU(x·I) layers of width ``hidden`` (the identity keeps the answers the same and only makes
inference cost more: a slow model without mocking anything), the mean over the tokens the
attention mask keeps, then a linear head (``MatMul`` + ``Add``) to one logit per label, with a
``Softmax`` at the end when ``output="probabilities"``. Embeddings are chosen so the answers
are known: ordinary words and unknown ones weigh 1 on the first label (``SAFE``); each trigger
word weighs ``TRIGGER_WEIGHT`` on its own label, so one trigger decides any window of up to a
few dozen tokens, and is lost in the mean of a few thousand.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

__all__ = [
    "BENIGN_WORDS",
    "LABELS",
    "TRIGGERS",
    "TRIGGER_WEIGHT",
    "build_classifier",
]

LABELS = ("SAFE", "INJECTION", "JAILBREAK")
TRIGGERS: Mapping[str, str] = {
    "ignore": "INJECTION",
    "instructions": "INJECTION",
    "override": "INJECTION",
    "jailbreak": "JAILBREAK",
    "dan": "JAILBREAK",
}
_BENIGN = (
    "the a an and of to in is it you that he was for on are with as i his they be at one "
    "have this from or had by hot word but what some we can out other were all there when up "
    "use your how said each she which do their time if will way about many then them write "
    "would like so these her long make thing see him two has look more day could go come did "
    "number sound no most people my over know water than call first who may down side been "
    "now find please tell me story bread bake weather summary previous answer question"
)
BENIGN_WORDS = tuple(_BENIGN.split())
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
TRIGGER_WEIGHT = 40.0
# Logits are the mean embedding times this: a plain benign text is SAFE at ~0.96.
_SCALE = 4.0
_OPSET = 17


def build_classifier(
    directory: Path,
    *,
    labels: Sequence[str] = LABELS,
    triggers: Mapping[str, str] = TRIGGERS,
    max_length: int = 16,
    hidden: int | None = None,
    layers: int = 0,
    output: str = "logits",
    id2label: Mapping[str, str] | None = None,
    width: int | None = None,
    token_type_ids: bool = False,
    embedding_rows: int | None = None,
    trigger_weight: float = TRIGGER_WEIGHT,
) -> Path:
    """Writes model.onnx, tokenizer.json and config.json into ``directory`` and returns it.

    ``output``: ``"logits"`` (raw scores, HF's name) or ``"probabilities"`` (a Softmax at the
    end); any other name gives raw scores under that name. ``hidden`` (at least the number of
    labels) and ``layers`` make inference slower without changing an answer. ``id2label``
    overrides config.json's, ``width`` the head's number of outputs, ``embedding_rows`` the
    embedding table's rows (fewer than the vocabulary: a tokenizer that does not fit its model;
    all for broken models). ``trigger_weight``: raise it with ``max_length`` for one trigger
    to decide longer windows.
    """
    directory.mkdir(parents=True, exist_ok=True)
    vocab = {token: i for i, token in enumerate((*SPECIALS, *BENIGN_WORDS, *triggers))}
    _tokenizer(vocab).save(str(directory / "tokenizer.json"))
    dim = max(hidden or len(labels), len(labels))
    rows = embedding_rows or len(vocab)
    model = _graph(
        vocab, rows, labels, triggers, trigger_weight, dim, layers, output, width, token_type_ids
    )
    onnx.save(model, str(directory / "model.onnx"))
    config = {
        "architectures": ["BagOfWordsForSequenceClassification"],
        "model_type": "bag-of-words-test",
        "id2label": dict(id2label) if id2label else {str(i): name for i, name in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
        "max_position_embeddings": max_length,
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def _tokenizer(vocab: dict[str, int]) -> Tokenizer:
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return tokenizer


def _graph(
    vocab: dict[str, int],
    rows: int,
    labels: Sequence[str],
    triggers: Mapping[str, str],
    trigger_weight: float,
    dim: int,
    layers: int,
    output: str,
    width: int | None,
    token_type_ids: bool,
) -> onnx.ModelProto:
    embedding = np.zeros((rows, dim), dtype=np.float32)
    embedding[:, 0] = 1.0  # everything counts as SAFE ...
    for word, label in triggers.items():
        row = vocab[word]
        if row >= rows:
            continue
        embedding[row, 0] = 0.0  # ... but a trigger, which counts for its label only
        embedding[row, list(labels).index(label)] = trigger_weight
    width = width or len(labels)
    head = np.zeros((dim, width), dtype=np.float32)
    for i in range(min(len(labels), width)):
        head[i, i] = _SCALE
    initializers = [
        numpy_helper.from_array(embedding, "embedding"),
        numpy_helper.from_array(np.eye(dim, dtype=np.float32), "layer"),
        numpy_helper.from_array(head, "head"),
        numpy_helper.from_array(np.zeros(width, dtype=np.float32), "bias"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "tokens_axis"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "feature_axis"),
    ]
    nodes = [helper.make_node("Gather", ["embedding", "input_ids"], ["h0"])]
    current = "h0"
    for i in range(layers):
        nodes.append(helper.make_node("MatMul", [current, "layer"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"h{i + 1}"]))
        current = f"h{i + 1}"
    nodes += [
        # The mean over the tokens the mask keeps: padding must not move a window's scores.
        helper.make_node("Unsqueeze", ["attention_mask", "feature_axis"], ["mask3"]),
        helper.make_node("Cast", ["mask3"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [current, "maskf"], ["kept"]),
        helper.make_node("ReduceSum", ["kept", "tokens_axis"], ["total"], keepdims=0),
        helper.make_node("ReduceSum", ["maskf", "tokens_axis"], ["count"], keepdims=0),
        helper.make_node("Div", ["total", "count"], ["mean"]),
        helper.make_node("MatMul", ["mean", "head"], ["scaled"]),
    ]
    raw = "logits" if output == "probabilities" else output
    nodes.append(helper.make_node("Add", ["scaled", "bias"], [raw]))
    if output == "probabilities":
        nodes.append(helper.make_node("Softmax", [raw], [output], axis=-1))
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
    ]
    if token_type_ids:
        # BERT-style exports take it; the graph only needs it to exist (Identity keeps it).
        inputs.append(
            helper.make_tensor_value_info(
                "token_type_ids", TensorProto.INT64, ["batch", "sequence"]
            )
        )
        nodes.append(helper.make_node("Identity", ["token_type_ids"], ["unused_types"]))
    outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", width])]
    graph = helper.make_graph(nodes, "bag_of_words_classifier", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    model.ir_version = 8  # read by every onnxruntime of the last years
    onnx.checker.check_model(model)
    return model
