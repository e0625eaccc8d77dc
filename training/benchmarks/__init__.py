"""Benchmarks behind ``aco-env bench``: each section is a function returning a JSON-ready dict."""
