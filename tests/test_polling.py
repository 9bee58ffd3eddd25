"""The shared waiting helpers: what they return, and what a failure says."""

from __future__ import annotations

import asyncio

import pytest

from tests.polling import until, wait_until


def test_wait_until_returns_the_first_truthy_answer() -> None:
    answers = iter([0, [], "here", "later"])
    assert wait_until(lambda: next(answers), "an answer", 5, every=0.001) == "here"


def test_a_failure_names_what_was_awaited() -> None:
    with pytest.raises(AssertionError, match=r"^gave up after 0 s waiting for the moon$"):
        wait_until(lambda: False, "the moon", 0.05, every=0.01)


def test_holds_returns_the_answer_it_held_for_and_a_failure_shows_the_last_one() -> None:
    counts = iter(range(100))
    assert wait_until(lambda: next(counts), "three", 5, every=0.001, holds=lambda n: n == 3) == 3
    assert wait_until(lambda: 0, "a zero", 5, holds=lambda n: n == 0) == 0  # a falsy answer it holds for
    with pytest.raises(AssertionError, match=r"waiting for a job to end; the last answer: \{'status': 'RUNNING'\}$"):
        wait_until(lambda: {"status": "RUNNING"}, "a job to end", 0.05, every=0.01,
                   holds=lambda job: job["status"] != "RUNNING")


def test_what_may_be_a_function_of_the_last_answer() -> None:
    with pytest.raises(AssertionError, match=r"waiting for the copy: 7 bytes$"):
        wait_until(lambda: 7, lambda size: f"the copy: {size} bytes", 0.05, every=0.01, holds=lambda size: size > 10)


async def test_until_awaits_a_check_that_is_a_coroutine_and_shows_its_last_answer() -> None:
    async def read() -> dict:
        await asyncio.sleep(0)
        return {"status": "RUNNING"}

    rounds = iter(range(100))
    assert await until(lambda: next(rounds) >= 2, "two rounds", 5, every=0.001) is True
    with pytest.raises(AssertionError, match=r"the last answer: \{'status': 'RUNNING'\}$"):
        await until(read, "the crawl to end", 0.05, every=0.01, holds=lambda view: view["status"] != "RUNNING")
