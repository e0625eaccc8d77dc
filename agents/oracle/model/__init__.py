"""The episode as the oracle's programs read it: arrays, fits, time intervals, run lengths, term counts."""
