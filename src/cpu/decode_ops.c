/* The decoding ops (docs/models.md §decoding): the state a prefill leaves (segment tails, the
 * forget gate's cumulative sum, KV-cache writes) and one token per row from that state
 * (short conv, shift, Selective RoPE, GLA, Gated DeltaNet, causal attention). The plain
 * references of kernels/ops/decode.cu; the step of each is the recurrence its chunked or
 * blockwise op computes for a whole segment. */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "util/error.h"

#define KW SHORT_CONV_TAPS /* the widest short conv */

void cpu_segment_tail(void *tail_, const void *x_, const Seqs *s, int C, int W, int f32) {
    (void)f32; /* both element types are `real` here */
    real *tail = tail_;
    const real *x = x_;
    for (int seg = 0; seg < s->nseg; seg++)
        for (int j = 0; j < W; j++) {
            int64_t n = s->cu[seg + 1] - W + j;
            real *dst = tail + ((int64_t)seg * W + j) * C;
            if (n >= s->cu[seg])
                memcpy(dst, x + n * C, sizeof(real) * (size_t)C);
            else
                memset(dst, 0, sizeof(real) * (size_t)C);
        }
}

void cpu_segment_cumsum(void *y_, const void *x_, const Seqs *s, int C) {
    real *y = y_;
    const real *x = x_;
#pragma omp parallel for schedule(static)
    for (int seg = 0; seg < s->nseg; seg++)
        for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++)
            for (int c = 0; c < C; c++)
                y[n * C + c] = x[n * C + c] + (n > s->cu[seg] ? y[(n - 1) * C + c] : 0);
}

void cpu_cache_write(void *cache_, const void *x_, const Seqs *s, int cap, int C, int f32) {
    (void)f32;
    real *cache = cache_;
    const real *x = x_;
    for (int seg = 0; seg < s->nseg; seg++)
        for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++) {
            RT_ASSERT(s->pos[n] < cap);
            memcpy(cache + ((int64_t)seg * cap + s->pos[n]) * C, x + n * C,
                   sizeof(real) * (size_t)C);
        }
}

void cpu_conv_step(void *y_, const void *x_, const void *w_, const void *b_, void *tail_,
                   const Seqs *s, int C, int K, Activation act) {
    real *y = y_, *tail = tail_;
    const real *x = x_, *w = w_, *b = b_;
    RT_ASSERT(act == ACT_NONE || act == ACT_SILU);
    RT_ASSERT(K >= 1 && K <= KW);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < s->ntok; r++) {
        real *t = tail + r * (KW - 1) * C;
        if (s->pos[r] == 0) memset(t, 0, sizeof(real) * (KW - 1) * (size_t)C);
        for (int c = 0; c < C; c++) {
            real xc = x[r * C + c], pre;
            if (w) {
                /* tail entry j is KW - 1 - j tokens back: tap j - (KW - K) of w [C, K] */
                pre = w[c * K + K - 1] * xc;
                for (int j = KW - K; j < KW - 1; j++) pre += w[c * K + j - (KW - K)] * t[j * C + c];
            } else { /* the first difference */
                pre = xc - t[(KW - 2) * C + c];
            }
            if (b) pre += b[c];
            y[r * C + c] = act == ACT_SILU ? pre * sigmoidr(pre) : pre;
            for (int j = 0; j < KW - 2; j++) t[j * C + c] = t[(j + 1) * C + c];
            t[(KW - 2) * C + c] = xc;
        }
    }
}

void cpu_shift_step(void *y_, const void *x_, const void *a_logit_, void *prev_, const Seqs *s,
                    int H, int D) {
    real *y = y_, *prev = prev_;
    const real *x = x_, *al = a_logit_;
    for (int64_t r = 0; r < s->ntok; r++)
        for (int h = 0; h < H; h++) {
            real a = sigmoidr(al[r * H + h]);
            int64_t o = (r * H + h) * D;
            for (int d = 0; d < D; d++) {
                real xp = s->pos[r] ? prev[o + d] : 0;
                y[o + d] = a * xp + ((real)1 - a) * x[o + d];
                prev[o + d] = x[o + d];
            }
        }
}

void cpu_selrope_step(const SelRopeArgs *a) {
    int64_t B = a->s->ntok;
    int H = a->H, P = a->P, C = H * P;
    real *phi = rt_alloc_aligned(sizeof(real) * (size_t)(B * C));
    real *angle = rt_alloc_aligned(sizeof(real) * (size_t)(B * C));
    real *Phi = a->Phi;
    const real *bias = a->bias, *gl = a->gate_logit, *temp = a->temp;
    cpu_conv_step(phi, a->phi_raw, a->conv_w, NULL, a->tail, a->s, C, SHORT_CONV_TAPS, a->conv_act);
    for (int64_t r = 0; r < B; r++)
        for (int h = 0; h < H; h++) {
            if (a->s->pos[r] == 0) memset(Phi + r * C + h * P, 0, sizeof(real) * (size_t)P);
            real gate = gl ? sigmoidr(gl[r * H + h]) : 1;
            for (int j = 0; j < P; j++) {
                int64_t i = r * C + h * P + j;
                Phi[i] += (phi[i] + (bias ? exp(bias[h * P + j]) : 0)) * gate;
                angle[i] = temp[j] * Phi[i];
            }
        }
    cpu_rotate_fwd(a->qo, a->q, angle, B, H, 2 * P, 1);
    cpu_rotate_fwd(a->ko, a->k, angle, B, H, 2 * P, 1);
    rt_free(phi);
    rt_free(angle);
}

