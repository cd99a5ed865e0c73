"""``python -m proxy.demo.llama_launcher ARGS``: llama-cpp-python's server, ARGS as its own.

One change to the stock ``python -m llama_cpp.server``: the model's weights stay in plain CPU
buffers (``use_extra_bufts = False``). llama.cpp otherwise moves Q4/Q8 weights into "extra"
buffer types — repacked layouts and, on CPUs that report Intel AMX, AMX tiles — and its AMX
matrix multiply crashes the process (SIGSEGV in ``ggml_backend_amx_mul_mat``) on virtual
machines that report AMX, as the CI machines here do. A 135M model does not need either.
"""

from __future__ import annotations

from typing import Any


def _plain_buffers(default_params: Any) -> Any:
    def params() -> Any:
        value = default_params()
        if hasattr(value, "use_extra_bufts"):  # older llama.cpp has no extra buffers
            value.use_extra_bufts = False
        return value

    return params


def main() -> None:
    import llama_cpp
    import llama_cpp.llama
    from llama_cpp.server.__main__ import main as serve

    patched = _plain_buffers(llama_cpp.llama_model_default_params)
    # llama.py reads the function through its module attribute at model load time.
    llama_cpp.llama.llama_cpp.llama_model_default_params = patched  # type: ignore[attr-defined]
    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
