#include "io/tb_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "tensorboard.pb-c.h"
#include "util/error.h"
#include "util/fsutil.h"

struct TbEvents {
    FILE *f;
    char path[1200];
};

uint32_t tb_crc32c(const void *data, size_t n) {
    static uint32_t table[256];
    if (!table[1]) /* filled once; the first caller is the trainer's main thread */
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    const unsigned char *p = data;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* TFRecord's masked CRC: rotated right by 15 plus a constant. */
static uint32_t masked_crc(const void *data, size_t n) {
    uint32_t c = tb_crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static int write_event(TbEvents *w, const Rotor__Tb__Event *ev, char *err, size_t errlen) {
    size_t n = rotor__tb__event__get_packed_size(ev);
    unsigned char *buf = rt_malloc(n + 1);
    rotor__tb__event__pack(ev, buf);
    unsigned char head[12];
    uint64_t len = n;
    memcpy(head, &len, 8); /* little-endian host (io/safetensors.h) */
    uint32_t hc = masked_crc(head, 8), dc = masked_crc(buf, n);
    memcpy(head + 8, &hc, 4);
    int ok = fwrite(head, 1, 12, w->f) == 12 && fwrite(buf, 1, n, w->f) == n &&
             fwrite(&dc, 1, 4, w->f) == 4;
    rt_free(buf);
    return ok ? 0 : rt_error(err, errlen, NULL, "%s: cannot write: %s", w->path, strerror(errno));
}

static double now_seconds(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* An Event at (wall_time, step) holding `what`; the caller sets that member. */
static Rotor__Tb__Event event_of(double wall_time, int64_t step, Rotor__Tb__Event__WhatCase what) {
    Rotor__Tb__Event ev = ROTOR__TB__EVENT__INIT;
    ev.wall_time = wall_time;
    ev.step = step;
    ev.what_case = what;
    return ev;
}

TbEvents *tb_open(const char *dir, int64_t first_step, char *err, size_t errlen) {
    if (fs_try_mkdirs(dir)) {
        rt_error(err, errlen, NULL, "cannot create %s: %s", dir, strerror(errno));
        return NULL;
    }
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    double t = now_seconds();
    TbEvents *w = rt_calloc(1, sizeof *w);
    snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%s.%d", dir, (long long)t, host,
             (int)getpid());
    if (!(w->f = fopen(w->path, "wb"))) {
        rt_error(err, errlen, NULL, "cannot create %s: %s", w->path, strerror(errno));
        rt_free(w);
        return NULL;
    }
    Rotor__Tb__Event ev = event_of(t, 0, ROTOR__TB__EVENT__WHAT_FILE_VERSION);
    ev.file_version = "brain.Event:2";
    Rotor__Tb__SessionLog log = ROTOR__TB__SESSION_LOG__INIT;
    log.status = ROTOR__TB__SESSION_LOG__SESSION_STATUS__START;
    Rotor__Tb__Event start = event_of(t, first_step, ROTOR__TB__EVENT__WHAT_SESSION_LOG);
    start.session_log = &log;
    if (write_event(w, &ev, err, errlen) || write_event(w, &start, err, errlen)) {
        tb_close(w);
        return NULL;
    }
    tb_flush(w);
    return w;
}

int tb_scalar(TbEvents *w, const char *tag, int64_t step, double wall_time, float value, char *err,
              size_t errlen) {
    Rotor__Tb__SummaryValue v = ROTOR__TB__SUMMARY_VALUE__INIT;
    v.tag = (char *)tag;
    v.simple_value = value;
    Rotor__Tb__SummaryValue *vals[] = {&v};
    Rotor__Tb__Summary sum = ROTOR__TB__SUMMARY__INIT;
    sum.n_value = 1;
    sum.value = vals;
    Rotor__Tb__Event ev = event_of(wall_time, step, ROTOR__TB__EVENT__WHAT_SUMMARY);
    ev.summary = &sum;
    return write_event(w, &ev, err, errlen);
}

void tb_flush(TbEvents *w) { fflush(w->f); }

void tb_close(TbEvents *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    rt_free(w);
}
