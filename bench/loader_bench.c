/* Loader throughput: windows of 4097 tokens per second served by the shard loader (one
 * rank, read-ahead thread on) from a freshly written shard set, against what the
 * 370M-class configs consume on 8 GPUs.
 *   loader_bench [DIR] [MILLION_TOKENS]   (default: a temporary directory, 64M tokens) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/run_config.h"
#include "data/datasource.h"
#include "data/shard.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/rng.h"
#include "util/timer.h"

int main(int argc, char **argv) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : "/tmp/rotor_loader_bench_XXXXXX");
    if (argc <= 1 && !mkdtemp(dir)) rt_die("cannot create a temporary directory");
    int64_t total = (argc > 2 ? atoll(argv[2]) : 64) * 1000000;
    fs_mkdirs(dir);
    char err[1024];
    Rng r;
    rng_init(&r, 1, 0);
    int32_t *doc = rt_malloc(sizeof(int32_t) * 4096);
    double t0 = rt_now();
    int64_t written = 0;
    for (int s = 0; written < total; s++) {
        char path[600];
        snprintf(path, sizeof path, "%s/shard_%05d.h5", dir, s);
        ShardInfo in = {.vocab_size = 32000, .bos_id = 1, .eos_id = 2};
        snprintf(in.tokenizer_sha256, sizeof in.tokenizer_sha256, "bench");
        ShardWriter *w = shard_writer_open(path, &in, err, sizeof err);
        if (!w) rt_die("%s", err);
        while (shard_writer_tokens(w) < 16000000 && written < total) {
            int len = 200 + (int)rng_below(&r, 3000);
            doc[0] = 1;
            for (int i = 1; i < len; i++) doc[i] = 3 + (int32_t)rng_below(&r, 31997);
            if (shard_writer_add(w, doc, (size_t)len, err, sizeof err)) rt_die("%s", err);
            written += len;
        }
        if (shard_writer_close(w, err, sizeof err)) rt_die("%s", err);
    }
    printf("wrote %lld tokens in %.1fs\n", (long long)written, rt_now() - t0);

    RunConfig rc;
    memset(&rc, 0, sizeof rc);
    model_config_defaults(&rc.model);
    int T = 4096, B = 4;
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)B * (T + 1));
    uint8_t *ds_doc = rt_malloc((size_t)B * (T + 1));
    for (int prefetch = 0; prefetch <= 4; prefetch += 4) {
        DataOptions opt = {.seq_len = T, .seed = 7, .split = SPLIT_TRAIN, .world = 1, .prefetch = prefetch};
        DataSource *src = datasource_open(dir, &rc, &opt, err, sizeof err);
        if (!src) rt_die("%s", err);
        int64_t windows = 0;
        double start = rt_now();
        while (rt_now() - start < 3.0) {
            if (src->next(src, tok, ds_doc, B, err, sizeof err)) rt_die("%s", err);
            windows += B;
        }
        double secs = rt_now() - start, wps = (double)windows / secs;
        /* 8 GPUs at 150k tokens/s each would be a generous 370M-class training rate */
        double need = 8 * 150000.0 / (T + 1);
        printf("prefetch %d: %.0f windows/s (%.1f M tokens/s), %.0fx the %.0f windows/s of 8 GPUs at 150k tok/s\n",
               prefetch, wps, wps * (T + 1) / 1e6, wps / need, need);
        datasource_free(src);
    }
    if (argc <= 1) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd)) rt_warn("could not remove %s", dir);
    }
    return 0;
}
