/* Checkpoints written before the family and task keys were renamed (rotor 7ec4987, kept in
 * tests/data/checkpoints-2026-11-27): their rotor.ini, which holds every key under the names
 * of then (model.head_dim, model.state_size, r_min and r_max for RotRNN, task.min_len and
 * max_len), still loads with the same values, and so does the model of their config.json.
 * tests/legacy_checkpoints.sh resumes them. */
#include <stdio.h>

#include "config/run_config.h"
#include "device/device.h"
#include "harness.h"
#include "model/model.h"
#include "train/checkpoint.h"

#define DATA ROTOR_TEST_DATA "/checkpoints-2026-11-27"

static Model *load(const char *name, RunConfig *rc) {
    char dir[512], err[2048];
    snprintf(dir, sizeof dir, DATA "/%s/step_00000001", name);
    CHECK_MSG(checkpoint_verify(dir, 1, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(checkpoint_read_config(dir, rc, err, sizeof err) == 0, "%s", err);
    Model *m = checkpoint_load_model(dir, backend_select("cpu", "test"), 1, err, sizeof err);
    CHECK_MSG(m != NULL, "%s", err);
    return m;
}

static void test_rotrnn_copy(void) {
    RunConfig rc;
    Model *m = load("rotrnn-copy", &rc);
    CHECK(rc.model.mixer == MIXER_ROTRNN && rc.model.state_size == 8 && rc.model.num_heads == 2);
    CHECK(rc.model.r_min == 0.8 && rc.model.r_max == 0.99);
    CHECK(!strcmp(rc.task.type, "copy") && rc.task.min_len == 2 && rc.task.max_len == 6);
    if (m) {
        CHECK(model_config(m)->mixer == MIXER_ROTRNN && model_config(m)->state_size == 8);
        CHECK(model_config(m)->r_min == 0.8 && model_config(m)->r_max == 0.99);
        model_free(m);
    }
}

static void test_gdn_markov(void) {
    RunConfig rc;
    Model *m = load("gdn-markov", &rc);
    CHECK(rc.model.mixer == MIXER_GDN && rc.model.head_dim == 8 &&
          rc.model.pe.kind == PE_SELECTIVE);
    if (m) {
        CHECK(model_config(m)->head_dim == 8 && model_dims_of(m)->dk == 8);
        model_free(m);
    }
}

/* The same rotor.ini is refused as a user's config: its renamed keys name their replacements. */
static void test_old_names_refused(void) {
    char err[2048];
    RunConfig rc;
    CHECK(run_config_load(&rc, DATA "/gdn-markov/step_00000001/rotor.ini", NULL, 0, err,
                          sizeof err) != 0);
    CHECK_MSG(strstr(err, "model.head_dim was renamed") && strstr(err, "model.key_head_dim"), "%s",
              err);
}

static const TestCase tests[] = {
    {"rotrnn_copy", test_rotrnn_copy},
    {"gdn_markov", test_gdn_markov},
    {"old_names_refused", test_old_names_refused},
};

TH_MAIN(tests)
