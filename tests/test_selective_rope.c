/* Properties of Selective RoPE (docs/models.md §position-embeddings; paper eq. 11-13):
 *  - the rotation preserves the norm of every head of q and k;
 *  - with a zero phi projection, bias on and 'rope' temperatures it gives exactly the
 *    attention scores q_t.k_s of RoPE;
 *  - GLA with Selective RoPE whose rotation pairs share one decay equals the complex
 *    diagonal recurrence S_t = Diag(a_t e^{i tau phi_t}) S_{t-1} + conj(k~_t)^T v_t,
 *    o_t = Re(q~_t S_t), computed directly in complex arithmetic; with per-channel
 *    (untied) decays the two differ. */
#include <complex.h>
#include <string.h>

#include "config/run_config.h"
#include "cpu/cpu_ops.h"
#include "harness.h"
#include "model/model_internal.h"
#include "testutil.h"
#include "util/error.h"

#ifdef ROTOR_REAL_DOUBLE
#define TOL 1e-10
#else
#define TOL 1e-4
#endif

/* A position-embedding module with its own weights and activation buffers. */
typedef struct {
    ModelConfig cfg;
    ModelDims dims;
    ParamTable t;
    PosEmb pe;
    real *w, *g;
    void *saved, *scratch;
    TestSeqs ts;
    real *angle; /* RoPE table */
    Ctx c;
} PE;

static void pe_setup(PE *p, const ModelConfig *cfg, const int *lens, int nseg, uint64_t seed) {
    memset(p, 0, sizeof(*p));
    p->cfg = *cfg;
    RT_ASSERT(!model_dims(cfg, &p->dims));
    pe_declare(&p->pe, &p->t, "pe.", cfg, p->dims.H, p->dims.dk);
    p->w = tu_zeros(p->t.total ? p->t.total : 1);
    p->g = tu_zeros(p->t.total ? p->t.total : 1);
    Rng r;
    rng_init(&r, seed, 1);
    for (int i = 0; i < p->t.n; i++)
        for (int64_t j = 0; j < p->t.p[i].numel; j++)
            p->w[p->t.p[i].offset + j] = (real)(0.5 * rng_normal(&r));
    p->ts = tu_seqs(lens, nseg);
    int64_t N = p->ts.s.ntok;
    const Backend *be = backend_cpu();
    Carve sv = {NULL, 0}, sc = {NULL, 0};
    pe_bind(&p->pe, be, &sv, &sc, N);
    p->saved = rt_alloc_aligned(sv.used + 64);
    p->scratch = rt_alloc_aligned(sc.used + 64);
    Carve sv2 = {p->saved, 0}, sc2 = {p->scratch, 0};
    pe_bind(&p->pe, be, &sv2, &sc2, N);
    p->angle = tu_zeros(N * p->dims.dk / 2);
    cpu_rope_angles(p->angle, &p->ts.s, p->dims.dk, cfg->pe.rope_theta);
    p->c = (Ctx){.mode = PASS_TRAIN,
                 .be = be,
                 .cfg = &p->cfg,
                 .dims = &p->dims,
                 .seqs = &p->ts.s,
                 .N = N,
                 .weights = (char *)p->w,
                 .master = (char *)p->w,
                 .grads = (char *)p->g,
                 .params = &p->t,
                 .rope_angle = p->angle};
}

static void pe_set(PE *p, const char *name, double value) {
    char full[PARAM_NAME_MAX];
    snprintf(full, sizeof full, "pe.rotary.%s", name);
    int i = params_find(&p->t, full);
    RT_ASSERT(i >= 0);
    for (int64_t j = 0; j < p->t.p[i].numel; j++) p->w[p->t.p[i].offset + j] = (real)value;
}

/* Temperatures per docs/models.md §position-embeddings step 7 ('rope': temp_max theta^(-2j/dk)). */
static void pe_rope_temperatures(PE *p) {
    int i = params_find(&p->t, "pe.rotary.temperature");
    RT_ASSERT(i >= 0);
    for (int j = 0; j < p->dims.dk / 2; j++)
        p->w[p->t.p[i].offset + j] =
            (real)(p->cfg.pe.temp_max * pow(p->cfg.pe.temp_theta, -2.0 * j / p->dims.dk));
}

