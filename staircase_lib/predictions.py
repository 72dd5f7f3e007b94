"""A model's next-token predictions against counted n-gram models: how far (in nats) its distribution on
held-out contexts is from the unigram, bigram and trigram models of
:meth:`~staircase_lib.text_corpus.TextCorpus.ngram_predictions` (the "distributional simplicity" measurement
of Belrose et al. 2024), and which of them it is closest to over training (Chapter 8)."""
from __future__ import annotations

import torch

__all__ = ["prediction_divergence"]


def prediction_divergence(log_probs: torch.Tensor, references: torch.Tensor) -> torch.Tensor:
    """``KL(reference_r || model)`` in nats, averaged over positions, for each reference: Tensor[R] (float64).

    ``log_probs``: the model's next-token log-probabilities Tensor[..., V] (e.g. [N, L, V], rows of
    ``log_softmax``); ``references``: R reference distributions at the same positions Tensor[R, ..., V] (rows
    summing to 1; e.g. ``TextCorpus.ngram_predictions(contexts)``). 0 where the model predicts exactly as a
    reference does; ``KL(q || model)`` is the model's cross-entropy against the reference's predictions minus
    the reference's own entropy, so a model closer to a reference scores lower on it."""
    if not isinstance(log_probs, torch.Tensor) or not isinstance(references, torch.Tensor):
        raise TypeError(f"log_probs and references must be tensors, got {type(log_probs).__name__} and "
                        f"{type(references).__name__}")
    if log_probs.dim() < 1 or references.shape[1:] != log_probs.shape:
        shape = ", ".join(map(str, log_probs.shape))
        raise ValueError(f"references must have shape [R, *log_probs.shape] = [R, {shape}], "
                         f"got {tuple(references.shape)}")
    if not torch.isfinite(log_probs).all():
        raise ValueError("log_probs must be finite (log_softmax of finite logits)")
    p = references.to(torch.float64)
    own = torch.where(p > 0, p * p.clamp_min(1e-300).log(), torch.zeros((), dtype=p.dtype))
    cross = p * log_probs.to(torch.float64)
    return (own - cross).flatten(1, -2).sum(-1).mean(-1)


