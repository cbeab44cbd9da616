/* Training windows from token shards (src/data/shard_set.h), one shard set or a weighted
 * mixture of several (data/mixture_spec.h).
 *
 * A shard set is one token stream; window w covers stream tokens [w T, w T + T] (windows
 * overlap by one token, so every token but the first is a label once per epoch). The train
 * split visits a set's windows in a fresh pseudo-random order every epoch: a keyed Feistel
 * permutation of [0, n) (cycle walking), a pure function of (seed, epoch, index), so no
 * permutation is stored.
 *
 * The global stream of windows is a pure function of the seed and the position, the same
 * for every world size: window j of the stream comes from the source that the blending
 * picks (Megatron's rule: the source furthest below its weight's share of the stage's
 * windows so far), and is that source's next window in its own order. Rank r of N takes, of
 * every global micro-batch of N B windows, the B windows r B .. r B + B - 1; every rank walks
 * the whole micro-batch, so all ranks hold the same position. Stages (data.stages) change
 * the weights at a step: window j belongs to step j / (windows per step). A background thread
 * reads ahead. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "data/datasource.h"
#include "data/mixture_spec.h"
#include "data/shard_set.h"
#include "util/error.h"
#include "util/rng.h"

/* ---- the stream's position ---- */

typedef struct {
    ShardSet set;
    uint64_t seed;        /* its windows' order: train.seed, mixed with the source's index */
    int64_t first, count; /* windows of this split: [first, first + count) */
} Part;

typedef struct {
    int64_t epoch, pos;  /* the next window: index pos of the epoch's order */
    int64_t drawn;       /* windows drawn, all ranks together */
    int64_t stage_drawn; /* ... in the current stage */
} PartPos;

typedef struct {
    int64_t drawn; /* windows of the global stream drawn */
    int stage;
    int64_t stage_drawn;
    PartPos part[MIX_MAX_SOURCES];
} Cursor;

typedef struct {
    int32_t *tokens;
    uint8_t *doc;
    int rc; /* read_batch's */
    char err[1024];
} Slot;

typedef struct {
    DataSource base;
    MixSpec mix;
    Part parts[MIX_MAX_SOURCES];
    int T, rank, world;
    DataSplit split;
    int64_t
        windows_per_step; /* of the global stream; 0: stages and on_exhausted act per micro-batch */
    int stop_at_end;      /* data.on_exhausted = stop: no source starts a second epoch */
    Cursor cur;           /* the consumer's position */

    /* read-ahead: slots filled in order by the thread, starting at pf */
    int depth, B;
    Slot *slots;
    int64_t produced, consumed; /* slot sequence numbers */
    Cursor pf;
    int running, stop, ended;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} ShardSource;

static int64_t window_of(const ShardSource *s, const Part *p, int64_t epoch, int64_t i) {
    if (s->split != SPLIT_TRAIN) return p->first + i;
    uint64_t key = rng_mix64(p->seed ^ rng_mix64((uint64_t)epoch + 0x5EEDull));
    return p->first + rng_permute(i, p->count, key);
}

/* Appends a line to the consumer's notices (DataSource.notice). */
static void notice(ShardSource *s, const char *fmt, ...) RT_PRINTF(2, 3);
static void notice(ShardSource *s, const char *fmt, ...) {
    size_t used = strlen(s->base.notice);
    if (used + 2 >= sizeof s->base.notice) return;
    if (used) s->base.notice[used++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->base.notice + used, sizeof s->base.notice - used, fmt, ap);
    va_end(ap);
}

/* "'web' (/data/web)" or, for a single set, its spec. */
static const char *source_label(const ShardSource *s, int i, char *buf, size_t len) {
    if (s->mix.n == 1) return s->base.desc;
    snprintf(buf, len, "source '%s' (%s)", s->mix.src[i].name, s->mix.src[i].path);
    return buf;
}

typedef struct {
    int part; /* the window's source */
    int64_t window;
    int64_t epoch; /* of its source */
    int finished;  /* it was the last window of its source's epoch */
    int new_stage; /* the stream entered a stage with it */
} Draw;

