// Selective RoPE steps 3-8 (docs/models.md §position-embeddings) fused into one segmented scan
// along the tokens. Forward: short conv + activation of the raw increments phi_raw, + exp(bias), *
// sigmoid(gate logit) (the increments phi'), Phi = cumsum of phi' per segment, rotation of the
// half-split pairs (j, j+P) of q and k by temp_j Phi. Backward: the rotation's backward gives
// dangle (from q and k together), dPhi = temp_j dangle, dphi' = reverse cumsum of dPhi per segment,
// then the gate, bias and conv backward.
//
// The scan runs in three passes over tiles of WARPS * RUN tokens (tiles may straddle segments).
// A tile is WARPS runs of RUN tokens, one run per warp (RUN = 32; 16 or 8 in the selrope
// variants r16, r8 of src/device/kernel_variants.c, which hold fewer values in registers and
// give more blocks); a lane holds two channels c, c+1 of the
// H*P (64 per block), the run's scanned values in registers. A segment boundary restarts the
// sum; the state of a stretch of tokens is (restarted?, sum), combined as (f1, v1) then
// (f2, v2) -> (f1 | f2, f2 ? v2 : v1 + v2).
//   1. every tile's state from zero (tile kernel, FINAL = false);
//   2. per channel, the state entering each tile (scan_carry_kernel);
//   3. every tile again from its carry (tile kernel, FINAL = true), writing the outputs.
// Passes 1 and 3 both compute the scanned values from the op's inputs; only the per-tile states
// go through memory between them. The forward saves Phi only: the angles and the convolved
// increments are recomputed where needed.
#include <stdint.h>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"
#include "lib/segmented_scan.cuh"
#include "lib/selrope_pairs.cuh"
#include "lib/short_conv.cuh"
#include "util/error.h"

