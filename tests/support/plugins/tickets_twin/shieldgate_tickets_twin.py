"""Never imported: two distributions provide the shield type ``tickets``, so neither is used."""

raise AssertionError("a shield type provided twice must not be imported")