/* o = scale q S for one row and head, S [K, V]. */
static void read_state(real *o, const real *q, const real *S, int K, int V, real scale) {
    for (int j = 0; j < V; j++) {
        real acc = 0;
        for (int i = 0; i < K; i++) acc += q[i] * S[i * V + j];
        o[j] = acc * scale;
    }
}

/* The K x V decoding state of row r, head h (rh = r H + h), zeroed where the row starts a
 * segment. */
static real *row_state(const LinAttnArgs *a, int64_t rh) {
    size_t kv = (size_t)a->K * a->V;
    real *S = (real *)a->state + rh * kv;
    if (a->s->pos[rh / a->H] == 0) memset(S, 0, sizeof(real) * kv);
    return S;
}

/* S = diag(e^g) S + k^T v (docs/models.md §gla), row r head h (rh = r H + h). */
static void gla_update(const LinAttnArgs *a, int64_t rh, real *S) {
    int K = a->K, V = a->V;
    const real *g = a->g, *kr = (const real *)a->k + rh * K, *vr = (const real *)a->v + rh * V;
    for (int i = 0; i < K; i++) {
        real e = exp(a->g_per_head ? g[rh] : g[rh * K + i]);
        for (int j = 0; j < V; j++) S[i * V + j] = e * S[i * V + j] + kr[i] * vr[j];
    }
}

/* S = e^g (I - b k k^T) S + b k v^T (docs/models.md §gated-deltanet) */
static void gdn_update(const LinAttnArgs *a, int64_t rh, real *S) {
    int K = a->K, V = a->V;
    const real *g = a->g, *kr = (const real *)a->k + rh * K, *vr = (const real *)a->v + rh * V;
    real eg = g ? exp(g[rh]) : 1, b = ((const real *)a->beta)[rh];
    for (int j = 0; j < V; j++) {
        real kS = 0;
        for (int i = 0; i < K; i++) kS += kr[i] * S[i * V + j];
        for (int i = 0; i < K; i++)
            S[i * V + j] = eg * (S[i * V + j] - b * kr[i] * kS) + b * kr[i] * vr[j];
    }
}

/* One token per row of GLA (or, with the delta rule, Gated DeltaNet): each head's state
 * updated, then read by q. */
static void lin_step(const LinAttnArgs *a, int delta) {
    int64_t B = a->s->ntok;
    int H = a->H, K = a->K, V = a->V;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t r = 0; r < B; r++)
        for (int h = 0; h < H; h++) {
            int64_t rh = r * H + h;
            real *S = row_state(a, rh);
            if (delta)
                gdn_update(a, rh, S);
            else
                gla_update(a, rh, S);
            read_state((real *)a->o + rh * V, (const real *)a->q + rh * K, S, K, V, (real)a->scale);
        }
}

void cpu_gla_step(const LinAttnArgs *a) { lin_step(a, 0); }

void cpu_gdn_step(const LinAttnArgs *a) { lin_step(a, 1); }

void cpu_attn_step(const AttnStepArgs *a) {
    int64_t B = a->s->ntok;
    int H = a->H, D = a->D, cap = a->cap;
    const real *q = a->q, *k = a->k, *v = a->v, *lf = a->logf;
    real *kc = a->kc, *vc = a->vc, *fc = a->fc, *o = a->o;
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int64_t r = 0; r < B; r++)
        for (int h = 0; h < H; h++) {
            int pos = a->s->pos[r];
            RT_ASSERT(pos < cap);
            int64_t rh = r * H + h, slot = (r * cap + pos) * H + h;
            memcpy(kc + slot * D, k + rh * D, sizeof(real) * (size_t)D);
            memcpy(vc + slot * D, v + rh * D, sizeof(real) * (size_t)D);
            real F = 0;
            if (lf) fc[slot] = F = (pos ? fc[slot - H] : 0) + lf[rh];
            /* softmax over slots u <= pos of scale q.k_u + F_pos - F_u (docs/models.md §fox) */
            real *sc = rt_malloc(sizeof(real) * (size_t)(pos + 1)), mx = -INFINITY, sum = 0;
            for (int u = 0; u <= pos; u++) {
                int64_t su = (r * cap + u) * H + h;
                real acc = 0;
                for (int d = 0; d < D; d++) acc += q[rh * D + d] * kc[su * D + d];
                sc[u] = acc * (real)a->scale + (lf ? F - fc[su] : 0);
                mx = maxr(mx, sc[u]);
            }
            for (int u = 0; u <= pos; u++) sum += sc[u] = exp(sc[u] - mx);
            real *out = o + rh * D;
            memset(out, 0, sizeof(real) * (size_t)D);
            for (int u = 0; u <= pos; u++) {
                const real *vu = vc + ((r * cap + u) * H + h) * D;
                for (int d = 0; d < D; d++) out[d] += sc[u] / sum * vu[d];
            }
            rt_free(sc);
        }
}