namespace {

constexpr int WARPS = 8; // store_taps_partial reduces blocks of 8 warps

// Channels c, c+1 of token n of an [N, C] tensor; zero outside the tokens.
__device__ __forceinline__ float2 ld_tok(const bf16 *x, int n, int N, int C, int c) {
    return n >= 0 && n < N ? ld2(x + (int64_t)n * C + c) : f2(0.f, 0.f);
}

// Backward of rotate_pairs: dx = rotate(dy, -a) (written if WRITE); returns dL/da =
// dy_{j+P} y_j - dy_j y_{j+P}.
template <bool WRITE>
__device__ __forceinline__ float2 rotate_pairs_bwd(bf16 *dx, const bf16 *dy, const bf16 *x, int P,
                                                   float2 c, float2 s) {
    float2 d0 = ld2(dy), d1 = ld2(dy + P), x0 = ld2(x), x1 = ld2(x + P);
    if (WRITE) {
        st2(dx, d0 * c + d1 * s);
        st2(dx + P, d1 * c - d0 * s);
    }
    return d1 * (x0 * c - x1 * s) - d0 * (x0 * s + x1 * c);
}

// The state entering each run of the tile: the runs combined in scan order from the tile's
// carry (warp 0; sval holds the runs' own states and is replaced by the entering states).
template <bool REV>
__device__ __forceinline__ void enter_runs(float2 (*sval)[32], const unsigned *sflag,
                                           float2 carry) {
    float2 a = carry;
    for (int k = 0; k < WARPS; k++) {
        int r = REV ? WARPS - 1 - k : k;
        float2 t = sval[r][threadIdx.x];
        sval[r][threadIdx.x] = a;
        a = sflag[r] ? t : a + t;
    }
}

struct FwdArgs {
    bf16 *qo, *ko;
    float *Phi;
    float *tile_val;         // [tile][C] (pass 1)
    int *tile_flag;          // [tile] (pass 1)
    const float *tile_carry; // [tile][C] (pass 3)
    const bf16 *q, *k, *phi_raw, *conv_w, *bias, *gl;
    const float *temp;
    const int32_t *pos;
    int N, H, P;
};

// Forward: phi' = g (act(conv(phi_raw)) + exp(bias)), g = sigmoid(gate logit) (docs/models.md
// §position-embeddings steps 3-5), Phi = its cumulative sum (step 6), q and k rotated by temp_j Phi
// (steps 7, 8).
template <int RUN, bool SILU, bool FINAL>
__global__ void __launch_bounds__(32 * WARPS) selrope_fwd_kernel(const FwdArgs a) {
    __shared__ float2 sval[WARPS][32];
    __shared__ unsigned sflag[WARPS];
    const int lane = threadIdx.x, wp = threadIdx.y, N = a.N, H = a.H, P = a.P, C = H * P;
    const int c = 2 * (blockIdx.y * 32 + lane), h = c / P, j = c % P;
    const bool ch = c < C;
    const float2 z = f2(0.f, 0.f);
    const int n0 = blockIdx.x * RUN * WARPS + wp * RUN;
    float2 v[RUN];       // phi' at the run's tokens
    unsigned starts = 0; // bit i: token n0 + i starts its segment
    {
        Taps tap = {};
        float2 eb = z, xm1 = z, xm2 = z, xm3 = z; // phi_raw 1, 2, 3 tokens back
        if (ch) {
            tap = load_taps(a.conv_w, c);
            eb = exp_bias(a.bias, c);
            xm3 = ld_tok(a.phi_raw, n0 - 3, N, C, c);
            xm2 = ld_tok(a.phi_raw, n0 - 2, N, C, c);
            xm1 = ld_tok(a.phi_raw, n0 - 1, N, C, c);
        }
#pragma unroll
        for (int i = 0; i < RUN; i++) {
            int n = n0 + i;
            v[i] = z;
            if (n < N) {
                int p = a.pos[n];
                if (p == 0) starts |= 1u << i;
                if (ch) {
                    float2 xc = ld2(a.phi_raw + (int64_t)n * C + c);
                    float2 pre = conv_pre(tap, p, xc, xm1, xm2, xm3);
                    if (SILU) pre = f2(silu1(pre.x), silu1(pre.y));
                    v[i] = gate_at(a.gl, n, H, h) * (pre + eb);
                    xm3 = xm2;
                    xm2 = xm1;
                    xm1 = xc;
                }
            }
        }
    }
    float2 acc = z;
#pragma unroll
    for (int i = 0; i < RUN; i++) {
        if (starts >> i & 1) acc = z;
        acc = acc + v[i];
    }
    sval[wp][lane] = acc;
    if (lane == 0) sflag[wp] = starts;
    __syncthreads();
    if constexpr (!FINAL) {
        if (wp == 0) { // the tile's state from zero
            float2 s = z;
            unsigned f = 0;
            for (int r = 0; r < WARPS; r++) {
                s = sflag[r] ? sval[r][lane] : s + sval[r][lane];
                f |= sflag[r];
            }
            if (ch) stf2(a.tile_val + (int64_t)blockIdx.x * C + c, s);
            if (lane == 0 && blockIdx.y == 0) a.tile_flag[blockIdx.x] = f != 0;
        }
    } else {
        if (wp == 0)
            enter_runs<false>(sval, sflag,
                              ch ? ldf2(a.tile_carry + (int64_t)blockIdx.x * C + c) : z);
        __syncthreads();
        const float2 tp = ch ? ldf2(a.temp + j) : z;
        acc = sval[wp][lane];
#pragma unroll
        for (int i = 0; i < RUN; i++) {
            int n = n0 + i;
            if (starts >> i & 1) acc = z;
            acc = acc + v[i];
            if (n < N && ch) {
                stf2(a.Phi + (int64_t)n * C + c, acc);
                float2 s, co;
                sincos2(tp * acc, &s, &co);
                int64_t x = ((int64_t)n * H + h) * 2 * P + j;
                rotate_pairs(a.qo + x, a.q + x, P, co, s);
                rotate_pairs(a.ko + x, a.k + x, P, co, s);
            }
        }
    }
}

struct BwdArgs {
    bf16 *dq, *dk, *dphi_raw, *dgl;
    float *part_w, *part_b, *part_t; // per-tile sums [tile][C * KW], [tile][C], or null (pass 3)
    float *tile_val;                 // [3][tile][C]: the tile's states from its token 0, 1, 2
    int *tile_flag;                  // [3][tile]
    const float *tile_carry;         // [tile][C] (pass 3)
    const bf16 *dqo, *dko, *q, *k, *phi_raw, *conv_w, *bias, *gl;
    const float *temp, *Phi;
    const int32_t *pos;
    int N, H, P;
};

// Backward. The scan (from the right) is over dPhi = temp_j dangle; its value at token n is
// S_n = dphi'_n, the sum of dPhi from n to the end of n's segment. Then per token:
//   dphi = g S (the gradient of the conv output), dpre = dphi act'(pre),
//   dbias += g S exp(bias), dgate_logit = g (1-g) sum_j S (act(pre) + exp(bias)),
//   dphi_raw[m] = sum_t w_t dpre[m + 3 - t] over the taps whose token is in m's segment,
//   dconv_w[c, t] += sum_n dpre[n] phi_raw[n - 3 + t], dtemp_j += sum dangle Phi.
// dphi_raw at the run's last tokens needs dpre, hence S, at the 3 tokens after the run: from
// the next run's states in shared memory, or for a tile's last run from the next tile's states
// from its tokens 1 and 2 (pass 1 stores them) and its carry.
template <int RUN, bool SILU, bool FINAL>
__global__ void __launch_bounds__(32 * WARPS) selrope_bwd_kernel(const BwdArgs a) {
    __shared__ float2 sval[WARPS][32];
    __shared__ float2 ssuf[2][WARPS][32]; // each run's state from its token 1, 2 to its end
    __shared__ unsigned sflag[WARPS];
    const int lane = threadIdx.x, wp = threadIdx.y, N = a.N, H = a.H, P = a.P, C = H * P;
    const int c = 2 * (blockIdx.y * 32 + lane), h = c / P, j = c % P;
    const bool ch = c < C;
    const float2 z = f2(0.f, 0.f);
    const int n0 = blockIdx.x * RUN * WARPS + wp * RUN;
    const float2 tp = ch ? ldf2(a.temp + j) : z;
    float2 x[RUN];     // dPhi at the run's tokens
    unsigned ends = 0; // bit i: token n0 + i ends its segment
    float2 dt = z;     // dtemp sums (pass 3)
#pragma unroll
    for (int i = 0; i < RUN; i++) {
        int n = n0 + i;
        x[i] = z;
        if (n < N) {
            if (n == N - 1 || a.pos[n + 1] == 0) ends |= 1u << i;
            if (ch) {
                float2 Ph = ldf2(a.Phi + (int64_t)n * C + c), s, co;
                sincos2(tp * Ph, &s, &co);
                int64_t xi = ((int64_t)n * H + h) * 2 * P + j;
                float2 da = rotate_pairs_bwd<FINAL>(a.dq + xi, a.dqo + xi, a.q + xi, P, co, s) +
                            rotate_pairs_bwd<FINAL>(a.dk + xi, a.dko + xi, a.k + xi, P, co, s);
                x[i] = da * tp;
                if (FINAL) dt = dt + da * Ph;
            }
        }
    }
    float2 acc = z, suf1 = z, suf2 = z;
#pragma unroll
    for (int i = RUN - 1; i >= 0; i--) {
        if (ends >> i & 1) acc = z;
        acc = acc + x[i];
        if (i == 2) suf2 = acc;
        if (i == 1) suf1 = acc;
    }
    sval[wp][lane] = acc;
    ssuf[0][wp][lane] = suf1;
    ssuf[1][wp][lane] = suf2;
    if (lane == 0) sflag[wp] = ends;
    __syncthreads();
    if constexpr (!FINAL) {
        if (wp == 0) {
            float2 s = z; // runs WARPS-1 .. 1 combined from the right
            unsigned f = 0;
            for (int r = WARPS - 1; r >= 1; r--) {
                s = sflag[r] ? sval[r][lane] : s + sval[r][lane];
                f |= sflag[r];
            }
            for (int t = 0; t < 3; t++) { // then run 0 from its token t
                float2 q = t == 0 ? sval[0][lane] : ssuf[t - 1][0][lane];
                unsigned ft = sflag[0] >> t;
                int64_t at = ((int64_t)t * gridDim.x + blockIdx.x) * C + c;
                if (ch) stf2(a.tile_val + at, ft ? q : s + q);
                if (lane == 0 && blockIdx.y == 0)
                    a.tile_flag[t * gridDim.x + blockIdx.x] = (f | ft) != 0;
            }
        }
    } else {
        if (wp == 0)
            enter_runs<true>(sval, sflag,
                             ch ? ldf2(a.tile_carry + (int64_t)blockIdx.x * C + c) : z);
        __syncthreads();
        float2 after[3]; // S at tokens n0 + RUN + t
        after[0] = sval[wp][lane];
        after[1] = after[2] = z;
        if (wp + 1 < WARPS) {
            for (int t = 1; t < 3; t++) {
                float2 q = ssuf[t - 1][wp + 1][lane];
                after[t] = (sflag[wp + 1] >> t) ? q : sval[wp + 1][lane] + q;
            }
        } else if (blockIdx.x + 1 < gridDim.x && ch) {
            int b = blockIdx.x + 1;
            float2 carry = ldf2(a.tile_carry + (int64_t)b * C + c);
            for (int t = 1; t < 3; t++) {
                float2 q = ldf2(a.tile_val + ((int64_t)t * gridDim.x + b) * C + c);
                after[t] = a.tile_flag[t * gridDim.x + b] ? q : carry + q;
            }
        }
        Taps tap = {};
        float2 eb = z;
        if (ch) {
            tap = load_taps(a.conv_w, c);
            eb = exp_bias(a.bias, c);
        }
        // token n = n0 + i from the last token after the run down to the run's first:
        // phi_raw at n, n-1, n-2, n-3; dpre and positions at n+1, n+2, n+3 (0 past the end)
        int nl = n0 + RUN + 2;
        float2 w0 = z, w1 = z, w2 = z, w3 = z;
        if (ch) {
            w0 = ld_tok(a.phi_raw, nl, N, C, c);
            w1 = ld_tok(a.phi_raw, nl - 1, N, C, c);
            w2 = ld_tok(a.phi_raw, nl - 2, N, C, c);
            w3 = ld_tok(a.phi_raw, nl - 3, N, C, c);
        }
        float2 d1 = z, d2 = z, d3 = z, db = z;
        float2 gw[KW] = {z, z, z, z};
        int p1 = 0, p2 = 0, p3 = 0;
        acc = after[0];
#pragma unroll
        for (int i = RUN + 2; i >= 0; i--) {
            const int n = n0 + i;
            const bool in = n < N;
            const int p = in ? a.pos[n] : 0;
            float2 dp = z;
            float g = 1.f, sj = 0.f; // sj: this lane's part of sum_j S (act(pre) + exp(bias))
            if (in) {
                float2 S;
                if (i >= RUN) {
                    S = after[i - RUN];
                } else {
                    if (ends >> i & 1) acc = z;
                    acc = acc + x[i];
                    S = acc;
                }
                if (ch) {
                    g = gate_at(a.gl, n, H, h);
                    float2 pre = conv_pre(tap, p, w0, w1, w2, w3), phi = pre;
                    float2 dphi = g * S;
                    dp = dphi;
                    if (SILU) {
                        phi = f2(silu1(pre.x), silu1(pre.y));
                        dp = dphi * f2(dsilu1(pre.x), dsilu1(pre.y));
                    }
                    if (i < RUN) {
                        db = db + dphi * eb;
                        sj = S.x * (phi.x + eb.x) + S.y * (phi.y + eb.y);
                        gw[3] = gw[3] + dp * w0;
                        if (p >= 1) gw[2] = gw[2] + dp * w1;
                        if (p >= 2) gw[1] = gw[1] + dp * w2;
                        if (p >= 3) gw[0] = gw[0] + dp * w3;
                    }
                }
            }
            if (i < RUN && in) { // uniform over the warp: the lanes share the token
                if (a.dgl) {     // the P/2 lanes of a head are aligned: 64 % P == 0
                    for (int o = P / 4; o > 0; o >>= 1) sj += __shfl_xor_sync(FULL_MASK, sj, o);
                    if (ch && j == 0) a.dgl[(int64_t)n * H + h] = f2bf(sj * g * (1.f - g));
                }
                if (ch) {
                    float2 dx = tap.t[3] * dp;
                    if (p1 >= 1) dx = dx + tap.t[2] * d1;
                    if (p2 >= 2) dx = dx + tap.t[1] * d2;
                    if (p3 >= 3) dx = dx + tap.t[0] * d3;
                    st2(a.dphi_raw + (int64_t)n * C + c, dx);
                }
            }
            d3 = d2;
            d2 = d1;
            d1 = dp;
            p3 = p2;
            p2 = p1;
            p1 = p;
            w0 = w1;
            w1 = w2;
            w2 = w3;
            w3 = ch ? ld_tok(a.phi_raw, n - 4, N, C, c) : z;
        }
        if (a.part_w) store_taps_partial(a.part_w, gw, C);
        if (a.part_b || a.part_t) { // sums over the tile's runs
            __shared__ float2 sred[2][WARPS][32];
            sred[0][wp][lane] = db;
            sred[1][wp][lane] = dt;
            __syncthreads();
            if (wp == 0 && ch) {
                float2 sb = z, st = z;
                for (int r = 0; r < WARPS; r++) {
                    sb = sb + sred[0][r][lane];
                    st = st + sred[1][r][lane];
                }
                if (a.part_b) stf2(a.part_b + (int64_t)blockIdx.x * C + c, sb);
                if (a.part_t) stf2(a.part_t + (int64_t)blockIdx.x * C + c, st);
            }
        }
    }
}

void selrope_check(const char *op, const SelRopeArgs *a) {
    char why[160];
    if (!cuda_selrope_supports(a->H, a->P, why, sizeof why)) rt_die("%s: %s", op, why);
    if (a->conv_act != ACT_NONE && a->conv_act != ACT_SILU)
        rt_die("%s: conv activation %d unsupported (NONE or SILU)", op, (int)a->conv_act);
    cuda_check_aligned(a->temp, 8, op);
    cuda_check_aligned(a->Phi, 8, op);
    cuda_check_aligned(a->q, 4, op);
    cuda_check_aligned(a->k, 4, op);
    cuda_check_aligned(a->phi_raw, 4, op);
}

// The fields FwdArgs and BwdArgs share: the op's inputs and shape.
template <class A> void set_inputs(A &a, const SelRopeArgs *args) {
    a.q = (const bf16 *)args->q;
    a.k = (const bf16 *)args->k;
    a.phi_raw = (const bf16 *)args->phi_raw;
    a.conv_w = (const bf16 *)args->conv_w;
    a.bias = (const bf16 *)args->bias;
    a.gl = (const bf16 *)args->gate_logit;
    a.temp = (const float *)args->temp;
    a.pos = args->s->dev_pos;
    a.N = (int)args->s->ntok;
    a.H = args->H;
    a.P = args->P;
}

// The three passes of the scan (top of the file): tile states, their carries into `carry`, and
// the final pass from them.
template <bool REV, class A>
void launch_passes(void (*tiles)(A), void (*final_pass)(A), A a, float *carry, dim3 grid) {
    dim3 block(32, WARPS);
    tiles<<<grid, block, 0, cuda_stream()>>>(a);
    CUDA_LAUNCHED();
    launch_scan_carry<REV>(carry, a.tile_val, a.tile_flag, (int)grid.x, a.H * a.P);
    a.tile_carry = carry;
    final_pass<<<grid, block, 0, cuda_stream()>>>(a);
    CUDA_LAUNCHED();
}

// Tokens a warp scans: 32, or 16 or 8 in the selrope variants r16, r8.
int run_tokens() {
    static const int runs[] = {32, 16, 8};
    return runs[kernel_variant(KV_SELROPE)];
}

template <int RUN> void fwd_passes(const FwdArgs &a, bool silu, float *carry, dim3 grid) {
    if (silu)
        launch_passes<false>(selrope_fwd_kernel<RUN, true, false>,
                             selrope_fwd_kernel<RUN, true, true>, a, carry, grid);
    else
        launch_passes<false>(selrope_fwd_kernel<RUN, false, false>,
                             selrope_fwd_kernel<RUN, false, true>, a, carry, grid);
}

// the first pass (the tile states of dPhi) needs no activation
template <int RUN> void bwd_passes(const BwdArgs &a, bool silu, float *carry, dim3 grid) {
    if (silu)
        launch_passes<true>(selrope_bwd_kernel<RUN, false, false>,
                            selrope_bwd_kernel<RUN, true, true>, a, carry, grid);
    else
        launch_passes<true>(selrope_bwd_kernel<RUN, false, false>,
                            selrope_bwd_kernel<RUN, false, true>, a, carry, grid);
}

} // namespace

