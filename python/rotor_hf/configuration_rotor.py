"""The configurations of rotor's Hugging Face models (docs/interop.md).

A rotor checkpoint whose function no model of flash-linear-attention computes names one of these
in its config.json (model_type "rotor_<fla's model_type>", auto_map). rotor writes this file into
the checkpoint from python/rotor_hf/ of its repository; config.json's keys are those of
docs/formats.md "Checkpoints", kept as attributes.
"""
from transformers import PretrainedConfig


class RotorConfig(PretrainedConfig):
    model_type = "rotor"

    def __init__(self, **kwargs):
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)


class RotorGLAConfig(RotorConfig):
    model_type = "rotor_gla"


class RotorGatedDeltaNetConfig(RotorConfig):
    model_type = "rotor_gated_deltanet"


class RotorDeltaNetConfig(RotorConfig):
    model_type = "rotor_delta_net"


class RotorForgettingTransformerConfig(RotorConfig):
    model_type = "rotor_forgetting_transformer"


class RotorTransformerConfig(RotorConfig):
    model_type = "rotor_transformer"


class RotorMamba2Config(RotorConfig):
    model_type = "rotor_mamba2"


class RotorLRUConfig(RotorConfig):
    model_type = "rotor_lru"


class RotorRotRNNConfig(RotorConfig):
    model_type = "rotor_rotrnn"


class RotorRNNConfig(RotorConfig):
    model_type = "rotor_rnn"


class RotorRNNOrthConfig(RotorConfig):
    model_type = "rotor_rnn_orth"


class RotorExpRNNConfig(RotorConfig):
    model_type = "rotor_exprnn"


class RotorNnRNNConfig(RotorConfig):
    model_type = "rotor_nnrnn"


class RotorEURNNConfig(RotorConfig):
    model_type = "rotor_eurnn"


class RotorLSTMConfig(RotorConfig):
    model_type = "rotor_lstm"
