/* The readout shared by the mixers (model_internal.h Readout): norm per head, output gate,
 * o_proj, forward and backward. */
#include <stdio.h>

#include "model/model_internal.h"

enum { R_NORM = 1, R_GATE = 2 }; /* features */
enum { W_HV, W_H };              /* widths */

static const BufDecl readout_bufs[] = {
    BUF(Readout, o_, BUF_SAVED, BUF_ACT, W_HV),
    BUF_OPT(Readout, rstd, BUF_SAVED, BUF_F32, W_H, R_NORM),
    BUF_IF(Readout, on, BUF_SAVED, BUF_ACT, W_HV, R_NORM, o_),
    BUF_OPT(Readout, gp, BUF_SAVED, BUF_ACT, W_HV, R_GATE),
    BUF_IF(Readout, r, BUF_SAVED, BUF_ACT, W_HV, R_GATE, on),
    BUF(Readout, dr, BUF_SCRATCH, BUF_ACT, W_HV),
    BUF_IF(Readout, don, BUF_SCRATCH, BUF_ACT, W_HV, R_GATE, dr),
    BUF_OPT(Readout, dgp, BUF_SCRATCH, BUF_ACT, W_HV, R_GATE),
    BUF_IF(Readout, do_, BUF_SCRATCH, BUF_ACT, W_HV, R_NORM, don),
};

void readout_declare_gate(Readout *r, ParamTable *t, const char *prefix, Activation gate, int d,
                          int H, int dv, double std) {
    r->g = r->norm = r->o = -1;
    r->norm_kind = READOUT_NO_NORM;
    r->gate = gate;
    r->H = H, r->dv = dv, r->d = d;
    r->widths[W_HV] = (int64_t)H * dv;
    r->widths[W_H] = H;
    if (gate != ACT_NONE)
        r->g = declare_linear(t, pname(prefix, "g_proj.weight").s, (int64_t)H * dv, d, std);
}

void readout_declare_norm(Readout *r, ParamTable *t, const char *name, ReadoutNorm kind) {
    r->norm_kind = kind;
    if (kind != READOUT_NO_NORM)
        r->norm = declare_vector(t, name,
                                 kind == READOUT_NORM_PER_HEAD ? (int64_t)r->H * r->dv : r->dv, 1);
}

void readout_declare_out(Readout *r, ParamTable *t, const char *prefix, double std) {
    r->o = declare_linear(t, pname(prefix, "o_proj.weight").s, r->d, (int64_t)r->H * r->dv, std);
}

void readout_bind(Readout *r, const Backend *be, Carve *saved, Carve *scratch, int64_t N) {
    unsigned f = (r->norm >= 0 ? R_NORM : 0) | (r->g >= 0 ? R_GATE : 0);
    acts_bind(r, readout_bufs, BUF_COUNT(readout_bufs), r->widths, f, be, saved, scratch, N);
}

void readout_inproj(Readout *r, InProj *ip) {
    if (r->g >= 0) inproj_add(ip, r->g, -1, r->widths[W_HV], &r->gp, &r->dgp);
}

/* The norm and the gate as one op (docs/models.md §gla step 6): the normed values in on (the
 * CPU writes them there), its gradient's scratch in don. */
static RmsnormGateArgs norm_gate_args(const Readout *r, const Ctx *c) {
    return (RmsnormGateArgs){.x = r->o_,
                             .w = W(c, r->norm),
                             .gp = r->gp,
                             .N = c->N,
                             .G = r->H,
                             .C = r->dv,
                             .w_per_group = r->norm_kind == READOUT_NORM_PER_HEAD,
                             .act = r->gate,
                             .eps = c->cfg->norm_eps,
                             .r = r->r,
                             .rstd = r->rstd,
                             .on = r->on};
}

void readout_forward(Readout *r, const Ctx *c, void *y) {
    const Backend *be = c->be;
    int N = (int)c->N, HV = r->H * r->dv;
    if (r->norm >= 0 && r->g >= 0) {
        RmsnormGateArgs a = norm_gate_args(r, c);
        be->rmsnorm_gate_fwd(&a);
    } else if (r->norm >= 0) {
        be->rmsnorm_fwd(r->on, r->rstd, r->o_, W(c, r->norm), N, r->H, r->dv,
                        r->norm_kind == READOUT_NORM_PER_HEAD, c->cfg->norm_eps);
    } else if (r->g >= 0) {
        be->gate_mul_fwd(r->r, r->on, r->gp, (int64_t)N * HV, r->gate);
    }
    be->matmul_fwd(y, r->r, W(c, r->o), NULL, N, r->d, HV);
}

void readout_backward(Readout *r, const Ctx *c, const void *dy) {
    const Backend *be = c->be;
    int N = (int)c->N, HV = r->H * r->dv;
    be->matmul_bwd(r->dr, G(c, r->o), NULL, dy, r->r, W(c, r->o), N, r->d, HV, 0);
    if (r->norm >= 0 && r->g >= 0) {
        RmsnormGateGrads g = {.a = norm_gate_args(r, c),
                              .dr = r->dr,
                              .dx = r->do_,
                              .dgp = r->dgp,
                              .dw = G(c, r->norm),
                              .don = r->don};
        be->rmsnorm_gate_bwd(&g);
    } else if (r->norm >= 0) {
        be->rmsnorm_bwd(r->do_, G(c, r->norm), r->don, r->o_, W(c, r->norm), r->rstd, N, r->H,
                        r->dv, r->norm_kind == READOUT_NORM_PER_HEAD, 0);
    } else if (r->g >= 0) {
        be->gate_mul_bwd(r->don, r->dgp, r->dr, r->on, r->gp, (int64_t)N * HV, r->gate);
    }
}
