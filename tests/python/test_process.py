"""Process life: a client survives os.fork() (child and parent both send, nothing twice),
and the atexit hook delivers what a program left queued, with a bounded wait."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Callable, List

import pytest

import outbound
from receiver import Receiver

MakeClient = Callable[..., outbound.Client]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_child_and_parent_both_deliver_nothing_twice(
    make_client: MakeClient, receiver: Receiver
) -> None:
    # Big batches and a long interval: what is queued at fork time is still queued.
    client = make_client(flush_at=100, flush_interval=60.0)
    before = [client.track(user_id="p", event=f"before-{i}") for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded fork" (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            ids = [client.track(user_id="c", event=f"child-{i}") for i in range(3)]
            code = 0 if all(ids) and client.close(timeout=10) else 2
        finally:
            os._exit(code)
    after = [client.track(user_id="p", event=f"parent-{i}") for i in range(3)]
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert client.close(timeout=10)

    for messages in (receiver.batch_messages(), [r.json for r in receiver.at("/hook")]):
        events = Counter(m["event"] for m in messages)
        ids = Counter(m["messageId"] for m in messages)
        assert sorted(events) == sorted(
            [f"before-{i}" for i in range(3)] + [f"child-{i}" for i in range(3)]
            + [f"parent-{i}" for i in range(3)]
        )
        assert set(events.values()) == {1}, events  # nothing sent twice
        assert len(ids) == 9 and set(ids.values()) == {1}
        assert set(before + after) <= set(ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_clients_made_after_fork_never_repeat_the_parents_ids(
    make_client: MakeClient, receiver: Receiver
) -> None:
    # The preload pattern: the parent sent before forking, then each process makes its own
    # client. Ids come from a random generator the child inherits; they must still differ.
    first = make_client(webhooks=[], shared_secret=None)
    first.track(user_id="p", event="warm-up")
    first.close(timeout=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    side = "child" if pid == 0 else "parent"
    ok = False
    try:
        client = outbound.Client("k", endpoint=receiver.url, flush_at=100, proxy_from_env=False)
        for i in range(5):
            client.track(user_id=side, event=f"{side}-{i}")
        ok = client.close(timeout=10)
    finally:
        if pid == 0:
            os._exit(0 if ok else 2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and ok
    ids = Counter(m["messageId"] for m in receiver.batch_messages())
    assert len(ids) == 11 and set(ids.values()) == {1}


def run_script(tmp_path: Path, body: str, *args: str) -> "subprocess.CompletedProcess[str]":
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, env={**os.environ, "DEBUG": ""},
    )


def test_atexit_delivers_what_was_left_queued(tmp_path: Path, receiver: Receiver) -> None:
    done = run_script(tmp_path, """
        import sys, outbound
        url = sys.argv[1]
        client = outbound.Client("k", endpoint=url, webhooks=[url + "/hook"],
                                 shared_secret="s", flush_at=100, flush_interval=60.0)
        for i in range(3):
            client.track(user_id="u", event=f"exit-{i}")
        print("leaving without flush or close")
    """, receiver.url)
    assert done.returncode == 0, done.stderr
    assert sorted(m["event"] for m in receiver.batch_messages()) == ["exit-0", "exit-1", "exit-2"]
    assert len(receiver.at("/hook")) == 3


def test_atexit_wait_is_bounded(tmp_path: Path, receiver: Receiver) -> None:
    receiver.delay["/v1/batch"] = 20.0  # never answers in time
    started = time.monotonic()
    done = run_script(tmp_path, """
        import sys, outbound
        client = outbound.Client("k", endpoint=sys.argv[1], flush_at=1, timeout=30.0,
                                 atexit_timeout=0.5)
        client.track(user_id="u", event="stuck")
    """, receiver.url)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert elapsed < 8.0, elapsed
    assert len(receiver.at("/v1/batch")) == 1  # it was being sent, just not answered


def test_a_dropped_client_closes_without_hanging(receiver: Receiver) -> None:
    client: List[outbound.Client] = [outbound.Client(
        "k", endpoint=receiver.url, flush_at=100, proxy_from_env=False)]
    client[0].track(user_id="u", event="dropped-ref")
    started = time.monotonic()
    client.clear()  # the last reference: closes, delivering what was queued
    assert time.monotonic() - started < 6.0
    assert receiver.wait_for(lambda r: len(r.batch_messages()) == 1, timeout=5)
