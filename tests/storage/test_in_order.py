"""each_in_order: results in order, the first failure in order raised, a bounded number of calls
under way, and no thread left running when the caller stops early."""

from __future__ import annotations

import threading
import time

import pytest

from segmentlog_source.storage.io.in_order import each_in_order


class _Counting:
    """A call that sleeps (as a request waits), counting how many run at once."""

    def __init__(self, fail_at=()):
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.started: list[int] = []
        self.fail_at = set(fail_at)

    def __call__(self, item: int) -> int:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.started.append(item)
        try:
            time.sleep(0.01 if item % 3 else 0.03)    # later items often finish first
            if item in self.fail_at:
                raise ValueError(f"item {item}")
            return item * item
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_results_in_order_with_bounded_calls(threads):
    fn = _Counting()
    assert list(each_in_order(fn, range(20), threads)) == [i * i for i in range(20)]
    assert fn.most <= threads
    if threads > 1:
        assert fn.most > 1     # they did overlap
    assert sorted(fn.started) == list(range(20))


def test_first_failure_in_order_is_raised_and_later_calls_dropped():
    fn = _Counting(fail_at={5, 4, 12})
    seen = []
    with pytest.raises(ValueError, match="item 4"):
        for result in each_in_order(fn, range(30), 3):
            seen.append(result)
    assert seen == [i * i for i in range(4)]
    assert max(fn.started) < 4 + 3     # nothing started further than the bound ahead
    assert fn.now == 0                 # and nothing still running


def test_stopping_early_waits_for_running_calls():
    fn = _Counting()
    results = each_in_order(fn, range(100), 2)
    assert next(results) == 0
    results.close()
    assert fn.now == 0
    assert len(fn.started) <= 3


def test_items_are_consumed_lazily():
    pulled = []

    def items():
        for i in range(50):
            pulled.append(i)
            yield i

    results = each_in_order(lambda i: i, items(), 2)
    assert next(results) == 0
    assert len(pulled) <= 2
    results.close()


def test_slack_lets_other_threads_pass_a_slow_head():
    """With `ahead` above `threads`, calls behind a slow one keep starting (in order still)."""
    release = threading.Event()

    def fn(item: int) -> int:
        if item == 0:
            assert release.wait(10)
        return item

    started = []

    def tracked(item: int) -> int:
        started.append(item)
        if len(started) >= 6:
            release.set()      # only reached if items 1.. ran while item 0 was waiting
        return fn(item)

    assert list(each_in_order(tracked, range(10), 2, ahead=8)) == list(range(10))
    assert release.is_set()
