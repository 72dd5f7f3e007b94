"""Checks for the exercises of Chapter 5 (Self-attention at small initialization)."""
from __future__ import annotations

from typing import Callable

import torch

from ...exercises._core import _compare, _exercise, _fail

__all__ = ["check_epsilon_slope", "check_normalized_entropy", "check_focus_position"]


@_exercise("ex-5.2", "What the epsilon^4 law tests", function="epsilon_slope", difficulty=2, minutes=20)
def check_epsilon_slope(epsilon_slope: Callable) -> None:
    """Check ``epsilon_slope(gammas, deviations, d_embed) -> float``: the log-log slope of the deviation
    from uniform attention against ``eps = d_embed ** (1/2 - gamma)``."""
    gammas = torch.tensor([0.75, 1.0, 1.25, 1.5], dtype=torch.float64)
    for d, power, scale in ((32, 4.0, 0.3), (16, 3.0, 2.0), (64, 4.0, 1e-2)):
        eps = d ** (0.5 - gammas)
        got = epsilon_slope(gammas, scale * eps**power, d)
        if not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            _fail("ex-5.2", f"return one number (the slope), got {type(got).__name__}")
        if abs(float(got) - power) > 1e-6:
            _fail("ex-5.2", f"deviations = {scale} * eps**{power} with d_embed={d} should give slope {power}, got "
                            f"{float(got):.4f}. Hint: fit log(deviation) against log(eps), eps = d**(1/2 - gamma), "
                            "by least squares (the slope is positive: deviations shrink as eps shrinks)")


@_exercise("ex-5.3", "What a batch-mean attention map hides", function="normalized_entropy", difficulty=2,
           minutes=20)
def check_normalized_entropy(normalized_entropy: Callable) -> None:
    """Check ``normalized_entropy(attention Tensor[..., L, L]) -> Tensor[..., L]`` on known distributions."""
    from ...metrics import attention_entropy

    random_rows = torch.rand(2, 5, 5, generator=torch.Generator().manual_seed(5))
    cases = {"uniform rows": torch.full((4, 4), 0.25), "one-hot rows (0 log 0 = 0)": torch.eye(3),
             "random rows": random_rows / random_rows.sum(-1, keepdim=True),
             "rows with zeros": torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8], [1 / 3, 1 / 3, 1 / 3]])}
    for what, attention in cases.items():
        _compare("ex-5.3", normalized_entropy(attention), attention_entropy(attention), what, atol=1e-5)


@_exercise("ex-5.1", "Where will attention look?", function="focus_position", difficulty=2, minutes=20)
def check_focus_position(focus_position: Callable) -> None:
    """Check ``focus_position(task) -> int``: the position a last-position readout attends to after training
    on a three-attribute task (forward or reversed) with an order-0 rule."""
    from ...tasks import StaircaseTask

    for strengths in ((0.15, 0.45, 0.35), (0.3, 0.3, 0.3)):
        for reverse, answer, hint in (
                (True, 1, "the readout token x_2 carries the order-0 rule itself; the pair rule needs x_1, so the "
                          "attention drive (Appendix A.7) grows for the pair partner"),
                (False, 0, "the order-0 token sits at a context position: the only way its signal reaches the readout "
                           "is through attention, so the order-0 stair pulls attention onto it (the saturation trap)")):
            got = focus_position(StaircaseTask(strengths=strengths, reverse=reverse))
            if got != answer:
                _fail("ex-5.1", f"StaircaseTask(strengths={strengths}, reverse={reverse}): got {got!r}. Hint: {hint}")
