"""A plugin module that fails at import, as one with a missing dependency does."""

import shieldgate_missing_dependency  # noqa: F401  # not installed anywhere, on purpose
