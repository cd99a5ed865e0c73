"""Remembered open candidates, for scanners that keep theirs up to date token by token.

The adaptive hold-back asks every scanner of a stream where a match may still start after
every token it is fed (``Scanner.track_open``). For some scanners the answer depends only on a
short *key* — the text held so far, from its earliest open position, and what little of the
text before it a match could read — and on the characters that follow: the secrets shield's
and the deny list's in prose are one to a few characters. Those answers are facts about text,
never stale, so a shield remembers them for every stream it scans, as a small automaton: a
``State`` per key, which maps a character that followed the key to the state it leads to, and
knows how many characters its key holds. A scanner keeps its state and steps it through each
token it is fed, one dictionary lookup per character (states are few and stay in the cache);
a character not seen after that key raises ``KeyError``, and the scanner works it out and
remembers it.
"""

from __future__ import annotations

__all__ = ["OpenTables", "State"]


class State(dict[str, "State"]):
    """A key, how many characters of the text it holds, and the states the characters seen
    after it lead to."""

    __slots__ = ("held", "key")

    def __init__(self, key: str, held: int) -> None:
        super().__init__()
        self.key = key
        self.held = held


class OpenTables:
    """A shield's remembered states, shared by its scanners: at most ``capacity`` states and
    as many steps, all forgotten when either is full (a few MB at most, whatever the text)."""

    __slots__ = ("capacity", "states", "steps")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.states: dict[str, State] = {}
        self.steps = 0

    def state(self, key: str, held: int) -> State:
        """The state of ``key``, which holds ``held`` characters."""
        state = self.states.get(key)
        if state is None:
            if len(self.states) >= self.capacity:
                self.clear()
            state = self.states[key] = State(key, held)
        return state

    def remember(self, state: State, char: str, key: str, held: int) -> State:
        """Remembers that ``char`` after ``state`` leads to ``key`` (holding ``held``
        characters); returns that state."""
        if self.steps >= self.capacity:
            self.clear()
        self.steps += 1
        after = self.state(key, held)
        state[char] = after
        return after

    def clear(self) -> None:
        # Emptied, not only dropped: a scanner holds its state, whose steps would keep every
        # state they lead to.
        for state in self.states.values():
            state.clear()
        self.states.clear()
        self.steps = 0
