"""Turn order gives every durable call the same step id under every schedule.

The rule of :mod:`dbos_trio._engine.workflows.turns` is checked on its own, without Trio's
scheduler: a *program* says what each task does — make a durable call (and wait until its id
is given), start a child task (with its own program), open a nested nursery (whose tasks run
while the opener waits for them) — and a *schedule*, drawn by hypothesis, says which
runnable task moves next. Whatever the schedule, each call (named by its task's path and its
position in that task) must get the same id; and a task never waits forever unless the
program itself makes it wait on a sibling."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from dbos_trio._engine.workflows.turns import Member, Ticket, Turns

# A program is a list of operations: "call", ("spawn", program), ("nest", [programs]).
Program = list[Any]

programs: st.SearchStrategy[Program] = st.recursive(
    st.lists(st.just("call"), max_size=3),
    lambda inner: st.lists(
        st.one_of(
            st.just("call"),
            st.tuples(st.just("spawn"), inner),
            st.tuples(st.just("nest"), st.lists(inner, min_size=1, max_size=3)),
        ),
        max_size=4,
    ),
    max_leaves=20,
)


class Counter:
    """The workflow's own counter: the root of every ring."""

    def __init__(self) -> None:
        self.last = 0

    def place(self, ticket: Ticket) -> None:
        ticket.place(self.last + 1)
        self.last += ticket.count


@attrs.define
class Task:
    """A task running a program as a member; a generator of its steps."""

    path: str
    member: Member
    program: Program
    nursery: object = None  # the nursery it is a task of: a nest waits for all of its tasks
    steps: Iterator[None] | None = None
    waiting: Ticket | None = None
    # Waiting at the end of a nested nursery's block for every task of that nursery.
    nest: object = None
    done: bool = False


class Simulation:
    """Runs programs under a schedule; records the id each call got."""

    def __init__(self, choose: Any) -> None:
        self.counter = Counter()
        self.choose = choose
        self.tasks: list[Task] = []
        self.ids: dict[str, int] = {}

    def run(self, program: Program) -> dict[str, int]:
        turns = Turns(self.counter.place, "body")
        self._start(Task("body", turns.owner, program))
        while True:
            runnable = [t for t in self.tasks if self._runnable(t)]
            if not runnable:
                break
            task = runnable[self.choose(len(runnable))]
            task.waiting = None
            task.nest = None
            assert task.steps is not None
            try:
                next(task.steps)
            except StopIteration:
                task.done = True
                task.member.finish()
        assert all(t.done for t in self.tasks), "a task waits forever"
        return self.ids

    def _runnable(self, task: Task) -> bool:
        if task.done or (task.waiting is not None and not task.waiting.is_placed):
            return False
        return task.nest is None or all(t.done for t in self.tasks if t.nursery is task.nest)

    def _start(self, task: Task) -> None:
        task.steps = self._steps(task)
        self.tasks.append(task)

    def _steps(self, task: Task) -> Iterator[None]:
        calls = spawned = 0
        for op in task.program:
            if op == "call":
                ticket = Ticket(f"{task.path}#{calls}")
                task.member.submit(ticket)
                task.waiting = ticket
                yield
                assert ticket.first_id is not None
                self.ids[ticket.name] = ticket.first_id
                calls += 1
            elif op[0] == "spawn":
                spawned += 1
                path = f"{task.path}>s{spawned}"
                self._start(Task(path, task.member.spawn(path), op[1], task.nursery))
                yield
            else:  # a nested nursery: its owner is this task, inside the block
                spawned += 1
                inner = Turns(task.member.submit, f"{task.path}'s block")
                children = []
                for index, sub in enumerate(op[1]):
                    path = f"{task.path}>n{spawned}.{index}"
                    children.append(Task(path, inner.owner.spawn(path), sub, inner))
                for child in children:
                    self._start(child)
                inner.owner.finish()
                task.nest = inner
                yield


@settings(max_examples=300, deadline=None)
@given(program=programs, seeds=st.lists(st.integers(0, 2**16), min_size=2, max_size=2))
def test_every_schedule_gives_every_call_the_same_id(program: Program, seeds: list[int]) -> None:
    import random

    results = []
    for seed in seeds:
        rng = random.Random(seed)
        results.append(Simulation(lambda n, rng=rng: rng.randrange(n)).run(program))
    # And the two extreme schedules: always the oldest task, always the newest.
    results.append(Simulation(lambda n: 0).run(program))
    results.append(Simulation(lambda n: n - 1).run(program))
    assert all(result == results[0] for result in results)
    assert sorted(results[0].values()) == list(range(1, len(results[0]) + 1))


def test_a_body_without_tasks_takes_ids_in_program_order() -> None:
    ids = Simulation(lambda n: 0).run(["call", "call", "call"])
    assert ids == {"body#0": 1, "body#1": 2, "body#2": 3}


def test_tasks_take_turns_in_spawn_order_whatever_runs_first() -> None:
    program = [("spawn", ["call", "call"]), ("spawn", ["call"]), ("spawn", ["call", "call"])]
    ids = Simulation(lambda n: n - 1).run(program)  # the newest task always runs first
    # Round one: each task's first call, in spawn order; round two: the second calls.
    assert sorted(ids, key=ids.__getitem__) == [
        "body>s1#0",
        "body>s2#0",
        "body>s3#0",
        "body>s1#1",
        "body>s3#1",
    ]


def test_a_task_spawned_between_two_calls_joins_right_after_its_spawner() -> None:
    program = ["call", ("spawn", ["call"]), "call"]
    ids = Simulation(lambda n: n - 1).run(program)
    assert sorted(ids, key=ids.__getitem__) == ["body#0", "body#1", "body>s1#0"]
