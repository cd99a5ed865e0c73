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

A stream's tokens recur (a model's vocabulary, a few characters each), so a state also maps a
whole token — every step of which was remembered — to where it leads (``remember_run``): one
lookup per token instead of one per character. Such a *run* is only ever the composition of
remembered steps, so it is as true as they are; runs have a bound of their own, and when it is
reached only they are forgotten (the steps, each worked out by a search, stay).
"""

from __future__ import annotations

__all__ = ["RUN_CHARS", "OpenTables", "State"]


class State(dict[str, "State"]):
    """A key, how many characters of the text it holds, and the states the characters seen
    after it lead to."""

    __slots__ = ("held", "key")

    def __init__(self, key: str, held: int) -> None:
        super().__init__()
        self.key = key
        self.held = held


# The longest token remembered as a run (``OpenTables.remember_run``): a model's token is a few
# characters; a longer text (a bulk read's) is stepped a character at a time.
RUN_CHARS = 16


class OpenTables:
    """A shield's remembered states, shared by its scanners: at most ``capacity`` states and
    as many steps, all forgotten when either is full, and at most half as many runs, forgotten
    alone when full (a few MB at most, whatever the text: a run costs ~150 bytes)."""

    __slots__ = ("capacity", "run_capacity", "run_states", "runs", "states", "steps")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.run_capacity = max(capacity // 2, 1)
        self.states: dict[str, State] = {}
        self.steps = 0
        # Every run remembered, and the state it leaves from, in two lists: a pair per run
        # would be a new object for the garbage collector to track, and a stream makes
        # thousands (each survivor brings the next full collection of the heap nearer).
        self.runs: list[str] = []
        self.run_states: list[State] = []

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

    def remember_run(self, state: State, text: str, after: State) -> None:
        """Remembers that ``text`` (2 to ``RUN_CHARS`` characters, each step of which from
        ``state`` is remembered) leads from ``state`` to ``after``."""
        runs = self.runs
        if len(runs) >= self.run_capacity:
            for start, run in zip(self.run_states, runs, strict=True):
                start.pop(run, None)  # gone already if its state was emptied meanwhile
            runs.clear()
            self.run_states.clear()
        state[text] = after
        runs.append(text)
        self.run_states.append(state)

    def clear(self) -> None:
        # Emptied, not only dropped: a scanner holds its state, whose steps would keep every
        # state they lead to.
        for state in self.states.values():
            state.clear()
        self.states.clear()
        self.steps = 0
        self.runs.clear()
        self.run_states.clear()