int cuda_selrope_supports(int H, int P, char *why, size_t why_size) {
    if (H < 1)
        return cuda_unsupported(why, why_size,
                                "the Selective RoPE kernels take H >= 1 heads, got H=%d", H);
    if (P < 2 || P % 2 || 64 % P)
        return cuda_unsupported(why, why_size,
                                "the Selective RoPE kernels take P (angle channels per head) an "
                                "even divisor of 64, got P=%d",
                                P);
    return 1;
}

void cuda_selrope_fwd(const SelRopeArgs *args) {
    selrope_check("selrope_fwd", args);
    cuda_check_aligned(args->qo, 4, "selrope_fwd");
    cuda_check_aligned(args->ko, 4, "selrope_fwd");
    FwdArgs a = {};
    set_inputs(a, args);
    const int C = a.H * a.P;
    if (a.N == 0 || C == 0) return;
    const int run = run_tokens();
    int ntile = (int)cdiv(a.N, run * WARPS);
    size_t nval = (size_t)ntile * C; // even: every array below stays 8-byte aligned
    float *scratch =
        (float *)cuda_scratch(SCRATCH_A, sizeof(float) * 2 * nval + sizeof(int) * ntile);
    a.qo = (bf16 *)args->qo;
    a.ko = (bf16 *)args->ko;
    a.Phi = (float *)args->Phi;
    a.tile_val = scratch;
    a.tile_flag = (int *)(scratch + 2 * nval);
    dim3 grid((unsigned)ntile, (unsigned)cdiv(C, 64));
    const bool silu = args->conv_act == ACT_SILU;
    switch (run) {
    case 16: fwd_passes<16>(a, silu, scratch + nval, grid); break;
    case 8: fwd_passes<8>(a, silu, scratch + nval, grid); break;
    default: fwd_passes<32>(a, silu, scratch + nval, grid); break;
    }
}

