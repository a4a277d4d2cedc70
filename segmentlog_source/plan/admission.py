"""How far a streaming micro-batch reads: Spark's Kafka source's admission control, over offsets.

Offsets are `{(topic, partition): offset}`. `maxOffsetsPerTrigger` caps the offsets of one
micro-batch and is shared out in proportion to each partition's backlog, as Spark's
KafkaMicroBatchStream.rateLimit does, a share below one offset rounded up so that no small
backlog starves, except that it never hands out more than the cap (Spark's rounding can pass
it by a few offsets; here the excess comes back from the largest shares, and what rounding
leaves over goes to the largest fractions). `minOffsetsPerTrigger`
holds a micro-batch back until that many offsets wait or `maxTriggerDelay` has passed since the
last one. Offsets are an upper bound of rows: control records, aborted transactions and a
compacted log's gaps take offsets and give none.
"""

from __future__ import annotations

from typing import Mapping

TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, int]


def backlog(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> int:
    """Offsets waiting between `start` and `end`, over every partition of `end`."""
    return sum(max(0, e - start.get(tp, e)) for tp, e in end.items())


def rate_limit(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
               max_offsets: int) -> Offsets:
    """`end`, cut so that at most `max_offsets` offsets lie between `start` and it, each
    partition's share in proportion to its backlog."""
    sizes = {tp: e - start[tp] for tp, e in end.items() if e - start.get(tp, e) > 0}
    total = sum(sizes.values())
    if total <= max_offsets:
        return dict(end)
    shares = {tp: max_offsets * size / total for tp, size in sizes.items()}
    # as Spark: a share below one offset rounds up, so no small backlog starves
    taken = {tp: int(share) if share >= 1 else 1 for tp, share in shares.items()}
    # ... but the cap holds: take the excess back from the largest shares
    for tp in sorted(taken, key=lambda tp: (-taken[tp], tp))[:max(0, sum(taken.values())
                                                                  - max_offsets)]:
        taken[tp] -= 1
    left = max_offsets - sum(taken.values())
    # the remainder, one offset each, to the largest fractions (ties: log order)
    for tp in sorted(shares, key=lambda tp: (-(shares[tp] - taken[tp]), tp))[:left]:
        taken[tp] += 1
    return {tp: (start[tp] + min(taken[tp], sizes[tp]) if tp in sizes else e)
            for tp, e in end.items()}
