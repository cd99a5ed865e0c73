"""The remembered open candidates stay bounded whatever the text (``shields.open_tables``)."""

from __future__ import annotations

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