/* Draws the next window of the stream at c. */
static Draw take(const ShardSource *s, Cursor *c) {
    Draw d = {0};
    int64_t wps = s->windows_per_step ? s->windows_per_step : (int64_t)s->world * s->B;
    int stage = s->mix.stages > 1 ? mix_stage_at(&s->mix, c->drawn / wps) : 0;
    if (stage != c->stage) {
        c->stage = stage;
        c->stage_drawn = 0;
        for (int i = 0; i < s->mix.n; i++) c->part[i].stage_drawn = 0;
        d.new_stage = 1;
    }
    double gap = -INFINITY;
    for (int i = 0; i < s->mix.n; i++) {
        double g = s->mix.stage[stage].weight[i] * (double)(c->stage_drawn + 1) -
                   (double)c->part[i].stage_drawn;
        if (g > gap) gap = g, d.part = i;
    }
    PartPos *p = &c->part[d.part];
    const Part *part = &s->parts[d.part];
    d.window = window_of(s, part, p->epoch, p->pos);
    d.epoch = p->epoch;
    if (++p->pos == part->count) {
        p->pos = 0;
        p->epoch++;
        d.finished = 1;
    }
    p->drawn++;
    p->stage_drawn++;
    c->drawn++;
    c->stage_drawn++;
    return d;
}

/* data.on_exhausted = stop, at the start of a step: 1 (and the reason in err) when one of the
 * step's windows would begin a second epoch of its source. */
static int step_runs_out(const ShardSource *s, const Cursor *c, char *err, size_t errlen) {
    int64_t wps = s->windows_per_step ? s->windows_per_step : (int64_t)s->world * s->B;
    if (c->drawn % wps) return 0;
    Cursor probe = *c;
    for (int64_t j = 0; j < wps; j++) {
        Draw d = take(s, &probe);
        if (d.epoch > 0) {
            char buf[1200];
            rt_error(err, errlen, NULL,
                     "%s ran out: all of its %lld windows were drawn by step %lld",
                     source_label(s, d.part, buf, sizeof buf), (long long)s->parts[d.part].count,
                     (long long)(c->drawn / wps));
            return 1;
        }
    }
    return 0;
}

/* Moves c over one global micro-batch of world x B windows, reading this rank's B into tokens
 * and doc (tokens NULL: only moves; consumer: the notices go to s). Returns 0, -1 on a read
 * error, or 1 when the data ran out (data.on_exhausted = stop), with c unchanged. */
static int read_batch(ShardSource *s, Cursor *c, int B, int32_t *tokens, uint8_t *doc, int consumer,
                      char *err, size_t errlen) {
    if (s->stop_at_end && step_runs_out(s, c, err, errlen)) return 1;
    size_t n = (size_t)s->T + 1;
    int64_t lo = (int64_t)s->rank * B;
    for (int64_t j = 0; j < (int64_t)s->world * B; j++) {
        Draw d = take(s, c);
        if (tokens && j >= lo && j < lo + B) {
            size_t b = (size_t)(j - lo);
            if (shardset_read(&s->parts[d.part].set, d.window * s->T, (int64_t)n, tokens + b * n,
                              doc ? doc + b * n : NULL, err, errlen))
                return -1;
        }
        if (!consumer) continue;
        char buf[1200], weights[512];
        if (d.new_stage) {
            mix_describe_stage(&s->mix, c->stage, weights, sizeof weights);
            notice(s, "data: stage %d of data.stages from step %lld: %s", c->stage,
                   (long long)s->mix.stage[c->stage].step, weights);
        }
        if (d.finished)
            notice(s,
                   "data: %s: epoch %lld done (%lld windows); epoch %lld starts in a fresh order",
                   source_label(s, d.part, buf, sizeof buf), (long long)d.epoch + 1,
                   (long long)s->parts[d.part].count, (long long)d.epoch + 2);
    }
    return 0;
}

/* ---- read-ahead ---- */

