#include "data/datasource.h"

#include <string.h>

#include "util/error.h"

DataSource *token_file_open(const char *path, const DataConfig *dc, const ModelConfig *mc, int T,
                            uint64_t seed, DataSplit split, int64_t holdout, char *err,
                            size_t errlen);
DataSource *synthetic_open(const char *task, const ModelConfig *mc, int T, uint64_t seed,
                           DataSplit split, char *err, size_t errlen);

DataSource *datasource_open(const char *spec, const DataConfig *dc, const ModelConfig *mc, int T,
                            uint64_t seed, DataSplit split, int64_t holdout_windows, char *err,
                            size_t errlen) {
    static const char prefix[] = "synthetic:";
    if (!strncmp(spec, prefix, sizeof prefix - 1))
        return synthetic_open(spec + sizeof prefix - 1, mc, T, seed, split, err, errlen);
    return token_file_open(spec, dc, mc, T, seed, split, holdout_windows, err, errlen);
}

void datasource_free(DataSource *ds) {
    if (ds) ds->destroy(ds);
}

void windows_to_batch(const int32_t *win, int B, int T, int32_t *tokens, int32_t *labels) {
    for (int b = 0; b < B; b++) {
        memcpy(tokens + (size_t)b * T, win + (size_t)b * (T + 1), sizeof(int32_t) * (size_t)T);
        memcpy(labels + (size_t)b * T, win + (size_t)b * (T + 1) + 1, sizeof(int32_t) * (size_t)T);
    }
}
