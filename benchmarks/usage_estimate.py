"""How far the toolkit's token estimate (for an endpoint that reports no usage) is from a count that includes the
chat format: seeded classic7 games against the loopback server in its usage-less mode (``nousage``), every prompt
the shipped templates rendered. The estimate is what ``toolkit.llm.request.estimate_prompt_tokens`` gives; the
count it is compared with is the request's ``messages`` as JSON over 4 characters a token (each message's role and
quoting, what a tokenizer bills beside the text; the review of session 19 saw the estimate 4.3-4.5% under such a
server's count). Prints the ratio count / estimate (min, median, max) before and after the factor.

    python benchmarks/usage_estimate.py [--games 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from toolkit.llm.request import PROMPT_FACTOR, estimate_prompt_tokens, estimate_tokens, messages_text
from toolkit.record.load import load
from toolkit.testing.loopback_server import serve_in_subprocess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4)
    args = parser.parse_args()
    proc, url = serve_in_subprocess()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(args.games):
                subprocess.run([sys.executable, "-m", "toolkit", "play", "--model", f"openai:nousage@{url}",
                                "--seed", str(seed), "--quiet", "--out", tmp], check=True, capture_output=True)
            calls = load(Path(tmp), complete_games=False).calls
    finally:
        proc.terminate()
    old, new = [], []
    for text in calls["messages"]:
        messages = json.loads(text)
        count = len(json.dumps(messages)) / 4  # the chat format's count
        old.append(count / estimate_tokens(messages_text(messages)))
        new.append(count / estimate_prompt_tokens(messages))
    for name, ratios in (("content / 4 (before)", old), (f"x {PROMPT_FACTOR} (now)", new)):
        r = np.array(ratios)
        print(f"{name}: count / estimate over {len(r)} prompts of {args.games} games: min {r.min():.3f}, "
              f"median {np.median(r):.3f}, max {r.max():.3f}")


if __name__ == "__main__":
    main()
