/* Run-time choice of the compute backend: `cpu`, `cuda`, or `auto` (cuda when a GPU is
 * visible, else cpu). Under mpirun every rank first selects the GPU of its local rank. */
#ifndef ROTOR_DEVICE_H
#define ROTOR_DEVICE_H

#include "backend.h"

/* The backend named by `device`; dies with the reason when cuda is asked for and cannot be
 * used. `source` names where the choice came from (a config key or an option) for errors. */
const Backend *backend_select(const char *device, const char *source);

#endif
