// Position embeddings (SPEC §5): RoPE angle tables, the half-split rotation of pairs
// (j, j + D/2) in fp32, the Selective RoPE angle scan (steps 4-7: bias, phase gate,
// cumulative sum per segment, temperatures) and its weight-normalised projection weight.
#include <stdint.h>

#include "cuda_common.cuh"
#include "cuda_ops.h"
#include "util/error.h"

namespace {

constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ float2 ld2(const bf16 *p) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(p));
}
__device__ __forceinline__ void st2(bf16 *p, float2 v) {
    *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(v.x, v.y);
}
__device__ __forceinline__ float2 ldf2(const float *p) { return *reinterpret_cast<const float2 *>(p); }
__device__ __forceinline__ void stf2(float *p, float2 v) { *reinterpret_cast<float2 *>(p) = v; }
// ---- RoPE ----
// angle[n, j] = pos_n theta^(-2j/D), in fp64 like the CPU reference, rounded once.
__global__ void rope_angles_kernel(float *__restrict__ angle, const int32_t *__restrict__ pos,
                                   int64_t count, int D, double theta) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int P = D / 2;
    int j = (int)(i % P);
    angle[i] = (float)((double)pos[i / P] * pow(theta, -2.0 * j / D));
}

// One thread per two pairs (j, j+P), (j+1, j+1+P) of a row (n, h); x, y [N, H, 2P].
// y_j = x_j cos a - x_{j+P} sin a, y_{j+P} = x_j sin a + x_{j+P} cos a.
__global__ void rotate_fwd_kernel(bf16 *__restrict__ y, const bf16 *__restrict__ x,
                                  const float *__restrict__ angle, int64_t count, int H, int P,
                                  int per_head) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int64_t row = i / (P / 2); // n * H + h
    int j = 2 * (int)(i % (P / 2));
    float2 a = ldf2(angle + (per_head ? row : row / H) * P + j), c, s;
    sincosf(a.x, &s.x, &c.x);
    sincosf(a.y, &s.y, &c.y);
    int64_t xi = row * 2 * P + j;
    float2 x0 = ld2(x + xi), x1 = ld2(x + xi + P);
    st2(y + xi, x0 * c - x1 * s);
    st2(y + xi + P, x0 * s + x1 * c);
}

// dx = rotate(dy, -a); with y = rotate(x, a): dL/da = dy_{j+P} y_j - dy_j y_{j+P}.
__global__ void rotate_bwd_kernel(bf16 *__restrict__ dx, float *__restrict__ dangle,
                                  const bf16 *__restrict__ dy, const bf16 *__restrict__ x,
                                  const float *__restrict__ angle, int64_t count, int H, int P,
                                  int per_head) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int64_t row = i / (P / 2);
    int j = 2 * (int)(i % (P / 2));
    int64_t ai = (per_head ? row : row / H) * P + j;
    float2 a = ldf2(angle + ai), c, s;
    sincosf(a.x, &s.x, &c.x);
    sincosf(a.y, &s.y, &c.y);
    int64_t xi = row * 2 * P + j;
    float2 d0 = ld2(dy + xi), d1 = ld2(dy + xi + P);
    st2(dx + xi, d0 * c + d1 * s);
    st2(dx + xi + P, d1 * c - d0 * s);
    if (dangle) {
        float2 x0 = ld2(x + xi), x1 = ld2(x + xi + P);
        float2 y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
        stf2(dangle + ai, ldf2(dangle + ai) + (d1 * y0 - d0 * y1));
    }
}

// ---- Selective RoPE angle scan ----
// A segmented scan along the tokens in three passes over tiles of SCAN_TILE tokens (tiles may
// straddle segments). A tile is SCAN_WARPS runs of SCAN_RUN tokens, one run per warp, two
// channels per lane (64 per block), the run's increments in registers. A segment boundary
// restarts the sum; the state after a stretch of tokens is (restarted?, sum), combined as
// (f1, v1) then (f2, v2) -> (f1 | f2, f2 ? v2 : v1 + v2).
//   1. every tile's state from zero (tile kernel, FINAL = false);
//   2. per channel, the state entering each tile (scan_carry_kernel);
//   3. every tile again from its carry, writing the outputs (tile kernel, FINAL = true).
// Forward: Phi = cumsum of phi' from the segment start (SPEC §5 step 6). Backward: dphi' =
// cumsum of dPhi = temp dangle from the segment end.
constexpr int SCAN_RUN = 32;
constexpr int SCAN_WARPS = 8;
constexpr int SCAN_TILE = SCAN_RUN * SCAN_WARPS;

