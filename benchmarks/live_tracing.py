"""Live tracing's cost to a game: the same games against the loopback server with and without
``TOOLKIT_OTLP_ENDPOINT`` (pointed at a local OTLP/HTTP receiver that decodes each request with
``opentelemetry-proto`` and counts its spans), interleaved, the median wall time per game side by side.

    python benchmarks/live_tracing.py [--games N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolkit.record.run_log import Run  # noqa: E402
from toolkit.testing.loopback_server import FakeOpenAIServer  # noqa: E402
from toolkit.werewolf.game import GameConfig, play_game  # noqa: E402


class Receiver(BaseHTTPRequestHandler):
    spans = 0

    def do_POST(self):  # noqa: N802 (http.server's name)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = ExportTraceServiceRequest.FromString(body)
        Receiver.spans += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def one_game(seed: int, model: str, folder: Path) -> tuple[float, int]:
    start = time.perf_counter()
    with Run(folder) as run:
        result = asyncio.run(play_game(GameConfig(seed=seed, model=model, max_days=3), run))
    return time.perf_counter() - start, result.n_calls if hasattr(result, "n_calls") else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=10)
    args = parser.parse_args(argv)
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    walls: dict[str, list[float]] = {"off": [], "on": []}
    with FakeOpenAIServer(seed=1) as server, tempfile.TemporaryDirectory() as tmp:
        model = f"openai:det@{server.base_url}"
        one_game(0, model, Path(tmp) / "warmup")
        for seed in range(args.games):
            for mode in (("off", "on") if seed % 2 == 0 else ("on", "off")):
                if mode == "on":
                    os.environ["TOOLKIT_OTLP_ENDPOINT"] = endpoint
                else:
                    os.environ.pop("TOOLKIT_OTLP_ENDPOINT", None)
                wall, _ = one_game(seed, model, Path(tmp) / mode)
                walls[mode].append(wall)
    os.environ.pop("TOOLKIT_OTLP_ENDPOINT", None)
    receiver.shutdown()
    off, on = statistics.median(walls["off"]), statistics.median(walls["on"])
    print(f"{args.games} games each way (loopback server, max 3 days), median wall per game:")
    print(f"  tracing off: {off * 1000:8.1f} ms")
    print(f"  tracing on : {on * 1000:8.1f} ms   ratio on/off {on / off:.3f}")
    print(f"  spans received by the OTLP receiver: {Receiver.spans}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
