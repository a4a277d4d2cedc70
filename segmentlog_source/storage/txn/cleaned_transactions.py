"""What the log cleaner knows about transactions as it walks a partition in offset order
(Kafka's CleanedTransactionMetadata, LogCleaner.scala).

The aborted transactions of the range being cleaned (from the `.txnindex` files) are fed in
offset order. A transactional data batch inside an aborted transaction may be discarded; one
outside belongs to a committed (or still open) transaction and is kept. A marker may go only
once the cleaner has removed everything of its transaction: an ABORT marker is kept while the
cleaner still saw data of that transaction in this pass (it goes in a later pass), a COMMIT
marker while it saw any batch of its transaction. Whether a discardable marker really goes is
the caller's call (the delete horizon must have passed).
"""

from __future__ import annotations

import heapq
from typing import Iterable

from ...format.control import ABORT, COMMIT
from .transaction_index import AbortedTxn


class CleanedTransactions:
    def __init__(self):
        self._aborted: list[tuple[int, AbortedTxn]] = []   # a heap by first offset
        self._ongoing_aborted: dict[int, list] = {}   # producer -> [txn, data seen?]
        self._ongoing_committed: set[int] = set()
        self.kept_aborts: list[AbortedTxn] = []       # for the cleaned segment's .txnindex

    def add_aborted(self, txns: Iterable[AbortedTxn]) -> None:
        """Aborted transactions of the next stretch of log (one seen before may come again:
        a transaction still ongoing is not restarted)."""
        for txn in txns:
            heapq.heappush(self._aborted, (txn.first_offset, txn))

    def _consume_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[1]
            self._ongoing_aborted.setdefault(txn.producer_id, [txn, False])

    def on_batch(self, producer_id: int, last_offset: int, transactional: bool) -> bool:
        """A data batch: True when it belongs to an aborted transaction (discardable)."""
        self._consume_up_to(last_offset)
        if not transactional:
            return False
        ongoing = self._ongoing_aborted.get(producer_id)
        if ongoing is not None:
            ongoing[1] = True
            return True
        self._ongoing_committed.add(producer_id)
        return False

    def on_control(self, producer_id: int, last_offset: int, control_type: int | None) -> bool:
        """A control batch (`control_type` None: it has no record left, the cleaner emptied
        it before): True when it may be discarded. Control records other than transaction
        markers stay."""
        self._consume_up_to(last_offset)
        if control_type is None:
            return True
        if control_type not in (ABORT, COMMIT):
            return False
        if control_type == ABORT:
            ongoing = self._ongoing_aborted.pop(producer_id, None)
            if ongoing is not None and ongoing[1]:
                self.kept_aborts.append(ongoing[0])   # its data goes now, the marker later
                return False
            return True
        if producer_id in self._ongoing_committed:
            self._ongoing_committed.discard(producer_id)
            return False
        return True
