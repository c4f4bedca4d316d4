"""Rate-limited progress: one report per interval, the first and the last always."""

from __future__ import annotations

from console.engine.progress import Throttle, throttled


def test_a_thousand_steps_in_a_second_are_about_ten_reports_and_the_last_is_always_one() -> None:
    ticks = iter(range(10_000))
    seen: list[tuple[int, int]] = []
    report = throttled(lambda done, total: seen.append((done, total)), 0.1,
                       clock=lambda: next(ticks) / 1000)  # one step per millisecond
    for done in range(1, 1001):
        report(done, 1000)
    assert seen[0] == (1, 1000) and seen[-1] == (1000, 1000)
    assert 10 <= len(seen) <= 12


def test_a_final_report_is_due_even_inside_the_interval() -> None:
    now = [0.0]
    throttle = Throttle(1.0, clock=lambda: now[0])
    assert throttle.due()
    now[0] = 0.5
    assert not throttle.due()
    assert throttle.due(final=True)
    now[0] = 1.2  # the final report restarted the interval
    assert not throttle.due()
    now[0] = 1.6
    assert throttle.due()
