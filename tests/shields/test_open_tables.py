"""The remembered open candidates stay bounded whatever the text (``shields.open_tables``)."""

from __future__ import annotations

import gc

from shields.open_tables import OpenTables


def test_states_and_steps_are_bounded_and_forgotten_together() -> None:
    tables = OpenTables(4)
    start = tables.state("", 0)
    for n in range(10):  # ever-new held texts, as hostile text makes them
        tables.state(f"k{n}", 2)
        assert len(tables.states) <= 4
    for n in range(10):  # ever-new steps
        tables.remember(start, str(n), f"s{n}", 2)
        assert tables.steps <= 4
        assert sum(map(len, tables.states.values())) <= 4


def test_a_remembered_step_leads_to_the_state_of_its_key() -> None:
    tables = OpenTables(16)
    start = tables.state("", 0)
    after = tables.remember(start, "b", "b", 1)
    assert start["b"] is after is tables.state("b", 1)
    assert (after.key, after.held) == ("b", 1)
    tables.clear()
    assert not start and not tables.states  # a scanner holding ``start`` now misses


def test_runs_are_bounded_and_forgotten_without_the_steps() -> None:
    """Runs (a token's way through remembered steps) have a bound of their own: reaching it
    forgets the runs only, never a step (each was worked out by a search); a full clear
    forgets both."""
    tables = OpenTables(4)
    start = tables.state("", 0)
    after = tables.remember(start, "b", "b", 1)
    for n in range(10):  # ever-new tokens
        tables.remember_run(start, f"x{n}", after)
        assert len(tables.runs) <= 2  # half the states' bound
        assert sum(len(text) > 1 for text in start) <= 2
        assert start[f"x{n}"] is after
    assert start["b"] is after and tables.steps == 1
    tables.clear()
    assert not tables.runs and not start


def test_a_run_from_a_state_emptied_by_a_clear_is_forgotten_quietly() -> None:
    tables = OpenTables(2)
    start = tables.state("", 0)
    tables.remember_run(start, "ab", tables.state("b", 1))
    tables.state("c", 1)
    tables.state("d", 1)  # states full: everything is forgotten, the run's state emptied
    assert not start
    tables.remember_run(tables.state("", 0), "cd", tables.state("d", 1))
    tables.remember_run(tables.state("", 0), "ef", tables.state("f", 1))
    tables.remember_run(tables.state("", 0), "gh", tables.state("h", 1))  # runs full
    assert len(tables.runs) <= 2


def test_runs_make_no_objects_for_the_garbage_collector() -> None:
    """A stream remembers thousands of runs: each tracked object among them would bring the
    next full collection of the heap nearer (tens of ms in a proxy). A run is a string (not
    tracked) and references to states that exist already."""
    tables = OpenTables(4096)
    start = tables.state("", 0)
    after = tables.state("b", 1)
    texts = [f"t{n}" for n in range(1000)]
    gc.collect()
    before = len(gc.get_objects())
    for text in texts:
        tables.remember_run(start, text, after)
    assert len(gc.get_objects()) == before
    assert len(tables.runs) == 1000
