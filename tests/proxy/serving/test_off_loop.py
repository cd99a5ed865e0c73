"""Which request work stays on the event loop (``proxy.serving.off_loop``): small bodies, and large
ones that are quick to read — few objects — or whose texts the input cache remembers."""

from __future__ import annotations

import json

from proxy.serving.off_loop import (
    CHEAP_BODY_BYTES,
    CHEAP_BODY_OBJECTS,
    CHEAP_LOOKUPS,
    CHEAP_SCAN_CHARS,
    OFF_LOOP_BYTES,
    check_on_loop,
    parse_on_loop,
    scan_on_loop,
)


def body(messages: int, size: int) -> bytes:
    text = "x" * (size // max(messages, 1))
    return json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": text}] * messages}
    ).encode()


def test_small_bodies_are_read_on_the_loop() -> None:
    assert parse_on_loop(body(1_000, OFF_LOOP_BYTES // 2))  # many objects, but small


def test_a_long_conversation_of_few_turns_is_read_on_the_loop() -> None:
    assert parse_on_loop(body(300, 400_000))


def test_many_tiny_objects_or_a_huge_body_go_to_a_thread() -> None:
    assert not parse_on_loop(body(CHEAP_BODY_OBJECTS + 1, 200_000))
    assert not parse_on_loop(body(10, CHEAP_BODY_BYTES + 1_000))


def test_a_check_stays_on_the_loop_while_its_lookups_and_scans_are_few() -> None:
    large = OFF_LOOP_BYTES * 4
    assert check_on_loop(large, CHEAP_LOOKUPS) and not check_on_loop(large, CHEAP_LOOKUPS + 1)
    assert check_on_loop(OFF_LOOP_BYTES - 1, 10 * CHEAP_LOOKUPS)
    assert scan_on_loop(large, CHEAP_SCAN_CHARS) and not scan_on_loop(large, CHEAP_SCAN_CHARS + 1)
    assert scan_on_loop(OFF_LOOP_BYTES - 1, 10 * CHEAP_SCAN_CHARS)