void cuda_selrope_bwd(const SelRopeGrads *g) {
    const SelRopeArgs *args = &g->a;
    const char *op = "selrope_bwd";
    selrope_check(op, args);
    cuda_check_aligned(g->dq, 4, op);
    cuda_check_aligned(g->dk, 4, op);
    cuda_check_aligned(g->dqo, 4, op);
    cuda_check_aligned(g->dko, 4, op);
    cuda_check_aligned(g->dphi_raw, 4, op);
    BwdArgs a = {};
    set_inputs(a, args);
    const int C = a.H * a.P;
    if (a.N == 0 || C == 0) return;
    const int run = run_tokens();
    int ntile = (int)cdiv(a.N, run * WARPS);
    size_t nval = (size_t)ntile * C; // even: every array below stays 8-byte aligned
    // tile states [3][tile][C], carries, dbias and dtemp partials [tile][C], dconv_w partials
    // [tile][C][KW], then the flags [3][tile]
    size_t nfloat = nval * (3 + 1 + 2 + KW);
    float *scratch =
        (float *)cuda_scratch(SCRATCH_A, sizeof(float) * nfloat + sizeof(int) * 3 * ntile);
    a.dq = (bf16 *)g->dq;
    a.dk = (bf16 *)g->dk;
    a.dphi_raw = (bf16 *)g->dphi_raw;
    a.dgl = args->gate_logit ? (bf16 *)g->dgate_logit : nullptr;
    a.tile_val = scratch;
    a.part_b = args->bias && g->dbias ? scratch + 4 * nval : nullptr;
    a.part_t = g->dtemp ? scratch + 5 * nval : nullptr;
    a.part_w = args->conv_w && g->dconv_w ? scratch + 6 * nval : nullptr;
    a.tile_flag = (int *)(scratch + nfloat);
    a.dqo = (const bf16 *)g->dqo;
    a.dko = (const bf16 *)g->dko;
    a.Phi = (const float *)args->Phi;
    dim3 grid((unsigned)ntile, (unsigned)cdiv(C, 64));
    const bool silu = args->conv_act == ACT_SILU;
    switch (run) {
    case 16: bwd_passes<16>(a, silu, scratch + 3 * nval, grid); break;
    case 8: bwd_passes<8>(a, silu, scratch + 3 * nval, grid); break;
    default: bwd_passes<32>(a, silu, scratch + 3 * nval, grid); break;
    }
    if (a.part_w) cuda_colsum_add((float *)g->dconv_w, a.part_w, ntile, C * KW);
    if (a.part_b) cuda_colsum_add((float *)g->dbias, a.part_b, ntile, C);
    if (a.part_t) // rows tile * H + h
        cuda_colsum_add((float *)g->dtemp, a.part_t, ntile * a.H, a.P);
}
