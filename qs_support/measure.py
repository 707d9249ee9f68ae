"""Measured values, reported one way: a line `QS-MEASURED {json}` on standard output per
value, which tests/flake_hunt.py collects over many runs (the spread of each value next to
its bounds) and a reader of a CI log can grep."""
import json
import sys


def measured(name, value, unit="", expected=None, low=None, high=None, test=None):
    """Reports one measured value. name: what was measured ("channel upload rate");
    expected: the value the check aims at; low/high: the bounds it accepts (either may be
    None); test: a unittest.TestCase or an id, to tell apart values of several tests."""
    doc = {"name": name, "value": value, "unit": unit}
    if test is not None:
        doc["test"] = test if isinstance(test, str) else test.id().rsplit(".", 1)[-1]
    if expected is not None:
        doc["expected"] = expected
    if low is not None or high is not None:
        doc["low"], doc["high"] = low, high
    sys.stdout.write(f"\nQS-MEASURED {json.dumps(doc)}\n")
    sys.stdout.flush()
    return value
