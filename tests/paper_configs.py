#!/usr/bin/env python3
"""Checks the paper-exact configs against values transcribed from the papers.

    python3 tests/paper_configs.py ROTOR TABLE.tsv...
    python3 tests/paper_configs.py ROTOR --expect-fail TABLE.tsv   # every row must mismatch

A table (tests/paper_values/<paper>.tsv) has one row per value: config path (from the
repository root), key, the paper's value, and where the paper gives it (table, section).
The key is section.key, or a product of keys and numbers (train.micro_batch*train.grad_accum)
for a value the paper states as one number. Values are compared after rotor has read the
config (`rotor info CONFIG --write-config`), so defaults count: a key missing from the
config is checked at the value rotor would use. Numbers compare to a relative 1e-9;
anything else compares as text. rotor runs in tests/paper_values/stub/, whose data/ holds tiny
stand-ins for the files that configs name by relative path and that rotor reads to derive a
shape (PTB's characters: the vocabulary); no row may check a value derived from them.

Every config under configs/paper/ must have rows in some table (else the test fails), so a
new paper config cannot skip the check; configs named *-authors-code.ini follow the
authors' code instead of the paper and are exempt. Exit status 0 when every row matches.
"""
import configparser
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUB = os.path.join(ROOT, "tests", "paper_values", "stub")


def read_table(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 4 or not all(c.strip() for c in cols):
                sys.exit(f"{path}:{n}: expected 4 tab-separated columns "
                         f"(config, key, value, source), got {len(cols)}: {line!r}")
            rows.append((f"{path}:{n}", *[c.strip() for c in cols]))
    return rows


def effective_config(rotor, config, cache):
    if config not in cache:
        path = os.path.join(ROOT, config)
        if not os.path.isfile(path):
            cache[config] = f"no such config {config}"
            return cache[config]
        with tempfile.NamedTemporaryFile("r", suffix=".ini") as out:
            r = subprocess.run([os.path.abspath(rotor), "info", path, "--write-config", out.name],
                               capture_output=True, text=True, cwd=STUB)
            if r.returncode:
                cache[config] = f"rotor info {config} failed: {r.stderr.strip()}"
            else:
                cp = configparser.ConfigParser(comment_prefixes=(";",), interpolation=None)
                cp.read(out.name)
                cache[config] = cp
    return cache[config]


def number(s):
    try:
        return float(s)
    except ValueError:
        return None


def lookup(cp, expr):
    """The value of section.key, or of a product of keys and numbers."""
    factors = expr.split("*")
    if len(factors) == 1 and number(expr) is None:
        sec, _, key = expr.partition(".")
        if not cp.has_option(sec, key):
            return None, f"key {expr} is not read for this config"
        return cp.get(sec, key), None
    prod = 1.0
    for fac in factors:
        v = number(fac)
        if v is None:
            got, err = lookup(cp, fac)
            if err:
                return None, err
            v = number(got)
            if v is None:
                return None, f"{fac} = {got} is not a number"
        prod *= v
    return repr(prod), None


def same(got, want):
    g, w = number(got), number(want)
    if g is not None and w is not None:
        return math.isclose(g, w, rel_tol=1e-9, abs_tol=0.0) or g == w
    return got.lower() == want.lower()


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    rotor, args = argv[1], argv[2:]
    expect_fail = "--expect-fail" in args
    tables = [a for a in args if a != "--expect-fail"]
    cache, checked, bad = {}, set(), 0
    for table in tables:
        for where, config, key, want, source in read_table(table):
            checked.add(os.path.normpath(config))
            cp = effective_config(rotor, config, cache)
            if isinstance(cp, str):
                got, err = None, cp
            else:
                got, err = lookup(cp, key)
            ok = err is None and same(got, want)
            if ok == expect_fail:
                bad += 1
                what = err or f"{key} = {got}, the paper ({source}) has {want}"
                print(f"{'MATCHES' if expect_fail else 'FAIL'} {where}: {config}: {what}")
    if not expect_fail:
        paper_dir = os.path.join(ROOT, "configs", "paper")
        for dirpath, _, files in os.walk(paper_dir):
            for f in sorted(files):
                rel = os.path.normpath(os.path.relpath(os.path.join(dirpath, f), ROOT))
                if f.endswith(".ini") and not f.endswith("-authors-code.ini") and rel not in checked:
                    bad += 1
                    print(f"FAIL {rel}: a paper config with no row in {', '.join(tables)}")
    rows = sum(len(read_table(t)) for t in tables)
    print(f"{rows} rows in {len(tables)} tables, {len(cache)} configs: "
          f"{bad} {'unexpected matches' if expect_fail else 'mismatches'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
