"""The course's models, with one small-initialization convention (std = fan_in ** -gamma, biases 0):
``mlp`` (Emb-MLP, Emb-Linear) and ``transformer`` (one transformer; AttentionModel and TinyGPT are
configurations of it)."""
from .base import ACTIVATION_SLOPE_AT_ZERO, ACTIVATIONS, TokenModel, init_scale
from .mlp import EmbLinear, EmbLinearConfig, EmbMLP, EmbMLPConfig
from .transformer import AttentionModel, TinyGPT, Transformer, TransformerConfig

__all__ = ["ACTIVATIONS", "ACTIVATION_SLOPE_AT_ZERO", "init_scale", "TokenModel", "EmbMLP", "EmbMLPConfig",
           "EmbLinear", "EmbLinearConfig", "Transformer", "TransformerConfig", "AttentionModel", "TinyGPT"]
