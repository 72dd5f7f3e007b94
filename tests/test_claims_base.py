"""sl.claims.base: the claims cell's table and the shared cosine."""
from __future__ import annotations

import torch

from staircase_lib.claims import Claim, cosine, table


def test_table_lists_every_claim_with_its_verdict_numbers_and_rule():
    claims = {"fast": Claim("speed-up >= 10", True, {"speed-up": 22.4}),
              "slow": Claim("t < 5", False, {"t": [3, 7.0]})}
    lines = table(claims).splitlines()
    assert len(lines) == 5 and lines[0].startswith("claim")
    assert lines[1].split()[:3] == ["fast", "True", "speed-up=22.4"] and lines[2].strip() == "speed-up >= 10"
    assert lines[3].split()[:2] == ["slow", "False"] and "t=[3, 7]" in lines[3]
    assert table([claims["fast"]]).splitlines()[1].split()[0] == "1", "a list is numbered"


def test_cosine_of_parallel_opposite_and_orthogonal_tensors():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert abs(cosine(a, 2 * a) - 1) < 1e-12 and abs(cosine(a, -a) + 1) < 1e-12
    assert abs(cosine(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))) < 1e-12