// The state entering each run of the tile: runs combined in scan order from the tile's
// carry (warp 0; sval holds the runs' own states and is replaced by the entering states).
template <bool REV>
__device__ __forceinline__ void enter_runs(float2 (*sval)[32], const int *sflag, float2 carry) {
    float2 a = carry;
    for (int k = 0; k < SCAN_WARPS; k++) {
        int r = REV ? SCAN_WARPS - 1 - k : k;
        float2 t = sval[r][threadIdx.x];
        sval[r][threadIdx.x] = a;
        a = sflag[r] ? t : a + t;
    }
}

// The tile's state from zero: runs combined in scan order (warp 0).
template <bool REV>
__device__ __forceinline__ void store_tile(float *tile_val, int *tile_flag, float2 (*sval)[32],
                                           const int *sflag, int C, int c) {
    float2 a = f2(0.f, 0.f);
    int f = 0;
    for (int k = 0; k < SCAN_WARPS; k++) {
        int r = REV ? SCAN_WARPS - 1 - k : k;
        a = sflag[r] ? sval[r][threadIdx.x] : a + sval[r][threadIdx.x];
        f |= sflag[r];
    }
    if (c < C) stf2(tile_val + (int64_t)blockIdx.x * C + c, a);
    if (threadIdx.x == 0 && blockIdx.y == 0) tile_flag[blockIdx.x] = f;
}

// Forward: phi' = (phi + exp(bias)) sigmoid(gate_logit) (SPEC §5 steps 4, 5), Phi = its
// cumulative sum, angle = temp_j Phi (step 7).
template <bool FINAL>
__global__ void __launch_bounds__(32 * SCAN_WARPS)
    selrope_fwd_tile_kernel(float *__restrict__ angle, float *__restrict__ Phi,
                            float *__restrict__ tile_val, int *__restrict__ tile_flag,
                            const float *__restrict__ tile_carry, const bf16 *__restrict__ phi,
                            const bf16 *__restrict__ bias, const bf16 *__restrict__ gl,
                            const float *__restrict__ temp, const int32_t *__restrict__ pos, int N,
                            int H, int P) {
    __shared__ float2 sval[SCAN_WARPS][32];
    __shared__ int sflag[SCAN_WARPS];
    int lane = threadIdx.x, wp = threadIdx.y, C = H * P;
    int c = 2 * (blockIdx.y * 32 + lane), h = c / P;
    bool ch = c < C;
    float2 z = f2(0.f, 0.f);
    float2 eb = bias && ch ? f2(expf(bf2f(bias[c])), expf(bf2f(bias[c + 1]))) : z;
    int n0 = blockIdx.x * SCAN_TILE + wp * SCAN_RUN;
    float2 v[SCAN_RUN];
    unsigned starts = 0; // bit i: token n0 + i starts its segment
#pragma unroll
    for (int i = 0; i < SCAN_RUN; i++) {
        int n = n0 + i;
        v[i] = z;
        if (n < N) {
            if (pos[n] == 0) starts |= 1u << i;
            if (ch) {
                float g = gl ? sigmoidf_(bf2f(gl[(int64_t)n * H + h])) : 1.f;
                v[i] = g * (ld2(phi + (int64_t)n * C + c) + eb);
            }
        }
    }
    float2 acc = z;
#pragma unroll
    for (int i = 0; i < SCAN_RUN; i++) {
        if (starts >> i & 1) acc = z;
        acc = acc + v[i];
    }
    sval[wp][lane] = acc;
    if (lane == 0) sflag[wp] = starts != 0;
    __syncthreads();
    if constexpr (!FINAL) {
        if (wp == 0) store_tile<false>(tile_val, tile_flag, sval, sflag, C, c);
    } else {
        if (wp == 0)
            enter_runs<false>(sval, sflag, ch ? ldf2(tile_carry + (int64_t)blockIdx.x * C + c) : z);
        __syncthreads();
        float2 tp = ch ? ldf2(temp + c % P) : z;
        acc = sval[wp][lane];
#pragma unroll
        for (int i = 0; i < SCAN_RUN; i++) {
            int n = n0 + i;
            if (starts >> i & 1) acc = z;
            acc = acc + v[i];
            if (n < N && ch) {
                stf2(Phi + (int64_t)n * C + c, acc);
                stf2(angle + (int64_t)n * C + c, tp * acc);
            }
        }
    }
}

