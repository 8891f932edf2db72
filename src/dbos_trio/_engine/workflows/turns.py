"""Turn order: step ids for concurrent tasks that are the same on every execution.

A workflow's step ids are one counter. A body that runs one thing at a time takes ids in
program order, and a replay (recovery, fork, resume) takes the same ones. Tasks running
side by side take ids whenever Trio happens to run them, which differs from run to run —
so a replay would hand task B the checkpoint task A recorded. A durable nursery
(:mod:`.nursery`) orders its tasks' reservations by *turns* instead, so the sequence of
ids depends only on what each task does, never on when:

* Every task of a durable nursery is a :class:`Member` of the nursery's :class:`Turns`,
  in a ring, in spawn order; the body of the ``async with`` block is the first member.
* A durable call made by a member takes a :class:`Ticket` at the call (synchronously, in
  program order) and queues it on its member. The ring has one *turn*: the member whose
  turn it is gets the id for its oldest queued ticket, and the turn passes to the next
  member. A member whose turn it is with nothing queued holds the turn until it queues
  a ticket or finishes — that wait is the price of determinism (below).
* A member that finished leaves the ring when its turn comes (not earlier: when it left
  must not depend on timing). Tasks a member spawns join the ring right after it, at its
  next turn (its next reservation, or its leaving): that point is fixed in the member's
  own program order, so where they join is too.
* Nurseries nest: a ring's member is, to the ring around it, part of the member that
  opened the nursery — a ticket given its place in the inner ring is queued, in that
  order, on the outer member. The workflow body outside any durable nursery takes ids
  straight from the counter, at the call, exactly as without this module, so a workflow
  with no durable nursery keeps the ids it always had (and those of every other SDK).

The price: while one member runs (a step's body, or code between durable calls) and
holds the turn, its siblings' next reservations wait for it. A fan-out whose tasks make
one durable call each pays nothing measurable; tasks making several calls advance in
rounds, each round waiting for the slowest task's current call to finish. A member that
waits on a sibling outside durable calls (a Trio channel, an event) while holding the
turn would wait forever for a sibling that waits for the turn: a ticket that waits
longer than :data:`TURN_WARNING_SECONDS` logs a warning naming the step and the member
holding the turn.

Pure Trio, no database.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

import attrs
import trio

logger = logging.getLogger("dbos_trio.workflow")

TURN_WARNING_SECONDS = 30.0


@attrs.define(eq=False)
class Ticket:
    """A reservation of ``count`` consecutive step ids, placed now or once its turn comes."""

    name: str
    count: int = 1
    first_id: int | None = None
    # Given the id the ticket would take, how many it takes (0 or ``count``), decided when
    # it is placed: a patch marker consumes its id only when the history agrees.
    decide: Callable[[int], int] | None = None
    _placed: trio.Event | None = None

    @property
    def is_placed(self) -> bool:
        return self.first_id is not None

    def place(self, first_id: int) -> None:
        self.first_id = first_id
        if self._placed is not None:
            self._placed.set()

    async def wait_placed(self, waiting_on: Callable[[], str]) -> int:
        """The first id, once placed. Cancellation leaves the ticket queued: it still takes
        its turn and its ids (unused), so the ids after it do not move."""
        if self.first_id is None:
            if self._placed is None:
                self._placed = trio.Event()
            with trio.move_on_after(TURN_WARNING_SECONDS):
                await self._placed.wait()
            if self.first_id is None:
                logger.warning(
                    "%s has waited %g s for its turn in a durable nursery, held by %s: "
                    "tasks of a durable nursery must not wait on each other outside "
                    "durable calls",
                    self.name,
                    TURN_WARNING_SECONDS,
                    waiting_on(),
                )
                await self._placed.wait()
        assert self.first_id is not None
        return self.first_id


@attrs.define(eq=False)
class Member:
    """One task's place in a ring."""

    turns: Turns
    label: str
    # Set when the task starts running: a durable call from any other task (a plain
    # ``trio`` task the member spawned) cannot be placed, and is refused.
    task: trio.lowlevel.Task | None = None
    queued: deque[Ticket] = attrs.field(factory=deque)
    finished: bool = False
    # Spawned by this member and not yet in the ring: they join at its next turn.
    joining: list[Member] = attrs.field(factory=list)
    # A task started with ``Nursery.start`` whose starter waits for it to report started:
    # until then its tickets are its starter's (in the starter's program order).
    delegate_to: Member | None = None

    def submit(self, ticket: Ticket) -> None:
        """Queue ``ticket`` (in program order) and let the ring move."""
        if self.delegate_to is not None:
            self.delegate_to.submit(ticket)
            return
        self.queued.append(ticket)
        self.turns.advance()

    def spawn(self, label: str) -> Member:
        """A member for a task this member starts now, joining at this member's next turn."""
        child = Member(self.turns, label)
        self.joining.append(child)
        return child

    def spawn_delegating(self, label: str) -> Member:
        """A member for a task this member starts and waits for: it uses this member's
        turns until :meth:`stop_delegating`, then joins as :meth:`spawn` would."""
        return Member(self.turns, label, delegate_to=self)

    def stop_delegating(self) -> None:
        starter, self.delegate_to = self.delegate_to, None
        if starter is not None:
            starter.joining.append(self)

    def finish(self) -> None:
        self.finished = True
        self.turns.advance()


class Turns:
    """The ring of one durable nursery; placed tickets go to ``forward`` (the member of
    the enclosing ring that opened this nursery, or the workflow's counter)."""

    def __init__(self, forward: Callable[[Ticket], None], owner_label: str) -> None:
        self._forward = forward
        self.owner = Member(self, owner_label)
        self._ring: list[Member] = [self.owner]
        self._turn = 0

    @property
    def members(self) -> list[Member]:
        return list(self._ring)

    def holder(self) -> str:
        """Who holds the turn now (for the warning of a ticket waiting too long)."""
        if not self._ring:
            return "nobody"
        return self._ring[self._turn].label

    def advance(self) -> None:
        """Hand out turns until the member whose turn it is has nothing to do yet."""
        while self._ring:
            member = self._ring[self._turn]
            if member.queued:
                self._forward(member.queued.popleft())
                self._pass(member, leaving=False)
            elif member.finished:
                self._pass(member, leaving=True)
            else:
                return

    def _pass(self, member: Member, *, leaving: bool) -> None:
        at = self._turn
        joining, member.joining = member.joining, []
        if leaving:
            self._ring[at : at + 1] = joining
            # The turn stays at this index: the first joiner's, or the next member's.
        else:
            self._ring[at + 1 : at + 1] = joining
            at += 1
        self._turn = at % len(self._ring) if self._ring else 0