static void pe_teardown(PE *p) {
    rt_free(p->w);
    rt_free(p->g);
    rt_free(p->saved);
    rt_free(p->scratch);
    rt_free(p->angle);
    tu_seqs_free(&p->ts);
    params_free(&p->t);
}

static ModelConfig small_cfg(PEKind kind) {
    ModelConfig c;
    model_config_defaults(&c);
    c.mixer = MIXER_GLA;
    c.hidden_size = 24;
    c.num_heads = 3;
    c.expand_k = 1.0; /* dk = 8 */
    c.pe.kind = kind;
    c.pe.rope_theta = 500000;
    c.pe.temp_theta = 500000;
    c.pe.temp_max = 1.0;
    return c;
}

static void test_rotation_preserves_norms(void) {
    static const int lens[] = {50, 23};
    ModelConfig c = small_cfg(PE_SELECTIVE);
    c.pe.bias = c.pe.phase_gate = 1;
    PE p;
    pe_setup(&p, &c, lens, 2, 3);
    pe_rope_temperatures(&p);
    int64_t N = p.ts.s.ntok, n = N * p.dims.key_dim;
    Rng r;
    rng_init(&r, 5, 0);
    real *x = tu_randn(&r, N * c.hidden_size, 1), *q = tu_randn(&r, n, 1), *k = tu_randn(&r, n, 1);
    real *qo = tu_zeros(n), *ko = tu_zeros(n);
    pe_forward(&p.pe, &p.c, x, q, k, qo, ko);
    double worst = 0, max_angle = 0;
    for (int64_t row = 0; row < N * p.dims.H; row++) {
        double a = 0, b = 0, a2 = 0, b2 = 0;
        for (int d = 0; d < p.dims.dk; d++) {
            int64_t i = row * p.dims.dk + d;
            a += (double)q[i] * q[i], b += (double)qo[i] * qo[i];
            a2 += (double)k[i] * k[i], b2 += (double)ko[i] * ko[i];
        }
        worst = fmax(worst,
                     fmax(fabs(sqrt(a) - sqrt(b)) / sqrt(a), fabs(sqrt(a2) - sqrt(b2)) / sqrt(a2)));
    }
    /* the angles temp_j * Phi (the saved Phi; the angles themselves are not kept) */
    const real *temp = p.w + p.t.p[params_find(&p.t, "pe.rotary.temperature")].offset;
    int P = p.dims.dk / 2;
    for (int64_t i = 0; i < N * p.dims.H * P; i++)
        max_angle = fmax(max_angle, fabs((double)temp[i % P] * ((real *)p.pe.Phi)[i]));
    CHECK_MSG(worst < TOL, "norm changed by %.3g (relative)", worst);
    CHECK_MSG(max_angle > 1.0, "angles too small (%.3g) for the test to mean anything", max_angle);
    CHECK(tu_rel_err(qo, q, n, 1e-3) > 1e-2); /* it did rotate */
    real *bufs[] = {x, q, k, qo, ko};
    for (int i = 0; i < 5; i++) rt_free(bufs[i]);
    pe_teardown(&p);
}

/* S[t][s] = qo_t . ko_s per head, for every pair inside each segment. */
static void scores(const real *qo, const real *ko, const Seqs *s, int H, int D, double *S,
                   int64_t N) {
    for (int64_t t = 0; t < N; t++)
        for (int64_t u = 0; u < N; u++)
            for (int h = 0; h < H; h++) {
                double acc = 0;
                for (int d = 0; d < D; d++)
                    acc += (double)qo[(t * H + h) * D + d] * ko[(u * H + h) * D + d];
                S[(t * N + u) * H + h] = (s->pos[t] - t == s->pos[u] - u) ? acc : 0;
            }
}