// Backward: acc = dphi' = reverse cumsum of temp_j dangle, then
//   dphi = acc g,  dbias += acc g exp(bias),  dgate_logit = g (1-g) sum_j acc (phi + exp(bias)),
//   dtemp_j += sum dangle Phi;
// dbias and dtemp as per-tile partials part_b, part_t [tile][C] (NULL when not wanted).
template <bool FINAL>
__global__ void __launch_bounds__(32 * SCAN_WARPS)
    selrope_bwd_tile_kernel(bf16 *__restrict__ dphi, float *__restrict__ part_b,
                            float *__restrict__ part_t, bf16 *__restrict__ dgl,
                            float *__restrict__ tile_val, int *__restrict__ tile_flag,
                            const float *__restrict__ tile_carry, const float *__restrict__ dangle,
                            const bf16 *__restrict__ phi, const bf16 *__restrict__ bias,
                            const bf16 *__restrict__ gl, const float *__restrict__ temp,
                            const float *__restrict__ Phi, const int32_t *__restrict__ pos, int N,
                            int H, int P) {
    __shared__ float2 sval[SCAN_WARPS][32];
    __shared__ int sflag[SCAN_WARPS];
    int lane = threadIdx.x, wp = threadIdx.y, C = H * P;
    int c = 2 * (blockIdx.y * 32 + lane), h = c / P;
    bool ch = c < C;
    float2 z = f2(0.f, 0.f);
    float2 tp = ch ? ldf2(temp + c % P) : z;
    int n0 = blockIdx.x * SCAN_TILE + wp * SCAN_RUN;
    float2 da[SCAN_RUN];
    unsigned ends = 0; // bit i: token n0 + i ends its segment
#pragma unroll
    for (int i = 0; i < SCAN_RUN; i++) {
        int n = n0 + i;
        da[i] = z;
        if (n < N) {
            if (n == N - 1 || pos[n + 1] == 0) ends |= 1u << i;
            if (ch) da[i] = ldf2(dangle + (int64_t)n * C + c);
        }
    }
    float2 acc = z;
#pragma unroll
    for (int i = SCAN_RUN - 1; i >= 0; i--) {
        if (ends >> i & 1) acc = z;
        acc = acc + tp * da[i];
    }
    sval[wp][lane] = acc;
    if (lane == 0) sflag[wp] = ends != 0;
    __syncthreads();
    if constexpr (!FINAL) {
        if (wp == 0) store_tile<true>(tile_val, tile_flag, sval, sflag, C, c);
    } else {
        if (wp == 0)
            enter_runs<true>(sval, sflag, ch ? ldf2(tile_carry + (int64_t)blockIdx.x * C + c) : z);
        __syncthreads();
        float2 eb = bias && ch ? f2(expf(bf2f(bias[c])), expf(bf2f(bias[c + 1]))) : z;
        float2 db = z, dt = z;
        acc = sval[wp][lane];
#pragma unroll
        for (int i = SCAN_RUN - 1; i >= 0; i--) {
            int n = n0 + i;
            if (ends >> i & 1) acc = z;
            acc = acc + tp * da[i];
            if (n < N) { // uniform over the warp: the lanes below share the token
                float g = gl && ch ? sigmoidf_(bf2f(gl[(int64_t)n * H + h])) : 1.f;
                float sj = 0.f; // this lane's part of sum_j acc (phi + exp(bias))
                if (ch) {
                    int64_t idx = (int64_t)n * C + c;
                    if (dphi) st2(dphi + idx, g * acc);
                    db = db + g * (acc * eb);
                    if (dgl) {
                        float2 p = ld2(phi + idx) + eb;
                        sj = acc.x * p.x + acc.y * p.y;
                    }
                    if (part_t) dt = dt + da[i] * ldf2(Phi + idx);
                }
                if (dgl) { // the P/2 lanes of a head are aligned: 64 % P == 0
                    for (int o = P / 4; o > 0; o >>= 1) sj += __shfl_xor_sync(FULL, sj, o);
                    if (ch && c % P == 0) dgl[(int64_t)n * H + h] = f2bf(sj * g * (1.f - g));
                }
            }
        }
        if (part_b || part_t) { // sums over the tile's runs
            __shared__ float2 sred[2][SCAN_WARPS][32];
            sred[0][wp][lane] = db;
            sred[1][wp][lane] = dt;
            __syncthreads();
            if (wp == 0 && ch) {
                float2 sb = z, st = z;
                for (int r = 0; r < SCAN_WARPS; r++) {
                    sb = sb + sred[0][r][lane];
                    st = st + sred[1][r][lane];
                }
                if (part_b) stf2(part_b + (int64_t)blockIdx.x * C + c, sb);
                if (part_t) stf2(part_t + (int64_t)blockIdx.x * C + c, st);
            }
        }
    }
}

