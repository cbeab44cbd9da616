/* Writes one comparison case per mixer x option x position embedding for the independent
 * PyTorch reference (tests/reference/rotor_ref.py check): config.json, model.safetensors,
 * batch.safetensors and this implementation's logits, loss and every parameter gradient
 * in expected.safetensors.
 *   reference_cases OUTDIR   -> OUTDIR/<case>/... and the case names on stdout */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/safetensors.h"
#include "model/hf_config.h"
#include "model/model.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/rng.h"

static void die_if(int rc, const char *err) {
    if (rc) rt_die("%s", err);
}

static void write_case(const char *dir, const ModelConfig *cfg, uint64_t seed) {
    fs_mkdirs(dir);
    char path[1200], err[1024];
    json_t *cj = hf_config_to_json(cfg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (json_dump_file(cj, path, HF_CONFIG_JSON_FLAGS)) rt_die("cannot write %s", path);
    json_decref(cj);

    Model *m = model_create(cfg, backend_cpu());
    model_init_weights(m, seed);
    const ParamTable *t = model_params(m);
    const float *w = model_weights(m);

    int B = 2, T = 70, V = cfg->vocab_size;
    Rng r;
    rng_init(&r, seed, 1000);
    int32_t tok[2 * 70], lab[2 * 70];
    int64_t ids64[2 * 70], lab64[2 * 70];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)rng_below(&r, (uint64_t)V);
        if (tok[i] == cfg->bos_id) tok[i] = (tok[i] + 1) % V;
        lab[i] = rng_uniform(&r) < 0.1 ? -100 : (int32_t)rng_below(&r, (uint64_t)V);
    }
    tok[0] = tok[9] = tok[47] = tok[T] = tok[T + 66] = cfg->bos_id; /* documents inside rows */
    for (int i = 0; i < B * T; i++) ids64[i] = tok[i], lab64[i] = lab[i];
    Batch b = {B, T, tok, lab};

    float *logits = rt_malloc(sizeof(float) * (size_t)(B * T * V));
    int64_t valid;
    double loss_sum = model_forward(m, &b, 0.0f, &valid);
    model_get_logits(m, logits);
    model_zero_grads(m);
    model_forward(m, &b, (float)(1.0 / (double)valid), NULL);
    model_backward(m);
    const float *g = model_grads(m);
    float loss = (float)(loss_sum / (double)valid);

    StTensor *wt = rt_calloc((size_t)t->n, sizeof(StTensor));
    StTensor *ex = rt_calloc((size_t)t->n + 2, sizeof(StTensor));
    int ne = 0;
    ex[ne++] = (StTensor){"logits", "F32", 3, {B, T, V}, logits, sizeof(float) * (size_t)(B * T * V)};
    ex[ne++] = (StTensor){"loss", "F32", 1, {1}, &loss, sizeof(float)};
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        StTensor x = {{0}, "F32", p->ndim, {0}, w + p->offset, sizeof(float) * (size_t)p->numel};
        snprintf(x.name, sizeof x.name, "%s", p->name);
        for (int d = 0; d < p->ndim; d++) x.shape[d] = p->shape[d];
        wt[i] = x;
        if (!p->trainable) continue;
        snprintf(x.name, sizeof x.name, "grad.%s", p->name);
        x.data = g + p->offset;
        ex[ne++] = x;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    die_if(st_write(path, wt, t->n, NULL, err, sizeof err), err);
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    die_if(st_write(path, ex, ne, NULL, err, sizeof err), err);
    StTensor bt[2] = {{"input_ids", "I64", 2, {B, T}, ids64, sizeof ids64},
                      {"labels", "I64", 2, {B, T}, lab64, sizeof lab64}};
    snprintf(path, sizeof path, "%s/batch.safetensors", dir);
    die_if(st_write(path, bt, 2, NULL, err, sizeof err), err);
    rt_free(wt);
    rt_free(ex);
    rt_free(logits);
    model_free(m);
}

int main(int argc, char **argv) {
    if (argc != 2) rt_die("usage: reference_cases OUTDIR");
    static const char *pe_names[] = {"nope", "rope", "sel-wn-silu", "sel-lowrank-none-bias-gate",
                                     "sel-skip-tan-tempgrad", "sel-bias-gate-docmask"};
    int n = 0;
    for (int mixer = 0; mixer < 3; mixer++)
        for (int variant = 0; variant < 2; variant++)
            for (int k = 0; k < 6; k++) {
                ModelConfig c;
                model_config_defaults(&c);
                c.mixer = (MixerKind)mixer;
                c.vocab_size = 37;
                c.hidden_size = 32;
                c.num_layers = 2;
                c.num_heads = 2;
                c.hidden_ratio = 4;
                c.expand_k = 0.5;
                c.head_dim = 16;
                c.gate_low_rank_dim = 8;
                c.init_std = 0.2; /* larger than 0.02 so that every path carries signal */
                c.max_seq_len = 70;
                c.pe.phi_rank = 5;
                if (mixer == MIXER_FOX)
                    c.output_gate = c.output_norm = c.qk_norm = c.k_shift = c.v_shift = variant;
                else
                    c.short_conv = variant;
                switch (k) {
                case 0: break;
                case 1: c.pe.kind = PE_ROPE; c.pe.rope_theta = 1000; break;
                case 2: c.pe.kind = PE_SELECTIVE; break;
                case 3:
                    c.pe.kind = PE_SELECTIVE;
                    c.pe.phi_proj = PHI_LOW_RANK;
                    c.pe.conv_act = ACT_NONE;
                    c.pe.bias = c.pe.phase_gate = 1;
                    break;
                case 4:
                    c.pe.kind = PE_SELECTIVE;
                    c.pe.skip_conv = 1;
                    c.pe.temp_type = TEMP_TAN;
                    c.pe.temp_theta = 0.995;
                    c.pe.temp_max = 2;
                    c.pe.temp_grad = 1;
                    break;
                case 5:
                    c.pe.kind = PE_SELECTIVE;
                    c.pe.bias = c.pe.phase_gate = 1;
                    c.doc_mask = 1;
                    break;
                }
                char dir[1024];
                snprintf(dir, sizeof dir, "%s/%s-%s-%s", argv[1], mixer_name(c.mixer),
                         mixer == MIXER_FOX ? (variant ? "pro" : "plain") : (variant ? "conv" : "noconv"),
                         pe_names[k]);
                write_case(dir, &c, 100 + (uint64_t)n++);
                printf("%s\n", dir);
            }
    return 0;
}