static void zero_phi_case(PhiProj proj) {
    static const int lens[] = {40, 17};
    ModelConfig cs = small_cfg(PE_SELECTIVE), cr = small_cfg(PE_ROPE);
    cs.pe.bias = 1;
    cs.pe.phi_proj = proj;
    cs.pe.phi_rank = 4;
    PE ps, pr;
    pe_setup(&ps, &cs, lens, 2, 11);
    pe_setup(&pr, &cr, lens, 2, 11);
    pe_rope_temperatures(&ps);
    pe_set(&ps, "phi_bias", 0.0); /* exp(0) = 1 per token */
    if (proj == PHI_WEIGHT_NORM)
        pe_set(&ps, "phi_proj.scalar", 0.0); /* zero projection */
    else
        pe_set(&ps, "phi_proj.1.weight", 0.0);
    int64_t N = ps.ts.s.ntok, n = N * ps.dims.key_dim;
    Rng r;
    rng_init(&r, 13, 0);
    real *x = tu_randn(&r, N * cs.hidden_size, 1), *q = tu_randn(&r, n, 1), *k = tu_randn(&r, n, 1);
    real *qs = tu_zeros(n), *ks = tu_zeros(n), *qr = tu_zeros(n), *kr = tu_zeros(n);
    pe_forward(&ps.pe, &ps.c, x, q, k, qs, ks);
    pe_forward(&pr.pe, &pr.c, x, q, k, qr, kr);
    double *S1 = rt_calloc((size_t)(N * N * ps.dims.H), sizeof(double));
    double *S2 = rt_calloc((size_t)(N * N * ps.dims.H), sizeof(double));
    scores(qs, ks, &ps.ts.s, ps.dims.H, ps.dims.dk, S1, N);
    scores(qr, kr, &pr.ts.s, pr.dims.H, pr.dims.dk, S2, N);
    double worst = 0, mx = 0;
    for (int64_t i = 0; i < N * N * ps.dims.H; i++)
        worst = fmax(worst, fabs(S1[i] - S2[i])), mx = fmax(mx, fabs(S2[i]));
    CHECK_MSG(worst <= TOL * mx, "scores differ by %.3g (max |score| %.3g)", worst, mx);
    /* the rotated vectors themselves differ: Selective RoPE starts at angle tau (Phi_0 = 1) */
    CHECK(tu_rel_err(qs, qr, n, 1e-3) > 1e-3);
    real *bufs[] = {x, q, k, qs, ks, qr, kr};
    for (int i = 0; i < 7; i++) rt_free(bufs[i]);
    rt_free(S1);
    rt_free(S2);
    pe_teardown(&ps);
    pe_teardown(&pr);
}

static void test_zero_phi_equals_rope_weight_norm(void) { zero_phi_case(PHI_WEIGHT_NORM); }
static void test_zero_phi_equals_rope_low_rank(void) { zero_phi_case(PHI_LOW_RANK); }

/* Complex recurrence of paper eq. 11-13 for one segment and head, in double complex:
 * channel j <-> real pair (j, j+P), key conjugated. */
static void complex_gla(double *o, const real *q, const real *k, const real *v, const real *logd,
                        const real *angle_inc, const Seqs *s, int H, int K, int V, double scale) {
    int P = K / 2;
    double complex *S = rt_malloc(sizeof(double complex) * (size_t)(P * V));
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < P * V; i++) S[i] = 0;
            for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++) {
                const real *qn = q + (n * H + h) * K, *kn = k + (n * H + h) * K,
                           *vn = v + (n * H + h) * V;
                for (int j = 0; j < P; j++) {
                    double a = exp((double)logd[(n * H + h) * K + j]);
                    double complex tr = a * cexp(I * (double)angle_inc[(n * H + h) * P + j]);
                    double complex kc = conj((double)kn[j] + I * (double)kn[j + P]);
                    for (int c = 0; c < V; c++)
                        S[j * V + c] = tr * S[j * V + c] + kc * (double)vn[c];
                }
                for (int c = 0; c < V; c++) {
                    double complex acc = 0;
                    for (int j = 0; j < P; j++)
                        acc += ((double)qn[j] + I * (double)qn[j + P]) * S[j * V + c];
                    o[(n * H + h) * V + c] = creal(acc) * scale;
                }
            }
        }
    rt_free(S);
}

