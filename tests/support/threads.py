"""Running one piece of test code from several threads at once."""
from __future__ import annotations

import threading
from typing import Callable


def run_in_threads(work: Callable[[int], None], n: int) -> None:
    """Call `work(k)` for k in range(n), each in its own thread, all started together
    (a barrier), and re-raise the first exception any of them raised."""
    start = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            start.wait()
            work(k)
        except BaseException as e:  # noqa: BLE001 - re-raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
