"""The interval arithmetic of the companion reports (report.py, independent_report.py), the same rule
as every report's Claims (experiments/paired_interval.h): Student t for a mean, a gain paired by seed
within one implementation, ours − oracle unpaired (Welch, df rounded down), and the verdict."""
import math

# The 0.975 quantile of Student's t, df 1..30 (experiments/paired_interval.cc holds the same table).
T975 = [12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788,
        2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
        2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423]


def t975(df):
    if df < 1:
        return float('nan')
    if df <= 30:
        return T975[int(df) - 1]
    z = 1.959963984540054
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def mean_interval(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, None, n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, t975(n - 1) * sd / math.sqrt(n), n


def welch(a, b):
    """Mean of a − mean of b and its 95% Welch interval half-width (df rounded down)."""
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    if va + vb == 0:
        return ma - mb, 0.0
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return ma - mb, t975(math.floor(df)) * math.sqrt(va + vb)


def verdict(m, half, margin):
    """experiments/paired_interval.h's rule: reproduced / not reproduced / inconclusive."""
    if half is None:
        return 'inconclusive'
    if m + half < margin - 1e-9:
        return 'not reproduced'
    if m - half > min(0.0, margin) + 1e-9:
        return 'reproduced'
    return 'inconclusive'
