#!/usr/bin/env python3
"""Writes a long t,x,y,z recording (gzip) made of a real one repeated, the clock running on across repeats.

    tools/make-long-recording.py SOURCE.csv.gz DAYS OUT.csv.gz

Used by scripts/bench-analyze to make a week of real wrist data from OxWalk (../shared/data). Each repeat
starts one sample interval after the last ends, so the result has no gap and no jump. The rows' x, y, z text
is copied as it is; only t is rewritten.
"""
import gzip
import sys
import zlib
from decimal import Decimal


def main():
    source, days, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    with gzip.open(source, "rt") as f:
        header = f.readline()
        rows = [line.split(",", 1) for line in f if line.strip()]
    times = [Decimal(t) for t, _ in rows]
    decimals = max(-t.as_tuple().exponent for t in times)
    scale = 10 ** decimals
    units = [int(t * scale) for t in times]
    # One repeat lasts from its first sample to one typical interval after its last.
    period = units[-1] - units[0] + (units[1] - units[0])
    # Rows grouped by whole second, each group a template whose lines start with "@" for that second.
    by_second = {}
    for u, (_, rest) in zip(units, rows):
        whole, frac = divmod(u - units[0], scale)
        by_second.setdefault(whole, []).append("@.%0*d,%s" % (decimals, frac, rest))
    templates = sorted((whole, "".join(lines)) for whole, lines in by_second.items())
    if period % scale:
        sys.exit("the source's length is not a whole number of seconds; pick another recording")
    period_s = period // scale
    repeats = int(days * 86400 // period_s)
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(out, "wb") as f:
        f.write(compressor.compress(header.encode()))
        for k in range(repeats):
            base = k * period_s
            block = "".join(text.replace("@", str(base + whole)) for whole, text in templates)
            f.write(compressor.compress(block.encode()))
        f.write(compressor.flush())
    print("%s: %d repeats of %s, %d samples, %.2f days" % (out, repeats, source, repeats * len(rows),
                                                         repeats * period_s / 86400))


if __name__ == "__main__":
    main()
