"""End-to-end cost of one structured call: action → model wrapper → openai SDK → loopback server (instant
answer) → parse → call-log row. Prints median and p95 ms per call and calls/s (sequential calls).

    python benchmarks/call_overhead.py [N]
"""

import asyncio
import statistics
import sys
import tempfile
import time

from pydantic import BaseModel

from toolkit.prompting.structured_call import Action, with_choices
from toolkit.testing.loopback_server import serve_in_subprocess
from toolkit.llm import Request, get_model
from toolkit.record.run_log import CallLog, Run


class Pick(BaseModel):
    thought: str = ""
    target: str


async def main(n: int) -> None:
    model = with_choices(Pick, "target", tuple(f"Player{i}" for i in range(1, 8)))
    action = Action("pick", "reask.j2", model)
    server, base_url = serve_in_subprocess()  # its own process, as a real endpoint would be
    try:
        await run_calls(n, model, action, base_url)
    finally:
        server.terminate()


async def run_calls(n, model, action, base_url):
    with tempfile.TemporaryDirectory() as tmp, Run(tmp, "bench") as run:
        llm = get_model(f"openai:ok@{base_url}")
        log = CallLog(run)
        request = Request(game_id="bench", seat="Player1")
        for _ in range(50):  # warm up: connection, template cache, schema cache
            await action.run(llm, request, {"error": "warm"}, fallback=lambda: model(target="Player1"), log=log)
        times = []
        t_all = time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter()
            result = await action.run(llm, request, {"error": f"call {i}"}, fallback=lambda: model(target="Player1"),
                                      log=log)
            times.append((time.perf_counter() - t0) * 1000)
            assert not result.fallback
        wall = time.perf_counter() - t_all
    times.sort()
    print(f"structured calls: {n}")
    print(f"median ms/call: {statistics.median(times):.2f}")
    print(f"p95 ms/call: {times[int(0.95 * n) - 1]:.2f}")
    print(f"calls/s: {n / wall:.0f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