static void *prefetch_main(void *arg) {
    ShardSource *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        if (s->ended || s->produced - s->consumed >= s->depth) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        Slot *slot = &s->slots[s->produced % s->depth];
        Cursor c = s->pf;
        pthread_mutex_unlock(&s->mu);
        slot->rc = read_batch(s, &c, s->B, slot->tokens, slot->doc, 0, slot->err, sizeof slot->err);
        pthread_mutex_lock(&s->mu);
        s->pf = c;
        s->ended = slot->rc == 1;
        s->produced++;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void prefetch_stop(ShardSource *s) {
    if (!s->running) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->running = 0;
}

static void prefetch_start(ShardSource *s, int B) {
    prefetch_stop(s);
    if (s->B != B) {
        for (int i = 0; i < s->depth; i++) {
            rt_free(s->slots[i].tokens);
            rt_free(s->slots[i].doc);
            s->slots[i].tokens = rt_malloc(sizeof(int32_t) * (size_t)B * (size_t)(s->T + 1));
            s->slots[i].doc = rt_malloc((size_t)B * (size_t)(s->T + 1));
        }
        s->B = B;
    }
    s->produced = s->consumed = 0;
    s->pf = s->cur;
    s->stop = s->ended = 0;
    if (pthread_create(&s->thread, NULL, prefetch_main, s))
        rt_die("cannot start the data loader thread");
    s->running = 1;
}

static int ss_next(DataSource *ds, int32_t *tokens, uint8_t *doc, int B, char *err, size_t errlen) {
    ShardSource *s = (ShardSource *)ds;
    size_t n = (size_t)B * (size_t)(s->T + 1);
    if (s->depth == 0) {
        s->B = B;
        return read_batch(s, &s->cur, B, tokens, doc, 1, err, errlen);
    }
    if (!s->running || s->B != B) prefetch_start(s, B);
    pthread_mutex_lock(&s->mu);
    while (s->produced == s->consumed) pthread_cond_wait(&s->cv, &s->mu);
    Slot *slot = &s->slots[s->consumed % s->depth];
    pthread_mutex_unlock(&s->mu);
    int rc = slot->rc;
    if (rc) {
        rt_error(err, errlen, NULL, "%s", slot->err);
    } else {
        memcpy(tokens, slot->tokens, sizeof(int32_t) * n);
        if (doc) memcpy(doc, slot->doc, n);
        read_batch(s, &s->cur, B, NULL, NULL, 1, err,
                   errlen); /* the same moves, with the notices */
    }
    if (rc != 1) { /* an end stays the next slot: the position does not move */
        pthread_mutex_lock(&s->mu);
        s->consumed++;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

/* ---- saved positions ---- */

static json_t *ss_get_state(const DataSource *ds) {
    const ShardSource *s = (const ShardSource *)ds;
    const PartPos *p = &s->cur.part[0];
    if (s->mix.n == 1) /* the format of a single set, as before mixtures */
        return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "kind", "shards", "tokens",
                         (json_int_t)shardset_tokens(&s->parts[0].set), "seq_len", (json_int_t)s->T,
                         "windows", (json_int_t)s->parts[0].count, "epoch", (json_int_t)p->epoch,
                         "position", (json_int_t)p->pos);
    json_t *src = json_array();
    for (int i = 0; i < s->mix.n; i++) {
        p = &s->cur.part[i];
        json_array_append_new(
            src, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "name", s->mix.src[i].name,
                           "tokens", (json_int_t)shardset_tokens(&s->parts[i].set), "windows",
                           (json_int_t)s->parts[i].count, "epoch", (json_int_t)p->epoch, "position",
                           (json_int_t)p->pos, "drawn", (json_int_t)p->drawn, "stage_drawn",
                           (json_int_t)p->stage_drawn, "stage_weight",
                           s->mix.stage[s->cur.stage].weight[i]));
    }
    return json_pack("{s:s, s:I, s:I, s:I, s:i, s:I, s:o}", "kind", "mixture", "seq_len",
                     (json_int_t)s->T, "windows_per_step", (json_int_t)s->windows_per_step, "drawn",
                     (json_int_t)s->cur.drawn, "stage", s->cur.stage, "stage_drawn",
                     (json_int_t)s->cur.stage_drawn, "sources", src);
}

static int check_position(const ShardSource *s, int i, json_int_t tokens, json_int_t windows,
                          json_int_t epoch, json_int_t position, char *err, size_t errlen) {
    char buf[1200];
    const char *what = source_label(s, i, buf, sizeof buf);
    if (tokens != shardset_tokens(&s->parts[i].set) || windows != s->parts[i].count)
        return rt_error(
            err, errlen, what,
            "the saved data position (%lld tokens, %lld windows of %d) does not match these shards "
            "(%lld tokens, %lld windows): the data changed since the checkpoint",
            (long long)tokens, (long long)windows, s->T + 1,
            (long long)shardset_tokens(&s->parts[i].set), (long long)s->parts[i].count);
    if (epoch < 0 || position < 0 || position >= windows)
        return rt_error(err, errlen, what,
                        "the saved data position (epoch %lld, window %lld) is out of range",
                        (long long)epoch, (long long)position);
    return 0;
}

static int set_single(ShardSource *s, const json_t *st, char *err, size_t errlen) {
    const char *kind;
    json_int_t tokens, seq_len, windows, epoch, position;
    if (json_unpack((json_t *)st, "{s:s, s:I, s:I, s:I, s:I, s:I}", "kind", &kind, "tokens",
                    &tokens, "seq_len", &seq_len, "windows", &windows, "epoch", &epoch, "position",
                    &position) ||
        strcmp(kind, "shards"))
        return rt_error(err, errlen, s->base.desc,
                        "the saved data position is not that of one shard set (the checkpoint read "
                        "a mixture?)");
    if (seq_len != s->T)
        return rt_error(err, errlen, s->base.desc,
                        "the saved data position is of windows of %lld tokens, not %d",
                        (long long)seq_len + 1, s->T + 1);
    if (check_position(s, 0, tokens, windows, epoch, position, err, errlen)) return -1;
    s->cur.part[0] = (PartPos){.epoch = epoch, .pos = position};
    return 0;
}

/* A mixture's sources are matched by name: a source the checkpoint lacks starts at its first
 * window, one that this run lacks is dropped; the stage's counts go on only when the stage
 * and its weights are the same, else the weights apply afresh from here. */
static int set_mixture(ShardSource *s, const json_t *st, char *err, size_t errlen) {
    const char *kind;
    json_int_t seq_len, wps, drawn, stage_drawn;
    int stage;
    json_t *src;
    if (json_unpack((json_t *)st, "{s:s, s:I, s:I, s:I, s:i, s:I, s:o}", "kind", &kind, "seq_len",
                    &seq_len, "windows_per_step", &wps, "drawn", &drawn, "stage", &stage,
                    "stage_drawn", &stage_drawn, "sources", &src) ||
        strcmp(kind, "mixture") || !json_is_array(src))
        return rt_error(err, errlen, s->base.desc,
                        "the saved data position is not that of a mixture (the checkpoint read one "
                        "shard set?)");
    if (seq_len != s->T)
        return rt_error(err, errlen, s->base.desc,
                        "the saved data position is of windows of %lld tokens, not %d",
                        (long long)seq_len + 1, s->T + 1);
    if (s->mix.stages > 1 && wps != s->windows_per_step)
        return rt_error(
            err, errlen, s->base.desc,
            "the checkpoint's run drew %lld windows a step, this one draws %lld (ranks x "
            "micro_batch x "
            "grad_accum): data.stages count steps, so the global batch must stay the same",
            (long long)wps, (long long)s->windows_per_step);
    /* the stage of the last window drawn, by this run's data.stages */
    int64_t wsteps = s->windows_per_step ? s->windows_per_step : 1;
    Cursor c = {.drawn = drawn};
    c.stage = s->mix.stages > 1 && drawn ? mix_stage_at(&s->mix, (drawn - 1) / wsteps) : 0;
    int same = c.stage == stage, found[MIX_MAX_SOURCES] = {0};
    size_t k;
    json_t *e;
    json_array_foreach(src, k, e) {
        const char *name;
        json_int_t tokens, windows, epoch, position, pdrawn, pstage;
        double weight;
        if (json_unpack(e, "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:F}", "name", &name, "tokens",
                        &tokens, "windows", &windows, "epoch", &epoch, "position", &position,
                        "drawn", &pdrawn, "stage_drawn", &pstage, "stage_weight", &weight))
            return rt_error(err, errlen, s->base.desc,
                            "source %zu of the saved data position is malformed", k);
        int i = 0;
        while (i < s->mix.n && strcmp(s->mix.src[i].name, name)) i++;
        if (i == s->mix.n) {
            notice(s, "data: source '%s' of the checkpoint is not in this mixture: dropped", name);
            same = 0;
            continue;
        }
        if (check_position(s, i, tokens, windows, epoch, position, err, errlen)) return -1;
        c.part[i] =
            (PartPos){.epoch = epoch, .pos = position, .drawn = pdrawn, .stage_drawn = pstage};
        same &= weight == s->mix.stage[c.stage].weight[i];
        found[i] = 1;
    }
    for (int i = 0; i < s->mix.n; i++)
        if (!found[i]) {
            notice(s,
                   "data: source '%s' is new since the checkpoint: it starts at its first window",
                   s->mix.src[i].name);
            same = 0;
        }
    if (same) {
        c.stage_drawn = stage_drawn;
    } else {
        c.stage = s->mix.stages > 1 ? mix_stage_at(&s->mix, drawn / wsteps) : 0;
        char weights[512];
        mix_describe_stage(&s->mix, c.stage, weights, sizeof weights);
        notice(s,
               "data: the mixture differs from the checkpoint's; its weights apply afresh from "
               "here: %s",
               weights);
        for (int i = 0; i < s->mix.n; i++) c.part[i].stage_drawn = 0;
    }
    s->cur = c;
    return 0;
}

static int ss_set_state(DataSource *ds, const json_t *st, char *err, size_t errlen) {
    ShardSource *s = (ShardSource *)ds;
    prefetch_stop(s);
    return s->mix.n == 1 ? set_single(s, st, err, errlen) : set_mixture(s, st, err, errlen);
}

static int ss_drawn(const DataSource *ds, const char **names, int64_t *windows, int max) {
    const ShardSource *s = (const ShardSource *)ds;
    if (s->mix.n == 1) return 0;
    for (int i = 0; i < s->mix.n && i < max; i++) {
        names[i] = s->mix.src[i].name;
        windows[i] = s->cur.part[i].drawn;
    }
    return s->mix.n;
}

static void ss_destroy(DataSource *ds) {
    ShardSource *s = (ShardSource *)ds;
    prefetch_stop(s);
    for (int i = 0; i < s->depth; i++) {
        rt_free(s->slots[i].tokens);
        rt_free(s->slots[i].doc);
    }
    rt_free(s->slots);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    for (int i = 0; i < s->mix.n; i++) shardset_close(&s->parts[i].set);
    rt_free(s);
}

/* Opens source i of the mixture: its shards and its split's windows. */
static int open_part(ShardSource *s, int i, const DataConfig *dc, const ModelConfig *mc,
                     const DataOptions *opt, char *err, size_t errlen) {
    Part *p = &s->parts[i];
    const char *path = s->mix.src[i].path;
    if (shardset_open(&p->set, path, dc, mc, err, errlen)) return -1;
    p->seed = i ? rng_mix64(opt->seed + (uint64_t)i) : opt->seed;
    int64_t total = shardset_tokens(&p->set), nwin = total > 0 ? (total - 1) / s->T : 0;
    int64_t hold = opt->holdout_windows > 0 ? opt->holdout_windows : 0;
    int64_t need = hold + (s->mix.n == 1 ? (int64_t)opt->world : 1);
    if (nwin < need)
        return rt_error(err, errlen, path,
                        "%lld tokens make %lld windows of %d tokens (train.seq_len + 1); at least "
                        "%lld are needed "
                        "(%s%s)",
                        (long long)total, (long long)nwin, s->T + 1, (long long)need,
                        s->mix.n == 1 ? "one per rank" : "one",
                        hold ? " plus the held-out validation windows" : "");
    p->first = opt->split == SPLIT_TRAIN || !hold ? 0 : nwin - hold;
    p->count = opt->split == SPLIT_TRAIN ? nwin - hold : (hold ? hold : nwin);
    return 0;
}

DataSource *shard_source_open(const char *spec, const DataConfig *dc, const ModelConfig *mc,
                              const DataOptions *opt, char *err, size_t errlen) {
    ShardSource *s = rt_calloc(1, sizeof(ShardSource));
    int train = opt->split == SPLIT_TRAIN;
    if (mix_spec_parse(train ? "data.train" : "data.val", spec, train ? dc->stages : NULL, &s->mix,
                       err, errlen)) {
        rt_free(s);
        return NULL;
    }
    snprintf(s->base.desc, sizeof s->base.desc, "%s", spec);
    s->T = opt->seq_len;
    s->rank = opt->rank;
    s->world = opt->world;
    s->split = opt->split;
    s->windows_per_step = opt->windows_per_step;
    s->stop_at_end = train && dc->on_exhausted == DATA_EXHAUSTED_STOP;
    for (int i = 0; i < s->mix.n; i++)
        if (open_part(s, i, dc, mc, opt, err, errlen)) {
            for (int j = 0; j <= i; j++) shardset_close(&s->parts[j].set);
            rt_free(s);
            return NULL;
        }
    s->depth = opt->prefetch;
    s->slots = rt_calloc((size_t)(s->depth ? s->depth : 1), sizeof(Slot));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->base.next = ss_next;
    s->base.get_state = ss_get_state;
    s->base.set_state = ss_set_state;
    s->base.drawn = ss_drawn;
    s->base.destroy = ss_destroy;
    return &s->base;
}
