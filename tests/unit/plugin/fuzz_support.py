"""What the fuzz suites share: a memory ceiling per test, counts of cases tried, and the
contract every parser's error must keep (one short, inert line).

Memory is bounded with ``RLIMIT_AS`` for the duration of each fuzz test: the soft limit is
set to the address space in use now plus `FUZZ_HEADROOM_BYTES`, and restored afterwards
(a soft limit may be raised again up to the hard one). An input that made a parser
allocate without bound fails that test with MemoryError instead of taking the machine.
"""

from __future__ import annotations

import resource
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

#: Address space a parser may add while one fuzz test runs.
FUZZ_HEADROOM_BYTES = 768 << 20
#: Most characters an error message may have (quoted values are cut at 40).
MAX_MESSAGE_CHARS = 400

#: Cases tried per parser in this session (printed by the suites' module fixtures).
CASES_TRIED: Counter[str] = Counter()


def _address_space_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[0])
    return pages * resource.getpagesize()


@contextmanager
def bounded_memory(headroom: int = FUZZ_HEADROOM_BYTES) -> Iterator[None]:
    """Lower RLIMIT_AS to the current address space + `headroom` while the block runs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space_bytes() + headroom
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def assert_one_inert_line(message: str) -> None:
    """An error message a hostile input produced: one line, no escape, short."""
    assert message, "an empty error message"
    assert "\n" not in message, message
    assert "\r" not in message, message
    assert "\x1b" not in message, message
    assert len(message) <= MAX_MESSAGE_CHARS, message
