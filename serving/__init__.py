"""Serving trained agents on real schedulers (design: docs/serving.md)."""
