"""Remembered open candidates, for scanners that keep theirs up to date token by token.

The adaptive hold-back asks every scanner of a stream where a match may still start after
every token it is fed (``Scanner.open_at``). For some scanners the answer depends only on a
short *key* — the text held so far, from its earliest open position, and what little of the
text before it a match could read — and on the token: the secrets shield's and the deny list's
in prose are one to a few characters. Those answers are facts about text, never stale, so a
shield remembers them for every stream it scans: ``OpenTables`` maps a key to its *table*, and
a table maps a token that followed the key to the entry it leads to: the next key's table, the
next key, and how many characters that key holds. A scanner keeps its key's table, so the
usual answer costs one lookup of the token it was just fed (a table is small and stays in the
cache); a token not seen after that key is worked out by the scanner and remembered.
"""

from __future__ import annotations

__all__ = ["NO_TABLE", "Entry", "OpenTables", "Table"]

# A key's table: a token -> (the next key's table, the next key, its held length).
Table = dict[str, "Entry"]
Entry = tuple[Table, str, int]
# The table of no key, never written to: a scanner without a key misses, and works it out.
NO_TABLE: Table = {}


class OpenTables:
    """A shield's remembered answers, shared by its scanners: at most ``capacity`` entries,
    all forgotten when full (a few MB at most)."""

    __slots__ = ("capacity", "entries", "tables")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.tables: dict[str, Table] = {}
        self.entries = 0

    def table(self, key: str) -> Table:
        """The table of ``key`` (empty when nothing is remembered after it)."""
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = {}
        return table

    def remember(self, key: str, token: str, after: str, held: int) -> Entry:
        """Remembers that ``token`` after ``key`` leads to ``after``, which holds ``held``
        characters; returns the entry."""
        if self.entries >= self.capacity:
            self.clear()
        self.entries += 1
        entry = (self.table(after), after, held)
        self.table(key)[token] = entry
        return entry

    def clear(self) -> None:
        # Emptied, not only dropped: a scanner holds its key's table, whose entries would keep
        # every table they lead to.
        for table in self.tables.values():
            table.clear()
        self.tables.clear()
        self.entries = 0
