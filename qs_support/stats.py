"""Small statistics over measured samples."""


def percentile(values, fraction, empty=float("nan")):
    """The nearest-rank percentile of `values` at `fraction` (0.5 = the median, 0.99 = p99);
    `empty` for no values."""
    if not values:
        return empty
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * (len(values) - 1) + 0.5))]


def median(values):
    """The median (the mean of the middle two for an even count); NaN for no values."""
    values = sorted(values)
    n = len(values)
    return float("nan") if n == 0 else (values[n // 2] if n % 2 else
                                        (values[n // 2 - 1] + values[n // 2]) / 2)
