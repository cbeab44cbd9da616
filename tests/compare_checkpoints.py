#!/usr/bin/python3
"""Compares the weights of two rotor checkpoints: exits 1 when any tensor differs by more
than --rtol (max |a - b| / max |b| per tensor), printing the worst tensor.
    compare_checkpoints.py CKPT_A CKPT_B [--rtol 1e-5]"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
import ref_safetensors as st  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("a")
ap.add_argument("b")
ap.add_argument("--rtol", type=float, default=1e-5)
args = ap.parse_args()
wa, _ = st.load(os.path.join(args.a, "model.safetensors"))
wb, _ = st.load(os.path.join(args.b, "model.safetensors"))
if set(wa) != set(wb):
    sys.exit(f"different tensors: {sorted(set(wa) ^ set(wb))}")
worst, name = 0.0, ""
for n in wa:
    d = float(np.max(np.abs(wa[n].astype(np.float64) - wb[n]))) / max(float(np.max(np.abs(wb[n]))), 1e-12)
    if d > worst:
        worst, name = d, n
print(f"max relative weight difference {worst:.3g} ({name})")
sys.exit(0 if worst <= args.rtol else 1)
