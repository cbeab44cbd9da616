/* The core the LRU and RotRNN share (model_internal.h DiagRnn, docs/models.md §lru, §rotrnn): the
 * input matmul into interleaved complex pairs, the complex scan, the output matmul, and the
 * per-channel skip D x (head_skip with d heads of one channel); bidirectional, the reverse scan
 * and its readout (docs/models.md §block-dropout-bidirectional). */
#include <math.h>
#include <stdio.h>

#include "device/host_copy.h"
#include "model/model_internal.h"
#include "util/error.h"

enum { W_STATE, W_WEIGHT, W_CHANNEL, W_MODEL }; /* widths: 2C per token; 2C d; C; d per token */
enum { F_BIDIR = 1 };

static const BufDecl drnn_bufs[] = {
    BUF_FIXED(DiagRnn, Bw, BUF_SAVED, BUF_ACT, W_WEIGHT, 0),
    BUF_FIXED(DiagRnn, Cw, BUF_SAVED, BUF_ACT, W_WEIGHT, 0),
    BUF_FIXED(DiagRnn, loga, BUF_SAVED, BUF_F32, W_CHANNEL, 0),
    BUF_FIXED(DiagRnn, angle, BUF_SAVED, BUF_F32, W_CHANNEL, 0),
    BUF(DiagRnn, h, BUF_SAVED, BUF_ACT, W_STATE),
    BUF(DiagRnn, bx, BUF_SCRATCH, BUF_ACT, W_STATE),
    BUF(DiagRnn, dh, BUF_SCRATCH, BUF_ACT, W_STATE),
    BUF(DiagRnn, dbx, BUF_SCRATCH, BUF_ACT, W_STATE),
    BUF_FIXED(DiagRnn, dBw, BUF_SCRATCH, BUF_F32, W_WEIGHT, 0),
    BUF_FIXED(DiagRnn, dCw, BUF_SCRATCH, BUF_F32, W_WEIGHT, 0),
    BUF_FIXED(DiagRnn, dloga, BUF_SCRATCH, BUF_F32, W_CHANNEL, 0),
    BUF_FIXED(DiagRnn, dangle, BUF_SCRATCH, BUF_F32, W_CHANNEL, 0),
    BUF_FIXED(DiagRnn, Cw2, BUF_SAVED, BUF_ACT, W_WEIGHT, F_BIDIR),
    BUF_OPT(DiagRnn, hr, BUF_SAVED, BUF_ACT, W_STATE, F_BIDIR),
    BUF_OPT(DiagRnn, yr, BUF_SCRATCH, BUF_ACT, W_MODEL, F_BIDIR),
    BUF_FIXED(DiagRnn, dCw2, BUF_SCRATCH, BUF_F32, W_WEIGHT, F_BIDIR),
};

void drnn_declare(DiagRnn *r, ParamTable *t, const char *prefix, int C, int d, int bidir) {
    int64_t sh[1] = {d};
    r->C = C;
    r->d = d;
    r->bidir = bidir;
    r->D = params_add(t, pname(prefix, "D").s, 1, sh, init_normal, 1.0, 0, 1);
}

void drnn_bind(DiagRnn *r, const Backend *be, Carve *saved, Carve *scratch, int64_t N) {
    int64_t widths[] = {[W_STATE] = 2 * (int64_t)r->C,
                        [W_WEIGHT] = 2 * (int64_t)r->C * r->d,
                        [W_CHANNEL] = r->C,
                        [W_MODEL] = r->d};
    acts_bind(r, drnn_bufs, BUF_COUNT(drnn_bufs), widths, r->bidir ? F_BIDIR : 0, be, saved,
              scratch, N);
}

void drnn_destroy(void *layer, const Backend *be) {
    DiagRnn *r = layer;
    growbuf_free(&r->states, be);
    rt_free(r);
}

void drnn_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                     int64_t rows, int max_len) {
    DiagRnn *r = layer;
    (void)dm, (void)max_len;
    r->S = carve(state, F32S(be, rows * 2 * r->C));
}

