"""The keys a chat request may have, level by level: the allow-lists of the request reader.

Every key of an object the reader walks is either a field it reads, a parameter that puts no
text into the prompt, or refused; and a key that a Go server (Ollama) would fold onto a field
name (``json_codec.go_fold``) without being it is refused too, since such a server may read
it as that field, unchecked.
"""

from __future__ import annotations

from typing import Any

from shields.base import Role
from shields.json_codec import go_fold
from shields.openai.errors import RequestShapeError

__all__ = [
    "AUDIO_KEYS",
    "CACHE_CONTROL_KEYS",
    "CALL_KEYS",
    "CUSTOM_KEYS",
    "DETAIL_KEYS",
    "FILE_KEYS",
    "FUNCTION_KEYS",
    "IMAGE_KEYS",
    "MESSAGE_KEYS",
    "PARAMETERS",
    "PART_KEYS",
    "REQUEST_TEXTS",
    "TOOL_DEFINITION_KEYS",
    "TOOL_KEYS",
    "TOP_LEVEL",
    "Keys",
]

# Top-level parameters that put no text into the prompt: sampling and length settings, output
# constraints (``stop``, ``grammar``, ``guided_*``, ``json_schema``: they shape what the model
# may write, which the output shields check, and no template renders them), routing and
# bookkeeping (``user``, ``metadata``, ``store``: kept by the server, never shown to the model).
# OpenAI's, then vLLM's, llama.cpp's and llama-cpp-python's, then OpenRouter's.
PARAMETERS = frozenset(
    {
        "model", "stream", "stream_options", "n", "temperature", "top_p", "max_tokens",
        "max_completion_tokens", "seed", "stop", "logprobs", "top_logprobs", "logit_bias",
        "presence_penalty", "frequency_penalty", "user", "metadata", "store",
        "parallel_tool_calls", "tool_choice", "function_call", "service_tier",
        "reasoning_effort", "modalities", "audio", "verbosity", "prompt_cache_key",
        "safety_identifier",
        "top_k", "min_p", "typical_p", "repetition_penalty", "length_penalty", "min_tokens",
        "ignore_eos", "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens",
        "spaces_between_special_tokens", "best_of", "use_beam_search",
        "truncate_prompt_tokens", "add_generation_prompt", "continue_final_message", "echo",
        "add_special_tokens", "priority", "guided_json", "guided_regex", "guided_choice",
        "guided_grammar", "guided_decoding_backend", "guided_whitespace_pattern",
        "structured_outputs", "return_tokens_as_token_ids", "prompt_logprobs",
        "repeat_penalty", "repeat_last_n", "penalty_last_n", "mirostat", "mirostat_mode",
        "mirostat_tau", "mirostat_eta", "tfs_z", "dynatemp_range", "dynatemp_exponent",
        "xtc_probability", "xtc_threshold", "dry_multiplier", "dry_base", "dry_allowed_length",
        "dry_penalty_last_n", "top_n_sigma", "n_predict", "n_keep", "n_probs", "cache_prompt",
        "id_slot", "samplers", "grammar", "json_schema", "logit_bias_type",
        "reasoning_format", "timings_per_token", "post_sampling_probs", "return_tokens",
        "reasoning",
    }
)  # fmt: skip
# Top-level fields a chat template renders into the prompt, and the role their text has there:
# tool definitions, the response schema and the template itself (with its variables) are the
# application's instructions, as a system prompt is; vLLM's RAG ``documents`` are retrieved
# text, as a tool's result is; a ``prediction`` is text the client wrote. JSON values are
# checked as the JSON a template prints (``tools | tojson``), escapes read as what they stand
# for; a redaction in one rewrites the forwarded body.
REQUEST_TEXTS: dict[str, Role] = {
    "tools": Role.SYSTEM,
    "functions": Role.SYSTEM,
    "response_format": Role.SYSTEM,
    "chat_template": Role.SYSTEM,
    "chat_template_kwargs": Role.SYSTEM,
    "documents": Role.TOOL,
    "prediction": Role.USER,
}


class Keys:
    """The field names the proxy reads in one kind of object, and their Go-folded forms."""

    __slots__ = ("folded", "known")

    def __init__(self, *known: str) -> None:
        self.known = frozenset(known)
        self.folded = frozenset(go_fold(name) for name in known)

    def check(self, obj: dict[str, Any], where: str, *, closed: bool = False) -> None:
        """RequestShapeError for a key that folds onto a field name without being it; with
        ``closed``, for any key that is not a field name."""
        known = self.known
        if obj.keys() <= known:
            return  # every key is a field name: nearly every object, one test in C
        for key in obj:
            if key in known:
                continue  # nearly every key: one set lookup
            shown = key if len(key) <= 64 else key[:64] + "..."
            if go_fold(key) in self.folded:
                raise RequestShapeError(
                    f"{where} has the key {shown!r}, which differs from a field name only in "
                    "letter case: servers that match keys ignoring case would read it as that "
                    "field, unchecked",
                    param=where,
                )
            if closed:
                at = f"{where}.{shown}" if where else shown
                raise RequestShapeError(
                    f"Unknown parameter: '{at}'. shieldgate forwards only fields it knows "
                    "carry no unchecked text",
                    param=at,
                    code="unknown_parameter",
                )


TOP_LEVEL = Keys("messages", *PARAMETERS, *REQUEST_TEXTS)
MESSAGE_KEYS = Keys(
    "role", "content", "name", "refusal", "reasoning_content", "reasoning", "thinking",
    "reasoning_details", "tool_calls", "function_call", "tool_call_id", "audio", "prefix",
    "partial",
)  # fmt: skip
# A content part's keys, per type: its type, the key that holds its payload, and
# ``cache_control`` (Anthropic-style prompt caching, which LiteLLM clients send on parts: a
# marker no template renders).
PART_KEYS = {
    kind: Keys("type", kind, "cache_control")
    for kind in ("text", "refusal", "image_url", "input_audio", "file")
}
CACHE_CONTROL_KEYS = Keys("type", "ttl")
IMAGE_KEYS = Keys("url", "detail")
AUDIO_KEYS = Keys("data", "format")
# A file part only by reference: inline ``file_data`` (base64 of a PDF, a text file...) is
# decoded into the prompt by the backend, and the shields cannot read it.
FILE_KEYS = Keys("file_id", "filename")
CALL_KEYS = Keys("id", "type", "function", "custom", "index")
FUNCTION_KEYS = Keys("name", "arguments")
CUSTOM_KEYS = Keys("name", "input")
# ``data`` (encrypted reasoning) and ``signature`` are opaque tokens the provider verifies, not
# text a template shows; ``text`` and ``summary`` are read.
DETAIL_KEYS = Keys("type", "text", "summary", "data", "signature", "format", "id", "index")
TOOL_KEYS = Keys("type", "function", "custom")
TOOL_DEFINITION_KEYS = Keys("name", "description", "parameters", "strict", "format")
