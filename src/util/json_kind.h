/* What a JSON value is, for messages ("got a string", "is an integer"). */
#ifndef ROTOR_JSON_KIND_H
#define ROTOR_JSON_KIND_H

#include <jansson.h>

/* "an object", "an array", "a string", "an integer", "a float", "true", "false", "null";
 * "nothing" for NULL (an absent member). */
const char *json_kind(const json_t *v);

#endif
