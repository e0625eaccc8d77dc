"""Spot outages, one place.

Drawn (``poisson``), replayed from availability traces (``replay``), and an episode's outages,
given or drawn, and what of them is known now (``outages``).
"""
