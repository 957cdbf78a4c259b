"""Every door outside bytes come in by answers any input with a result or a typed error, quickly
(issue 48): its corpus replayed, then inputs bent from its seeds. ``python -m bench fuzz`` runs the
same doors with many more inputs."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz.doors import Door, knock, opened_doors
from bench.fuzz.mutate import inputs

with opened_doors() as listed:
    NAMES = [door.name for door in listed]
EXAMPLES = 40  # per door: ~30 doors, under a minute on a loaded 2-core machine


@pytest.fixture(scope="module")
def doors() -> Iterator[dict[str, Door]]:
    with opened_doors() as opened:
        yield {door.name: door for door in opened}


def test_every_door_has_seeds(doors: dict[str, Door]) -> None:
    assert [name for name, door in doors.items() if not door.seeds()] == []


@pytest.mark.parametrize("name", NAMES)
def test_the_corpus_gets_a_result_or_a_typed_error(doors: dict[str, Door], name: str) -> None:
    for data in doors[name].seeds():
        knock(doors[name], data, hang_s=None)


def test_no_door_allocates_much_more_than_its_input(doors: dict[str, Door]) -> None:
    """An input of a few bytes once cost 256 MB: a JSON export was read with ``read(cap)``."""
    greedy = {}
    tracemalloc.start()
    try:
        for name, door in doors.items():
            for data in door.seeds():
                tracemalloc.reset_peak()
                knock(door, data, hang_s=None)
                if (peak := tracemalloc.get_traced_memory()[1]) > 32 * 2**20 + 100 * len(data):
                    greedy[name] = f"{peak / 2**20:.0f} MB on {len(data)} bytes"
    finally:
        tracemalloc.stop()
    assert greedy == {}


@pytest.mark.parametrize("name", NAMES)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_bent_inputs_get_a_result_or_a_typed_error(doors: dict[str, Door], name: str, data: st.DataObject) -> None:
    door = doors[name]
    knock(door, data.draw(inputs(door.seeds(), door.shape), label="input"), hang_s=None)


def test_the_doors_run_what_the_daemon_runs(doors: dict[str, Door]) -> None:
    """A seed is a valid input: the doors parse it, not refuse it (a door refusing everything fuzzes nothing)."""
    refused = {name: outcomes for name, door in doors.items() if "ok" not in (outcomes := _outcomes(door))}
    assert refused == {}


def _outcomes(door: Door) -> list[str]:
    return [knock(door, data, hang_s=None) for data in door.seeds()]
