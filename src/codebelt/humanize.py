"""Quantities worded for people: a computed duration reads "5 s", not "4.99994 s"."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """`seconds` as a person would say it: "250 ms", "1.5 s", "12 s", "2 min 5 s", "1 h 3 min"."""
    if seconds != seconds or seconds < 0:  # NaN or negative: nothing sensible to round
        return f"{seconds} s"
    if seconds < 0.9995:
        return f"{round(seconds * 1000)} ms"
    if seconds < 9.95:
        return f"{round(seconds, 1):g} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(round(whole / 60), 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"
