"""Judges: gate every candidate (no-op, oracle, infra) into a Verdict."""
