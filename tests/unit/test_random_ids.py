"""``core.ids.random_uuid``: version-4 UUID text, never the same bytes twice — across
buffer refills, threads, and a fork (a child must not hand out its parent's ids)."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from dbos_trio._core import ids
from dbos_trio._core.ids import random_uuid


def test_ids_are_canonical_version_4_uuids() -> None:
    for _ in range(1000):
        text = random_uuid()
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # canonical: lower-case hex, hyphens where uuid4 puts them
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_ids_do_not_repeat_across_buffer_refills() -> None:
    count = 3 * ids._IDS_PER_READ + 7
    assert len({random_uuid() for _ in range(count)}) == count


def test_the_random_bits_vary_in_every_position() -> None:
    """Each of the 122 random bits takes both values over a thousand ids (a fixed bit, a
    slicing mistake, would not); the version and variant bits never change."""
    values = [uuid.UUID(random_uuid()).int for _ in range(1000)]
    fixed_ones = ~0
    fixed_zeros = 0
    for value in values:
        fixed_ones &= value
        fixed_zeros |= value
    constant = (fixed_ones | ~fixed_zeros) & ((1 << 128) - 1)
    assert constant == (0xF000 << 64) | (0xC000 << 48)


def test_threads_draw_different_ids() -> None:
    drawn: list[list[str]] = [[] for _ in range(4)]
    start = threading.Barrier(4)

    def draw(into: list[str]) -> None:
        start.wait()
        into.extend(random_uuid() for _ in range(2000))

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [text for into in drawn for text in into]
    assert len(set(every)) == len(every) == 8000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_repeat_its_parents_next_ids() -> None:
    random_uuid()  # the buffer now holds ids this process has not handed out yet
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids, then leave without cleanup
        os.close(read_end)
        os.write(write_end, " ".join(random_uuid() for _ in range(10)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {random_uuid() for _ in range(10)}
    assert len(child) == 10 and not child & parent
