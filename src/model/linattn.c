/* What GLA and (Gated) DeltaNet build around their chunked core op (model_internal.h
 * LinAttnLayer), and the core op's run that Mamba2 shares. */
#include "model/model_internal.h"
#include "util/error.h"

enum { F_PE = 1 };       /* feature: a position embedding rotates q, k */
enum { W_KEY, W_VALUE }; /* widths */

static const BufDecl linattn_bufs[] = {
    BUF_IF(LinAttnLayer, qr, BUF_SAVED, BUF_ACT, W_KEY, F_PE, in.q1),
    BUF_IF(LinAttnLayer, kr, BUF_SAVED, BUF_ACT, W_KEY, F_PE, in.k1),
    BUF(LinAttnLayer, dqr, BUF_SCRATCH, BUF_ACT, W_KEY),
    BUF(LinAttnLayer, dkr, BUF_SCRATCH, BUF_ACT, W_KEY),
    BUF(LinAttnLayer, dv1, BUF_SCRATCH, BUF_ACT, W_VALUE),
    BUF_IF(LinAttnLayer, dq1, BUF_SCRATCH, BUF_ACT, W_KEY, F_PE, dqr),
    BUF_IF(LinAttnLayer, dk1, BUF_SCRATCH, BUF_ACT, W_KEY, F_PE, dkr),
};

static int has_pe(const LinAttnLayer *la) { return la->pe.cfg.kind != PE_NOPE; }

void linattn_bind(void *layer, const BufDecl *own, int n, const int64_t *widths, unsigned features,
                  const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc, int64_t N) {
    LinAttnLayer *la = layer;
    int64_t shared[] = {[W_KEY] = dm->key_dim, [W_VALUE] = dm->value_dim};
    qkv_bind(&la->in, be, sv, sc, N);
    acts_bind(la, linattn_bufs, BUF_COUNT(linattn_bufs), shared, has_pe(la) ? F_PE : 0, be, sv, sc,
              N);
    acts_bind(layer, own, n, widths, features, be, sv, sc, N);
    readout_bind(&la->out, be, sv, sc, N);
    pe_bind(&la->pe, be, sv, sc, N);
}

void linattn_qk_forward(LinAttnLayer *la, const Ctx *c, const void *x) {
    qkv_forward(&la->in, c, x);
    if (has_pe(la)) pe_forward(&la->pe, c, x, la->in.q1, la->in.k1, la->qr, la->kr);
}

void linattn_inproj(LinAttnLayer *la) { qkv_inproj(&la->in, &la->dq1, &la->dk1, &la->dv1); }

void linattn_qk_backward(LinAttnLayer *la, const Ctx *c, const void *x, void *dx) {
    int have_dx = 0;
    if (has_pe(la))
        have_dx = pe_backward(&la->pe, c, x, la->in.q1, la->in.k1, la->dqr, la->dkr, la->dq1,
                              la->dk1, dx, 0);
    qkv_backward(&la->in, c, x, la->dq1, la->dk1, la->dv1, dx, have_dx);
}

void linattn_run(const Ctx *c, LinAttnArgs *a, GrowBuf *states, int delta) {
    const Backend *be = c->be;
    if (c->mode == PASS_STEP) {
        (delta ? be->gdn_step : be->gla_step)(a);
        return;
    }
    a->states = growbuf_get(states, be, F32(c, chunk_states_size(c->seqs, a->H, a->K, a->V)));
    (delta ? be->gdn_fwd : be->gla_fwd)(a);
}

void linattn_destroy(void *layer, const Backend *be) {
    LinAttnLayer *la = layer;
    growbuf_free(&la->states, be);
    rt_free(la);
}

void linattn_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                        int64_t rows, int max_len) {
    LinAttnLayer *la = layer;
    (void)max_len;
    qkv_bind_state(&la->in, be, state, rows);
    pe_bind_state(&la->pe, be, state, rows);
    la->S = carve(state, F32S(be, rows * dm->H * dm->dk * dm->dv));
}
