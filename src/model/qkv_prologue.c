/* The q/k/v prologue shared by the linear-attention mixers (model_internal.h QKVPrologue):
 * projections, then a short conv with its activation, the activation alone, or nothing. */
#include <stdio.h>

#include "model/model_internal.h"
#include "util/error.h"

enum { P_TRANSFORM = 1 }; /* feature: a conv or an activation follows */
enum { W_K, W_V };        /* widths */

static const BufDecl qkv_bufs[] = {
    BUF(QKVPrologue, q0, BUF_SAVED, BUF_ACT, W_K),
    BUF(QKVPrologue, k0, BUF_SAVED, BUF_ACT, W_K),
    BUF(QKVPrologue, v0, BUF_SAVED, BUF_ACT, W_V),
    BUF_IF(QKVPrologue, q1, BUF_SAVED, BUF_ACT, W_K, P_TRANSFORM, q0),
    BUF_IF(QKVPrologue, k1, BUF_SAVED, BUF_ACT, W_K, P_TRANSFORM, k0),
    BUF_IF(QKVPrologue, v1, BUF_SAVED, BUF_ACT, W_V, P_TRANSFORM, v0),
    BUF_OPT(QKVPrologue, dq0, BUF_SCRATCH, BUF_ACT, W_K, P_TRANSFORM),
    BUF_OPT(QKVPrologue, dk0, BUF_SCRATCH, BUF_ACT, W_K, P_TRANSFORM),
    BUF_OPT(QKVPrologue, dv0, BUF_SCRATCH, BUF_ACT, W_V, P_TRANSFORM),
};

void qkv_declare_proj(QKVPrologue *p, ParamTable *t, const char *prefix, int d, int64_t Kd,
                      int64_t Vd, double std) {
    p->widths[W_K] = Kd;
    p->widths[W_V] = Vd;
    p->q = declare_linear(t, pname(prefix, "q_proj.weight").s, Kd, d, std);
    p->k = declare_linear(t, pname(prefix, "k_proj.weight").s, Kd, d, std);
    p->v = declare_linear(t, pname(prefix, "v_proj.weight").s, Vd, d, std);
}

void qkv_declare_conv(QKVPrologue *p, ParamTable *t, const char *prefix, int conv,
                      Activation conv_act, Activation plain_act, double std) {
    RT_ASSERT(plain_act == ACT_NONE || plain_act == ACT_SILU);
    p->conv = conv;
    p->conv_act = conv_act;
    p->plain_act = plain_act;
    p->qconv = p->kconv = p->vconv = -1;
    if (!conv) return;
    p->qconv = declare_conv(t, pname(prefix, "q_conv1d.weight").s, p->widths[W_K], std);
    p->kconv = declare_conv(t, pname(prefix, "k_conv1d.weight").s, p->widths[W_K], std);
    p->vconv = declare_conv(t, pname(prefix, "v_conv1d.weight").s, p->widths[W_V], std);
}

static unsigned features(const QKVPrologue *p) {
    return p->conv || p->plain_act != ACT_NONE ? P_TRANSFORM : 0;
}

void qkv_bind(QKVPrologue *p, const Backend *be, Carve *saved, Carve *scratch, int64_t N) {
    acts_bind(p, qkv_bufs, BUF_COUNT(qkv_bufs), p->widths, features(p), be, saved, scratch, N);
}

enum { W_TK, W_TV }; /* state widths: three rows of q/k, of v */

static const BufDecl qkv_state[] = {
    BUF(QKVPrologue, qt, BUF_SAVED, BUF_ACT, W_TK),
    BUF(QKVPrologue, kt, BUF_SAVED, BUF_ACT, W_TK),
    BUF(QKVPrologue, vt, BUF_SAVED, BUF_ACT, W_TV),
};

void qkv_bind_state(QKVPrologue *p, const Backend *be, Carve *state, int64_t rows) {
    if (!p->conv) {
        p->qt = p->kt = p->vt = NULL;
        return;
    }
    int64_t widths[] = {[W_TK] = 3 * p->widths[W_K], [W_TV] = 3 * p->widths[W_V]};
    acts_bind(p, qkv_state, BUF_COUNT(qkv_state), widths, 0, be, state, state, rows);
}

/* One of q, k, v: y = conv_act(conv(x)), or silu(x); a decoding pass keeps the conv's tail
 * (the last three inputs of each row). */
static void transform_fwd(const QKVPrologue *p, const Ctx *c, void *y, const void *x, int conv_w,
                          int64_t C, void *tail) {
    if (!p->conv) {
        c->be->silu_fwd(y, x, c->N * C);
    } else if (c->mode == PASS_STEP) {
        c->be->conv_step(y, x, W(c, conv_w), NULL, tail, c->seqs, (int)C, SHORT_CONV_TAPS,
                         p->conv_act);
    } else {
        c->be->conv_fwd(y, x, W(c, conv_w), NULL, c->seqs, (int)C, SHORT_CONV_TAPS, p->conv_act);
        if (c->mode == PASS_PREFILL) c->be->segment_tail(tail, x, c->seqs, (int)C, 3, 0);
    }
}

static void transform_bwd(const QKVPrologue *p, const Ctx *c, void *dx, const void *dy,
                          const void *x, int conv_w, int64_t C) {
    if (p->conv)
        c->be->conv_bwd(dx, G(c, conv_w), NULL, dy, x, W(c, conv_w), NULL, c->seqs, (int)C,
                        SHORT_CONV_TAPS, p->conv_act);
    else
        c->be->silu_bwd(dx, dy, x, c->N * C);
}

void qkv_inproj(QKVPrologue *p, void **dq1, void **dk1, void **dv1) {
    int transform = features(p) & P_TRANSFORM;
    inproj_add(&p->proj, p->q, -1, p->widths[W_K], &p->q0, transform ? &p->dq0 : dq1);
    inproj_add(&p->proj, p->k, -1, p->widths[W_K], &p->k0, transform ? &p->dk0 : dk1);
    inproj_add(&p->proj, p->v, -1, p->widths[W_V], &p->v0, transform ? &p->dv0 : dv1);
}

void qkv_forward(QKVPrologue *p, const Ctx *c, const void *x) {
    int Kd = (int)p->widths[W_K], Vd = (int)p->widths[W_V];
    inproj_forward(&p->proj, c, x);
    if (!(features(p) & P_TRANSFORM)) return;
    transform_fwd(p, c, p->q1, p->q0, p->qconv, Kd, p->qt);
    transform_fwd(p, c, p->k1, p->k0, p->kconv, Kd, p->kt);
    transform_fwd(p, c, p->v1, p->v0, p->vconv, Vd, p->vt);
}

void qkv_backward(QKVPrologue *p, const Ctx *c, const void *x, void *dq1, void *dk1, void *dv1,
                  void *dx, int accumulate) {
    int Kd = (int)p->widths[W_K], Vd = (int)p->widths[W_V];
    if (features(p) & P_TRANSFORM) {
        transform_bwd(p, c, p->dq0, dq1, p->q0, p->qconv, Kd);
        transform_bwd(p, c, p->dk0, dk1, p->k0, p->kconv, Kd);
        transform_bwd(p, c, p->dv0, dv1, p->v0, p->vconv, Vd);
    }
    inproj_backward(&p->proj, c, x, dx, accumulate);
}
