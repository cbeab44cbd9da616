#!/usr/bin/env bash
# The 370M configs have the parameter counts of docs/models.md §named-configurations (gla ~375M, gdn ~400M, fox ~374M,
# fox-pro ~381M, transformer ~374M, deltanet ~374M, mamba2 ~382M, lru ~374M, rotrnn ~377M), and every config's count equals a closed-form count written here
# independently of the C parameter table.
set -euo pipefail
rotor=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
for f in "$configs"/*-370m-*.ini "$configs"/{mamba2,lru,rotrnn}-370m.ini; do
  echo "$(basename "$f" .ini) $("$rotor" info "$f" | head -1 | sed -E 's/.*\(([0-9]+);.*/\1/')"
done | /usr/bin/python3 -c '
import math, re, sys
V, d, L = 32000, 1024, 24
def mlp(ratio):
    w = int(d * ratio * 2 / 3)
    return 3 * d * 256 * math.ceil(w / 256)
def pe(name, H, dk):
    if "selective" not in name:
        return 0
    P = dk // 2
    n = d * P + H + H * P * 4 + P          # weight-normed phi, scalars, conv, temperature
    if "bias" in name: n += H * P
    if "pg" in name: n += d * H + H
    return n
def layer(name):
    if name.startswith("mamba2"):  # docs/models.md §mamba2: no MLP, one norm per block
        I, P, N, G = 2 * d, 64, 128, 1
        H, conv = I // P, I + 2 * G * N
        return d * (I + conv + H) + conv * 4 + conv + 3 * H + I + I * d - d
    if name.startswith("lru"):  # docs/models.md §lru: nu, theta, gamma [N]; B_re, B_im, C_re, C_im; D
        N = 1024
        return 3 * N + 4 * N * d + d + mlp(4)
    if name.startswith("rotrnn"):  # §rotrnn: theta [H, n/2], gamma [H], M [H, n, n], B [N, d], C [d, N], D
        N, H = 2048, 32
        n = N // H
        return H * n // 2 + H + H * n * n + 2 * N * d + d + mlp(4)
    if name.startswith("gla"):
        H, Kd, Vd = 4, d // 2, d
        n = 2 * d * Kd + 2 * d * Vd + Vd * d + d * 16 + 16 * Kd + Kd + (2 * Kd + Vd) * 4 + Vd // H
        return n + mlp(4) + pe(name, H, Kd // H)
    if name.startswith("gdn"):
        H, dk = 8, 128
        Kd = Vd = H * dk
        n = 2 * d * Kd + 2 * d * Vd + Vd * d + 2 * d * H + 2 * H + (2 * Kd + Vd) * 4 + dk
        return n + mlp(4) + pe(name, H, dk)
    if name.startswith("deltanet"):         # q, k, v, o, b_proj, convs, o_norm; no gate
        H, dk = 8, 128
        Kd = Vd = H * dk
        n = 2 * d * Kd + 2 * d * Vd + d * H + (2 * Kd + Vd) * 4 + dk
        return n + mlp(4) + pe(name, H, dk)
    H = 16
    if name.startswith("transformer"):
        return 4 * d * d + mlp(4) + pe(name, H, d // H)
    n = 4 * d * d + d * H + H
    if name.startswith("fox-pro"):
        return n + d * d + d + 2 * d + 2 * H * d + mlp(3.5) + pe(name, H, d // H)
    return n + mlp(4) + pe(name, H, d // H)
spec = {"mamba2": 382e6, "gla": 375e6, "gdn": 400e6, "fox-pro": 381e6, "fox": 374e6,
        "transformer": 374e6, "deltanet": 374e6, "lru": 374e6, "rotrnn": 377e6}
bad = 0
for line in sys.stdin:
    name, got = line.split()
    want = 2 * V * d + d + (48 if name.startswith("mamba2") else L) * (layer(name) + 2 * d)
    stack = next(s for s in spec if name.startswith(s))
    ok = int(got) == want and abs(int(got) - spec[stack]) < 0.01 * spec[stack]
    status = "ok" if ok else "MISMATCH: expected %d" % want
    print(f"{name:28s} {int(got):>11,d} {status}")
    bad += not ok
sys.exit(bad != 0)
'
