/* The two lines `rotor train` and `rotor info` print about a model. */
#include <stdio.h>

#include "model/model.h"

static void format_count(char *buf, size_t n, double x) {
    if (x >= 1e9)
        snprintf(buf, n, "%.2fB", x / 1e9);
    else if (x >= 1e6)
        snprintf(buf, n, "%.2fM", x / 1e6);
    else if (x >= 1e3)
        snprintf(buf, n, "%.1fK", x / 1e3);
    else
        snprintf(buf, n, "%.0f", x);
}

void model_print_summary(const ModelConfig *mc, const ModelDims *dm, int64_t params,
                         int64_t non_embedding) {
    char a[32], b[32];
    format_count(a, sizeof a, (double)params);
    format_count(b, sizeof b, (double)non_embedding);
    printf("model: %s + %s, %s parameters (%lld; %s without embedding and LM head)\n",
           mixer_name(mc->mixer), pe_name(mc->pe.kind), a, (long long)params, b);
    /* a linear input reads values, not token ids: no vocabulary; a classifier's outputs are its
     * classes */
    char input[32], outputs[32] = "";
    if (mc->input == INPUT_LINEAR)
        snprintf(input, sizeof input, "input=linear");
    else
        snprintf(input, sizeof input, "vocab=%d", mc->vocab_size);
    if (mc->head == HEAD_CLASSIFIER)
        snprintf(outputs, sizeof outputs, " classes=%d", mc->num_classes);
    printf("       d=%d L=%d H=%d dk=%d dv=%d mlp=%d %s%s%s\n", mc->hidden_size, mc->num_layers,
           dm->H, dm->dk, dm->dv, dm->mlp_width, input, outputs, mc->doc_mask ? " doc_mask" : "");
}