void drnn_forward(DiagRnn *r, const Ctx *c, const void *x, void *y) {
    const Backend *be = c->be;
    int N = (int)c->N, C2 = 2 * r->C, d = r->d;
    be->matmul_fwd(r->bx, x, r->Bw, NULL, N, C2, d);
    r->scan = (CScanArgs){.s = c->seqs,
                          .C = r->C,
                          .loga = r->loga,
                          .angle = r->angle,
                          .x = r->bx,
                          .h = r->h,
                          .state = c->mode == PASS_TRAIN ? NULL : r->S};
    if (c->mode == PASS_STEP) {
        be->cscan_step(&r->scan);
    } else {
        r->scan.states =
            growbuf_get(&r->states, be, F32(c, chunk_states_size(c->seqs, 1, r->C, 2)));
        be->cscan_fwd(&r->scan);
    }
    be->matmul_fwd(y, r->h, r->Cw, NULL, N, d, C2);
    be->head_skip_fwd(y, x, WM(c, r->D), N, d, 1);
    if (!r->bidir) return;
    /* docs/models.md §block-dropout-bidirectional: the same recurrence on the reversed segments
     * (dbx: scratch), read out in reverse time, then turned around into y */
    RT_ASSERT(c->mode == PASS_TRAIN);
    be->segment_reverse(r->dbx, r->bx, c->seqs, C2, 0);
    r->rscan = r->scan;
    r->rscan.x = r->dbx;
    r->rscan.h = r->hr;
    be->cscan_fwd(&r->rscan);
    be->matmul_fwd(r->yr, r->hr, r->Cw2, NULL, N, d, C2);
    be->segment_reverse(y, r->yr, c->seqs, d, 1);
}

void drnn_backward(DiagRnn *r, const Ctx *c, const void *x, const void *dy, void *dx) {
    const Backend *be = c->be;
    int N = (int)c->N, C2 = 2 * r->C, d = r->d;
    be->zero(r->dCw, F32(c, (int64_t)d * C2));
    be->matmul_bwd(r->dh, r->dCw, NULL, dy, r->h, r->Cw, N, d, C2, 0);
    be->cscan_bwd(&(CScanGrads){
        .a = r->scan, .dh = r->dh, .dx = r->dbx, .dloga = r->dloga, .dangle = r->dangle});
    if (r->bidir) { /* the reverse scan's share of dbx, dloga, dangle; dCw2 */
        be->segment_reverse(r->yr, dy, c->seqs, d, 0);
        be->zero(r->dCw2, F32(c, (int64_t)d * C2));
        be->matmul_bwd(r->dh, r->dCw2, NULL, r->yr, r->hr, r->Cw2, N, d, C2, 0);
        be->cscan_bwd(&(CScanGrads){.a = r->rscan,
                                    .dh = r->dh,
                                    .dx = r->bx,
                                    .dloga = r->dloga,
                                    .dangle = r->dangle,
                                    .accumulate = 1});
        be->segment_reverse(r->dbx, r->bx, c->seqs, C2, 1);
    }
    be->zero(r->dBw, F32(c, (int64_t)C2 * d));
    be->matmul_bwd(dx, r->dBw, NULL, r->dbx, x, r->Bw, N, C2, d, 0);
    be->head_skip_bwd(dx, G(c, r->D), dy, x, WM(c, r->D), N, d, 1);
}

/* The init ranges of the scan's eigenvalues, for the families' dims: moduli in [min, max] below
 * 1 (RotRNN's gamma: above 0), angles in [0, max_phase]. */
const char *drnn_check_init(const ModelConfig *c, const DrnnInitKeys *k, char *msg, size_t n) {
    if (!((k->positive ? c->r_min > 0 : c->r_min >= 0) && c->r_min <= c->r_max && c->r_max < 1)) {
        snprintf(msg, n, "model.%s = %g, model.%s = %g: model.type = %s needs %s %s <= %s < 1",
                 k->min, c->r_min, k->max, c->r_max, k->family,
                 k->positive ? "0 <" : "0 <=", k->min, k->max);
        return msg;
    }
    if (!(c->max_phase > 0)) {
        snprintf(msg, n, "model.max_phase = %g must be positive", c->max_phase);
        return msg;
    }
    return NULL;
}

/* a complex multiply-add per pair of state reals, per scan */
double drnn_flops(const ModelConfig *c, const ModelDims *dm, int T) {
    return 4.0 * dm->key_dim * (1 + c->bidirectional);
}

void drnn_stats(const DiagRnn *r, const Ctx *c, json_t *o, int heads) {
    double *loga = rt_malloc((size_t)r->C * sizeof(double)),
           *angle = rt_malloc((size_t)r->C * sizeof(double));
    backend_download_f64(c->be, loga, r->loga, r->C);
    backend_download_f64(c->be, angle, r->angle, r->C);
    for (int i = 0; i < r->C; i++) loga[i] = exp(loga[i]);
    stats_summary(o, "modulus", loga, r->C);
    stats_summary(o, "theta", angle, r->C);
    stats_angle_hist(o, angle, r->C);
    stats_state_norm(o, c, r->h, 2 * (int64_t)r->C, heads);
    rt_free(loga);
    rt_free(angle);
}
