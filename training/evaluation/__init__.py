"""Evaluation: episodes played, agents scored over paired seeds, results written, printed and plotted."""
