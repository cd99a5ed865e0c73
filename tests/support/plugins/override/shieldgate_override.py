"""Never imported: a plugin cannot replace a built-in shield type."""

raise AssertionError("a plugin named like a built-in must not be imported")