// Per float column c, the state entering every tile (step 2 above): a warp per column walks
// the tiles in scan order in batches of 32 (a lane per tile), a segmented inclusive scan
// across the lanes plus the batch's incoming state, shifted one lane.
template <bool REV>
__global__ void scan_carry_kernel(float *__restrict__ carry, const float *__restrict__ tile_val,
                                  const int *__restrict__ tile_flag, int ntile, int C) {
    int lane = threadIdx.x % 32;
    int c = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (c >= C) return;
    float run = 0.f;
    for (int b = 0; b < ntile; b += 32) {
        int t = REV ? ntile - 1 - b - lane : b + lane;
        bool ok = t >= 0 && t < ntile;
        int f = ok ? tile_flag[t] : 0;
        float v = ok ? tile_val[(int64_t)t * C + c] : 0.f;
        for (int o = 1; o < 32; o <<= 1) {
            float vo = __shfl_up_sync(FULL, v, o);
            int fo = __shfl_up_sync(FULL, f, o);
            if (lane >= o) {
                if (!f) v += vo;
                f |= fo;
            }
        }
        float incl = f ? v : run + v;
        float excl = __shfl_up_sync(FULL, incl, 1);
        if (lane == 0) excl = run;
        if (ok) carry[(int64_t)t * C + c] = excl;
        run = __shfl_sync(FULL, incl, 31);
    }
}

// Scratch of the scan: tile states, carries and partials [ntile][C] each, then the flags.
struct ScanScratch {
    float *val, *carry, *part_b, *part_t;
    int *flag;
};

ScanScratch scan_scratch(int ntile, int C, int nparts) {
    size_t nval = (size_t)ntile * C; // even: C is even, so every array stays 8-byte aligned
    float *p = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * nval * (2 + nparts) +
                                                    sizeof(int) * ntile);
    ScanScratch s;
    s.val = p;
    s.carry = p + nval;
    s.part_b = nparts ? p + 2 * nval : nullptr;
    s.part_t = nparts ? p + 3 * nval : nullptr;
    s.flag = (int *)(p + nval * (2 + nparts));
    return s;
}

void selrope_check(const char *op, int P, const void *phi, const void *bias, const void *temp,
                   const void *f32a, const void *f32b) {
    if (P < 2 || P % 2 || 64 % P)
        rt_die("%s: P=%d angle channels per head unsupported (an even divisor of 64)", op, P);
    cuda_check_aligned(phi, 4, op);
    cuda_check_aligned(bias, 4, op);
    cuda_check_aligned(temp, 8, op);
    cuda_check_aligned(f32a, 8, op);
    cuda_check_aligned(f32b, 8, op);
}

// ---- weight norm ----
// One block per head h, WN_THREADS / P * P threads: thread k takes column j = k % P and rows
// k / P, k / P + WN_THREADS / P, ...; column sums over the row groups in shared memory.
constexpr int WN_THREADS = 256;

__global__ void __launch_bounds__(WN_THREADS)
    weightnorm_fwd_kernel(bf16 *__restrict__ wn, const bf16 *__restrict__ w,
                          const bf16 *__restrict__ scale, int Din, int P) {
    __shared__ float red[WN_THREADS], nrm[WN_THREADS];
    int k = threadIdx.x, j = k % P, r0 = k / P, nr = blockDim.x / P;
    int64_t base = (int64_t)blockIdx.x * Din * P;
    float ss = 0.f;
    for (int i = r0; i < Din; i += nr) {
        float v = bf2f(w[base + (int64_t)i * P + j]);
        ss += v * v;
    }
    red[k] = ss;
    __syncthreads();
    if (k < P) {
        float t = 0.f;
        for (int r = 0; r < nr; r++) t += red[r * P + k];
        nrm[k] = fmaxf(sqrtf(t), 1e-12f);
    }
    __syncthreads();
    float s = bf2f(scale[blockIdx.x]);
    for (int i = r0; i < Din; i += nr) {
        int64_t idx = base + (int64_t)i * P + j;
        wn[idx] = f2bf(s * bf2f(w[idx]) / nrm[j]);
    }
}

