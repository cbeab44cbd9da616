/* The registry of model families, one line each: X(KIND, descriptor). KIND gives the
 * MixerKind value MIXER_<KIND>; the descriptor (a Family, model/family.h) stands beside its
 * layer in src/model/mixer_*.c. The order is that of `rotor train --help` and of the
 * MixerKind values. */
#ifndef ROTOR_FAMILY_LIST_H
#define ROTOR_FAMILY_LIST_H

#define ROTOR_FAMILIES(X)                                                                          \
    X(GLA, family_gla)                                                                             \
    X(GDN, family_gated_deltanet)                                                                  \
    X(FOX, family_fox)                                                                             \
    X(TRANSFORMER, family_transformer)                                                             \
    X(DELTANET, family_deltanet)                                                                   \
    X(MAMBA2, family_mamba2)                                                                       \
    X(LRU, family_lru)                                                                             \
    X(ROTRNN, family_rotrnn)                                                                       \
    X(RNN, family_rnn)                                                                             \
    X(RNN_ORTH, family_rnn_orth)                                                                   \
    X(EXPRNN, family_exprnn)                                                                       \
    X(NNRNN, family_nnrnn)                                                                         \
    X(LSTM, family_lstm)                                                                           \
    X(EURNN, family_eurnn)

#endif