static double complex_case(int tied) {
    static const int lens[] = {100, 37};
    TestSeqs ts = tu_seqs(lens, 2);
    const Seqs *s = &ts.s;
    int H = 2, K = 8, V = 6, P = K / 2;
    int64_t N = s->ntok, nk = N * H * K, nv = N * H * V, np = N * H * P;
    Rng r;
    rng_init(&r, 21, 0);
    real *q = tu_randn(&r, nk, 1), *k = tu_randn(&r, nk, 1), *v = tu_randn(&r, nv, 1);
    real *g = tu_rand(&r, nk, -0.3, -0.01);
    if (tied)
        for (int64_t row = 0; row < N * H; row++)
            for (int j = 0; j < P; j++) g[row * K + j + P] = g[row * K + j];
    /* angle increments phi (any real values) and temperatures, through the model's scan */
    real *phi = tu_randn(&r, np, 0.7), *temp = tu_rand(&r, P, 0.1, 1.5);
    real *angle = tu_zeros(np), *Phi = tu_zeros(np), *inc = tu_zeros(np);
    cpu_selrope_angles_fwd(angle, Phi, phi, NULL, NULL, temp, s, H, P);
    for (int64_t i = 0; i < np; i++) inc[i] = temp[i % P] * phi[i];
    real *qr = tu_zeros(nk), *kr = tu_zeros(nk), *o = tu_zeros(nv);
    cpu_rotate_fwd(qr, q, angle, N, H, K, 1);
    cpu_rotate_fwd(kr, k, angle, N, H, K, 1);
    real *states = tu_zeros(chunk_states_size(s, H, K, V));
    double scale = 1 / sqrt((double)K);
    cpu_gla_fwd(&(LinAttnArgs){.s = s,
                               .H = H,
                               .K = K,
                               .V = V,
                               .scale = scale,
                               .q = qr,
                               .k = kr,
                               .v = v,
                               .g = g,
                               .o = o,
                               .states = states});
    double *oc = rt_malloc(sizeof(double) * (size_t)nv);
    complex_gla(oc, q, k, v, g, inc, s, H, K, V, scale);
    double err = 0, mx = 0;
    for (int64_t i = 0; i < nv; i++)
        err = fmax(err, fabs((double)o[i] - oc[i])), mx = fmax(mx, fabs(oc[i]));
    real *bufs[] = {q, k, v, g, phi, temp, angle, Phi, inc, qr, kr, o, states};
    for (int i = 0; i < 13; i++) rt_free(bufs[i]);
    rt_free(oc);
    tu_seqs_free(&ts);
    return err / mx;
}

static void test_tied_decay_gla_equals_complex_recurrence(void) {
    double e = complex_case(1);
    CHECK_MSG(e < TOL, "real form vs complex recurrence: relative error %.3g", e);
}

static void test_untied_decay_gla_differs_from_complex_recurrence(void) {
    double e = complex_case(0);
    CHECK_MSG(e > 1e-2,
              "per-channel decays should not match the complex-diagonal form (error %.3g)", e);
}

static const TestCase tests[] = {
    {"rotation_preserves_norms", test_rotation_preserves_norms},
    {"zero_phi_equals_rope_weight_norm", test_zero_phi_equals_rope_weight_norm},
    {"zero_phi_equals_rope_low_rank", test_zero_phi_equals_rope_low_rank},
    {"tied_decay_gla_equals_complex_recurrence", test_tied_decay_gla_equals_complex_recurrence},
    {"untied_decay_gla_differs_from_complex_recurrence",
     test_untied_decay_gla_differs_from_complex_recurrence},
};

TH_MAIN(tests)
