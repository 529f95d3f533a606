"""The tables every run writes, and their columns (DESIGN.md, "Tables"). Ids join them."""

TABLES: dict[str, tuple[str, ...]] = {
    "runs": ("run_id", "experiment", "started_at", "git_sha", "toolkit_version", "config", "seed"),
    "games": ("game_id", "run_id", "seed", "preset", "winner", "win_reason", "days", "n_calls",
              "prompt_tokens", "completion_tokens", "cost_usd", "n_fallbacks", "wall_s", "config"),
    "players": ("game_id", "seat", "role", "side", "spec", "reflection", "experience", "strategy",
                "survived", "death_day", "death_cause"),
    "events": ("game_id", "seq", "day", "phase", "kind", "actor", "target", "text", "visibility", "fallback"),
    "calls": ("call_id", "run_id", "game_id", "session_id", "seq", "seat", "role", "day", "phase", "action", "spec",
              "model",
              "base_url", "temperature", "messages", "response_text", "parsed", "ok", "error", "attempts",
              "fallback", "latency_ms", "prompt_tokens", "completion_tokens", "cached_tokens",
              "usage_estimated", "cost_usd", "cache_hit", "started_at", "replay_key"),
    "sessions": ("session_id", "run_id", "task", "spec", "steps", "ended_by", "success", "cost_usd", "wall_s"),
    "tool_calls": ("session_id", "step", "tool", "args", "ok", "error", "duration_ms", "output_chars",
                   "truncated"),
    "attempts": ("call_id", "attempt", "error_kind", "status_code", "error", "latency_ms"),
    "beliefs": ("game_id", "seq", "day", "phase", "seat", "about", "guessed_role", "confidence", "call_id"),
}

# Columns renamed since earlier runs were written: {table: {old: new}}. ``toolkit.record.load.load`` applies them.
RENAMED: dict[str, dict[str, str]] = {"players": {"model": "spec"}, "sessions": {"model": "spec"}}