// u = w / |w| per column: dscale_h += sum_j u.dwn, dw += s (dwn - u (u.dwn)) / |w|.
__global__ void __launch_bounds__(WN_THREADS)
    weightnorm_bwd_kernel(float *__restrict__ dw, float *__restrict__ dscale,
                          const float *__restrict__ dwn, const bf16 *__restrict__ w,
                          const bf16 *__restrict__ scale, int Din, int P) {
    __shared__ float red[2][WN_THREADS], nrm[WN_THREADS], udot[WN_THREADS];
    int k = threadIdx.x, j = k % P, r0 = k / P, nr = blockDim.x / P;
    int64_t base = (int64_t)blockIdx.x * Din * P;
    float ss = 0.f, dot = 0.f;
    for (int i = r0; i < Din; i += nr) {
        int64_t idx = base + (int64_t)i * P + j;
        float v = bf2f(w[idx]);
        ss += v * v;
        dot += v * dwn[idx];
    }
    red[0][k] = ss;
    red[1][k] = dot;
    __syncthreads();
    if (k < P) {
        float t = 0.f, d = 0.f;
        for (int r = 0; r < nr; r++) {
            t += red[0][r * P + k];
            d += red[1][r * P + k];
        }
        nrm[k] = fmaxf(sqrtf(t), 1e-12f);
        udot[k] = d / nrm[k];
    }
    __syncthreads();
    if (k == 0) {
        float t = 0.f;
        for (int q = 0; q < P; q++) t += udot[q];
        dscale[blockIdx.x] += t;
    }
    float s = bf2f(scale[blockIdx.x]);
    for (int i = r0; i < Din; i += nr) {
        int64_t idx = base + (int64_t)i * P + j;
        dw[idx] += s * (dwn[idx] - bf2f(w[idx]) / nrm[j] * udot[j]) / nrm[j];
    }
}

void weightnorm_check(const char *op, int P) {
    if (P < 1 || P > WN_THREADS) rt_die("%s: P=%d columns per head unsupported (1..%d)", op, P,
                                        WN_THREADS);
}

void rotate_check(const char *op, int D, const void *a, const void *b, const void *angle) {
    if (D % 4) rt_die("%s: head size D=%d must be a multiple of 4", op, D);
    cuda_check_aligned(a, 4, op);
    cuda_check_aligned(b, 4, op);
    cuda_check_aligned(angle, 8, op);
}

} // namespace

void cuda_rope_angles(void *angle, const Seqs *s, int D, double theta) {
    if (D % 2) rt_die("rope_angles: head size D=%d must be even", D);
    int64_t count = s->ntok * (D / 2);
    if (count == 0) return;
    rope_angles_kernel<<<(unsigned)cdiv(count, 256), 256, 0, cuda_stream()>>>(
        (float *)angle, s->dev_pos, count, D, theta);
    CUDA_LAUNCHED();
}

void cuda_rotate_fwd(void *y, const void *x, const void *angle, int64_t N, int H, int D,
                     int per_head) {
    rotate_check("rotate_fwd", D, y, x, angle);
    int64_t count = N * H * (D / 4);
    if (count == 0) return;
    rotate_fwd_kernel<<<(unsigned)cdiv(count, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)y, (const bf16 *)x, (const float *)angle, count, H, D / 2, per_head);
    CUDA_LAUNCHED();
}

void cuda_rotate_bwd(void *dx, void *dangle, const void *dy, const void *x, const void *angle,
                     int64_t N, int H, int D, int per_head) {
    rotate_check("rotate_bwd", D, dx, dy, angle);
    cuda_check_aligned(x, 4, "rotate_bwd");
    cuda_check_aligned(dangle, 8, "rotate_bwd");
    if (dangle && !per_head) rt_die("rotate_bwd: dangle needs per-head angles");
    int64_t count = N * H * (D / 4);
    if (count == 0) return;
    rotate_bwd_kernel<<<(unsigned)cdiv(count, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)dx, (float *)dangle, (const bf16 *)dy, (const bf16 *)x, (const float *)angle,
        count, H, D / 2, per_head);
    CUDA_LAUNCHED();
}

