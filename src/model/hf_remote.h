/* The Python files that a checkpoint of one of rotor's Hugging Face models holds beside its
 * config.json (hf_config_is_fla() false): transformers loads them with trust_remote_code
 * (config.json's auto_map). Their sources are the .py files of python/rotor_hf/, compiled in by
 * cmake/embed_files.cmake. docs/interop.md says what they compute. */
#ifndef ROTOR_HF_REMOTE_H
#define ROTOR_HF_REMOTE_H

typedef struct {
    const char *name, *text; /* file name in the checkpoint, its contents */
} HfRemoteFile;

extern const HfRemoteFile HF_REMOTE_FILES[];
extern const int HF_REMOTE_NFILES;

#endif
