#include "testutil.h"
#include "config/run_config.h"
#include "data/shard.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "util/error.h"
#include "util/fsutil.h"

real *tu_rand(Rng *r, int64_t n, double lo, double hi) {
    real *x = rt_alloc_aligned(sizeof(real) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) x[i] = (real)(lo + (hi - lo) * rng_uniform(r));
    return x;
}

real *tu_randn(Rng *r, int64_t n, double std) {
    real *x = rt_alloc_aligned(sizeof(real) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) x[i] = (real)(std * rng_normal(r));
    return x;
}

real *tu_zeros(int64_t n) {
    real *x = rt_alloc_aligned(sizeof(real) * (size_t)(n ? n : 1));
    memset(x, 0, sizeof(real) * (size_t)n);
    return x;
}

real *tu_copy(const real *x, int64_t n) {
    real *y = rt_alloc_aligned(sizeof(real) * (size_t)(n ? n : 1));
    memcpy(y, x, sizeof(real) * (size_t)n);
    return y;
}

double tu_rel_err(const real *a, const real *b, int64_t n, double floor) {
    double mx = floor, err = 0;
    for (int64_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)b[i]));
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= err)) err = d; /* propagates NaN */
    }
    return err / mx;
}

char *tu_temp_dir(void) {
    char *d = rt_sprintf("%s/XXXXXX", th_tmp_dir());
    RT_ASSERT(mkdtemp(d));
    return d;
}

void tu_write_shards(const char *dir, const char *tokenizer_sha, int64_t vocab,
                     const int64_t *sizes, int n, int64_t first_token) {
    fs_mkdirs(dir);
    int64_t p = 0;
    for (int i = 0; i < n; i++) {
        char path[1024], err[512];
        snprintf(path, sizeof path, "%s/shard_%05d.h5", dir, i);
        ShardInfo in = {0};
        in.vocab_size = vocab;
        in.bos_id = 1;
        in.eos_id = 2;
        snprintf(in.tokenizer_sha256, sizeof in.tokenizer_sha256, "%s", tokenizer_sha);
        snprintf(in.source, sizeof in.source, "tu_write_shards");
        ShardWriter *w = shard_writer_open(path, &in, err, sizeof err);
        RT_ASSERT(w);
        int64_t left = sizes[i];
        while (left > 0) {
            int len = (int)(left < 40 ? left : 1 + (p * 7) % 40);
            int32_t doc[40];
            for (int k = 0; k < len; k++) doc[k] = (int32_t)((first_token + p + k) % 65000);
            RT_ASSERT(!shard_writer_add(w, doc, (size_t)len, err, sizeof err));
            p += len;
            left -= len;
        }
        RT_ASSERT(!shard_writer_close(w, err, sizeof err));
    }
}

TestSeqs tu_seqs(const int *lens, int nseg) {
    TestSeqs t;
    t.cu = rt_malloc(sizeof(int64_t) * (size_t)(nseg + 1));
    t.cu[0] = 0;
    for (int i = 0; i < nseg; i++) t.cu[i + 1] = t.cu[i] + lens[i];
    t.pos = rt_malloc(sizeof(int32_t) * (size_t)t.cu[nseg]);
    for (int i = 0; i < nseg; i++)
        for (int64_t n = t.cu[i]; n < t.cu[i + 1]; n++) t.pos[n] = (int32_t)(n - t.cu[i]);
    t.s.ntok = t.cu[nseg];
    t.s.nseg = nseg;
    t.s.cu = t.cu;
    t.s.pos = t.pos;
    return t;
}

void tu_seqs_free(TestSeqs *t) {
    rt_free(t->cu);
    rt_free(t->pos);
}

double tu_gradcheck(tu_loss_fn f, void *ctx, real *x, const real *grad, int64_t n, int samples,
                    double h, Rng *r) {
    double gscale = 0;
    for (int64_t i = 0; i < n; i++) gscale = fmax(gscale, fabs((double)grad[i]));
    double worst = 0;
    int m = n < samples ? (int)n : samples;
    for (int s = 0; s < m; s++) {
        int64_t i = n <= samples ? s
                                 : (s == 0   ? 0
                                    : s == 1 ? n - 1
                                             : (int64_t)rng_below(r, (uint64_t)n));
        /* fourth-order central difference: truncation error O(h^4) */
        real keep = x[i];
        double fv[4], offs[4] = {2 * h, h, -h, -2 * h};
        for (int k = 0; k < 4; k++) {
            x[i] = (real)((double)keep + offs[k]);
            fv[k] = f(ctx);
        }
        x[i] = keep;
        double fd = (-fv[0] + 8 * fv[1] - 8 * fv[2] + fv[3]) / (12 * h);
        double e = fabs(fd - (double)grad[i]) / fmax(gscale, 1e-6);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

double tu_dot(const real *w, const real *y, int64_t n) {
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += (double)w[i] * (double)y[i];
    return acc;
}

ModelConfig tu_model(MixerKind mixer, TuModelSize z) {
    ModelConfig c;
    model_config_defaults(&c);
    c.mixer = mixer;
    c.vocab_size = z.vocab;
    c.hidden_size = z.hidden;
    c.num_layers = z.layers;
    c.num_heads = z.heads;
    return c;
}

ModelConfig tu_tiny_model(MixerKind mixer, int num_layers) {
    ModelConfig c =
        tu_model(mixer, (TuModelSize){.vocab = 13, .hidden = 16, .layers = num_layers, .heads = 2});
    c.intermediate_size = 24;
    c.expand_k = 0.5;
    c.expand_v = 1.0;
    c.head_dim = 8;
    c.state_size =
        mixer == MIXER_ROTRNN ? 8 : 6; /* Mamba2: d 16 x expand 2 / head_dim 8 = 4 heads;
                                        * LRU: 6 complex channels; RotRNN: 2 heads of 4 */
    c.gate_low_rank_dim = 4;
    c.init_std = 0.3;
    c.pe.phi_rank = 3;
    c.bos_id = 1;
    return c;
}

char *tu_ini_text(const RunConfig *c) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    run_config_write_ini(c, f);
    fclose(f);
    return text;
}