void cuda_selrope_angles_fwd(void *angle, void *Phi, const void *phi, const void *bias,
                             const void *gate_logit, const void *temp, const Seqs *s, int H,
                             int P) {
    selrope_check("selrope_angles_fwd", P, phi, bias, temp, angle, Phi);
    int N = (int)s->ntok, C = H * P;
    if (N == 0 || C == 0) return;
    int ntile = (int)cdiv(N, SCAN_TILE);
    ScanScratch sc = scan_scratch(ntile, C, 0);
    dim3 grid((unsigned)ntile, (unsigned)cdiv(C, 64)), block(32, SCAN_WARPS);
    const bf16 *ph = (const bf16 *)phi, *b = (const bf16 *)bias, *g = (const bf16 *)gate_logit;
    const float *tp = (const float *)temp;
    selrope_fwd_tile_kernel<false><<<grid, block, 0, cuda_stream()>>>(
        nullptr, nullptr, sc.val, sc.flag, nullptr, ph, b, g, tp, s->dev_pos, N, H, P);
    CUDA_LAUNCHED();
    scan_carry_kernel<false><<<(unsigned)cdiv(C, 8), 256, 0, cuda_stream()>>>(sc.carry, sc.val,
                                                                             sc.flag, ntile, C);
    CUDA_LAUNCHED();
    selrope_fwd_tile_kernel<true><<<grid, block, 0, cuda_stream()>>>(
        (float *)angle, (float *)Phi, nullptr, nullptr, sc.carry, ph, b, g, tp, s->dev_pos, N, H,
        P);
    CUDA_LAUNCHED();
}

void cuda_selrope_angles_bwd(void *dphi, void *dbias, void *dgate_logit, void *dtemp, void *dangle,
                             const void *phi, const void *bias, const void *gate_logit,
                             const void *temp, const void *Phi, const Seqs *s, int H, int P) {
    selrope_check("selrope_angles_bwd", P, phi, bias, temp, dangle, Phi);
    cuda_check_aligned(dphi, 4, "selrope_angles_bwd");
    int N = (int)s->ntok, C = H * P;
    if (N == 0 || C == 0) return;
    int ntile = (int)cdiv(N, SCAN_TILE);
    bool want_b = bias && dbias, want_t = dtemp != nullptr;
    ScanScratch sc = scan_scratch(ntile, C, want_b || want_t ? 2 : 0);
    dim3 grid((unsigned)ntile, (unsigned)cdiv(C, 64)), block(32, SCAN_WARPS);
    const bf16 *ph = (const bf16 *)phi, *b = (const bf16 *)bias, *g = (const bf16 *)gate_logit;
    const float *tp = (const float *)temp, *da = (const float *)dangle, *Ph = (const float *)Phi;
    selrope_bwd_tile_kernel<false><<<grid, block, 0, cuda_stream()>>>(
        nullptr, nullptr, nullptr, nullptr, sc.val, sc.flag, nullptr, da, ph, b, g, tp, Ph,
        s->dev_pos, N, H, P);
    CUDA_LAUNCHED();
    scan_carry_kernel<true><<<(unsigned)cdiv(C, 8), 256, 0, cuda_stream()>>>(sc.carry, sc.val,
                                                                            sc.flag, ntile, C);
    CUDA_LAUNCHED();
    float *pb = want_b ? sc.part_b : nullptr, *pt = want_t ? sc.part_t : nullptr;
    selrope_bwd_tile_kernel<true><<<grid, block, 0, cuda_stream()>>>(
        (bf16 *)dphi, pb, pt, (bf16 *)dgate_logit, nullptr, nullptr, sc.carry, da, ph, b, g, tp,
        Ph, s->dev_pos, N, H, P);
    CUDA_LAUNCHED();
    if (pb) cuda_colsum_add((float *)dbias, pb, ntile, C);
    if (pt) cuda_colsum_add((float *)dtemp, pt, ntile * H, P); // [tile][H][P]: rows tile * H + h
}

void cuda_weightnorm_fwd(void *wn, const void *w, const void *scale, int H, int Din, int P) {
    weightnorm_check("weightnorm_fwd", P);
    if (H == 0) return;
    weightnorm_fwd_kernel<<<H, WN_THREADS / P * P, 0, cuda_stream()>>>(
        (bf16 *)wn, (const bf16 *)w, (const bf16 *)scale, Din, P);
    CUDA_LAUNCHED();
}

void cuda_weightnorm_bwd(void *dw, void *dscale, const void *dwn, const void *w,
                         const void *scale, int H, int Din, int P) {
    weightnorm_check("weightnorm_bwd", P);
    if (H == 0) return;
    weightnorm_bwd_kernel<<<H, WN_THREADS / P * P, 0, cuda_stream()>>>(
        (float *)dw, (float *)dscale, (const float *)dwn, (const bf16 *)w, (const bf16 *)scale,
        Din, P);
    CUDA_LAUNCHED();
}
