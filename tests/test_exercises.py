"""Tests for staircase_lib.exercises: each auto-check accepts a correct answer, reports an unattempted
exercise without failing, and rejects wrong answers with a message that points at the mistake."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from staircase_lib import exercises
from staircase_lib.exercises import EXERCISES, ExerciseFailed


# ----- reference implementations written for the tests (independent of the library) -----------------
def label_signature(tokens, labels, position, n_tokens, n_labels):
    counts = torch.zeros(n_tokens, n_labels, dtype=torch.float64)
    for v, y in zip(tokens[:, position].tolist(), labels.tolist()):
        counts[v, y] += 1
    out = torch.full((n_tokens, n_labels), float("nan"), dtype=torch.float64)
    for v in range(n_tokens):
        if counts[v].sum() > 0:
            out[v] = counts[v] / counts[v].sum()
    return out


def pair_residual(phi_pair, psi_i, psi_j, pi):
    return phi_pair - psi_i.unsqueeze(1) - psi_j.unsqueeze(0) + pi


def addition_kernel(n):
    # y = a + b with a, b uniform on [0, n): P(y | a) is uniform on {a, ..., a + n - 1}
    psi = torch.tensor([[1.0 / n if a <= y < a + n else 0.0 for y in range(2 * n - 1)] for a in range(n)],
                       dtype=torch.float64)
    pi = psi.mean(0)
    return (psi - pi) @ (psi - pi).T


def linear_cka(embeddings, kernel):
    # centre with explicit row/column means (no centring matrix), independent of the library
    g = (embeddings.double() @ embeddings.double().T).numpy()
    k = kernel.double().numpy()
    gc = g - g.mean(0) - g.mean(1)[:, None] + g.mean()
    kc = k - k.mean(0) - k.mean(1)[:, None] + k.mean()
    return float((gc * kc).sum() / np.sqrt((gc * gc).sum() * (kc * kc).sum()))


CORRECT = {"ex-1.1": label_signature, "ex-1.2": pair_residual, "ex-1.3": addition_kernel,
           "ex-1.4": linear_cka}


def not_attempted(*args, **kwargs):
    raise NotImplementedError


# ----- the registry --------------------------------------------------------------------------------------
def test_registry_holds_the_chapter_1_exercises():
    assert {"ex-1.1", "ex-1.2", "ex-1.3"} <= set(EXERCISES), f"registered: {sorted(EXERCISES)}"
    assert EXERCISES["ex-1.1"].check is exercises.check_label_signature
    assert EXERCISES["ex-1.2"].check is exercises.check_pair_residual
    assert EXERCISES["ex-1.3"].check is exercises.check_addition_kernel
    assert EXERCISES["ex-1.4"].check is exercises.check_linear_cka


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_every_exercise_is_well_formed(exercise_id):
    exercise = EXERCISES[exercise_id]
    assert exercise.id == exercise_id and re.fullmatch(r"ex-\d+\.\d+", exercise_id), "ids look like ex-C.N"
    assert exercise.difficulty in (1, 2, 3), f"{exercise_id}: difficulty must be 1-3"
    assert exercise.minutes > 0 and exercise.title, f"{exercise_id}: needs a title and a time estimate"
    assert callable(exercise.check) and exercise.check.__doc__, f"{exercise_id}: the check documents the signature"


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_not_attempted_is_reported_not_failed(exercise_id, capsys):
    assert EXERCISES[exercise_id].check(not_attempted) is False, "an unattempted exercise returns False"
    assert "not attempted" in capsys.readouterr().out, "and says so"


@pytest.mark.parametrize("exercise_id", sorted(CORRECT))
def test_correct_answers_pass(exercise_id, capsys):
    assert EXERCISES[exercise_id].check(CORRECT[exercise_id]) is True, f"{exercise_id} rejected a correct answer"
    assert "passed" in capsys.readouterr().out


def test_the_check_needs_the_function_itself():
    with pytest.raises(TypeError, match="pass your function itself"):
        exercises.check_label_signature(label_signature(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, dtype=torch.long), 0, 1, 1))


def test_exercise_failed_is_an_assertion_error():
    assert issubclass(ExerciseFailed, AssertionError), "a failed check reads like a failed assert in a notebook"


# ----- wrong answers and their hints ---------------------------------------------------------------------
def uniform_for_unseen(tokens, labels, position, n_tokens, n_labels):
    return torch.nan_to_num(label_signature(tokens, labels, position, n_tokens, n_labels), nan=1.0 / n_labels)


def transposed(tokens, labels, position, n_tokens, n_labels):
    return label_signature(tokens, labels, position, n_tokens, n_labels).T


def raw_counts(tokens, labels, position, n_tokens, n_labels):
    psi = label_signature(tokens, labels, position, n_tokens, n_labels)
    counts = torch.bincount(tokens[:, position], minlength=n_tokens).double()
    return psi * counts[:, None]


def as_numpy(tokens, labels, position, n_tokens, n_labels):
    return label_signature(tokens, labels, position, n_tokens, n_labels).numpy()


def wrong_position(tokens, labels, position, n_tokens, n_labels):
    return label_signature(tokens, labels, 0, n_tokens, n_labels)


def wrong_sign(phi_pair, psi_i, psi_j, pi):
    return phi_pair - psi_i.unsqueeze(1) + psi_j.unsqueeze(0) - pi


def forgot_pi(phi_pair, psi_i, psi_j, pi):
    return phi_pair - psi_i.unsqueeze(1) - psi_j.unsqueeze(0)


def centred_with_uniform(n):
    psi = torch.tensor([[1.0 / n if a <= y < a + n else 0.0 for y in range(2 * n - 1)] for a in range(n)],
                       dtype=torch.float64)
    centred = psi - 1.0 / (2 * n - 1)
    return centred @ centred.T


def not_symmetric(n):
    return torch.triu(addition_kernel(n))


def wrong_size(n):
    return addition_kernel(n + 1)


def uncentred_cka(embeddings, kernel):
    g, k = embeddings.double() @ embeddings.double().T, kernel.double()
    return float((g * k).sum() / (g.norm() * k.norm()))


def column_normalised_cka(embeddings, kernel):  # standardises each direction: not rotation invariant
    return linear_cka(embeddings / embeddings.std(0, keepdim=True), kernel)


def cka_as_list(embeddings, kernel):
    return [linear_cka(embeddings, kernel)]


@pytest.mark.parametrize("exercise_id, wrong, hint", [
    ("ex-1.1", uniform_for_unseen, r"NaN in the wrong places.*never occur"),
    ("ex-1.1", transposed, r"expected shape \(6, 3\), got \(3, 6\)"),
    ("ex-1.1", raw_counts, r"rows must sum to 1"),
    ("ex-1.1", as_numpy, r"expected a torch\.Tensor, got ndarray"),
    ("ex-1.1", wrong_position, r"position=1: .*wrong value at index"),
    ("ex-1.2", wrong_sign, r"additive task .*pure part must vanish"),
    ("ex-1.2", forgot_pi, r"wrong value at index"),
    ("ex-1.3", centred_with_uniform, r"centre the signatures with the label marginal pi"),
    ("ex-1.3", not_symmetric, r"must be symmetric"),
    ("ex-1.3", wrong_size, r"expected shape \(3, 3\), got \(4, 4\)"),
    ("ex-1.4", uncentred_cka, r"matches CKA without centring"),
    ("ex-1.4", column_normalised_cka, r"random case|must not change"),
    ("ex-1.4", cka_as_list, r"expected a number"),
], ids=lambda value: getattr(value, "__name__", None))
def test_wrong_answers_fail_with_a_helpful_message(exercise_id, wrong, hint):
    with pytest.raises(ExerciseFailed, match=hint) as failure:
        EXERCISES[exercise_id].check(wrong)
    assert str(failure.value).startswith(exercise_id + ":"), "the message names the exercise"


def test_a_numpy_answer_to_ex_1_3_is_rejected_clearly():
    with pytest.raises(ExerciseFailed, match="torch.Tensor"):
        exercises.check_addition_kernel(lambda n: np.asarray(addition_kernel(n)))


def test_chapter4_checks_accept_right_and_explain_wrong_answers():
    from staircase_lib.metrics import stair_time

    ex = exercises
    assert ex.check_half_rise_time(lambda steps, curve: stair_time(steps, curve)) is True
    with pytest.raises(ex.ExerciseFailed, match="minimum only before the peak"):
        ex.check_half_rise_time(lambda steps, curve: int(steps[int(torch.nonzero(
            curve >= (curve.min() + curve.max()) / 2)[0])]) if curve.max() - curve.min() >= 0.1 else None)
    assert ex.check_surviving_stairs(degree_counting) is True
    with pytest.raises(ex.ExerciseFailed, match=r"quadratic a \+ a\^2/2: expected the orders \(0, 1\)"):
        ex.check_surviving_stairs(lambda sigma: (0,) if float(sigma(torch.tensor(2.0))) == 2.0 else (0, 1, 2))
    with pytest.raises(ex.ExerciseFailed, match=r"gelu: expected the orders \(0, 1, 2\), got \(0, 1\)"):
        ex.check_surviving_stairs(second_and_third_only)
    table = {"identity": (0,), "quadratic": (0, 1)}  # the names of the book's four: a lookup table does not pass
    with pytest.raises(ex.ExerciseFailed, match="not its name"):
        ex.check_surviving_stairs(lambda activation: table[activation])


def degree_counting(sigma):
    """Stairs from the degree of sigma as a polynomial (non-polynomials: every stair), read off finite differences
    on a grid (independent of the library)."""
    values = sigma(torch.linspace(-1, 1, 9, dtype=torch.float64))
    degree = max(m for m in range(9) if m == 0 or torch.diff(values, n=m).abs().max() > 1e-8)
    return tuple(k for k in range(3) if degree >= k + 1)


def second_and_third_only(sigma):
    """A wrong rule: the stairs from the second and third derivatives at 0 alone (GELU's third one vanishes)."""
    h = 1e-2
    s = sigma(torch.tensor([-2 * h, -h, 0.0, h, 2 * h], dtype=torch.float64))
    second = float(s[3] - 2 * s[2] + s[1]) / h ** 2
    third = float(s[4] - 2 * s[3] + 2 * s[1] - s[0]) / (2 * h ** 3)
    return (0,) + ((1,) if abs(second) > 1e-3 or abs(third) > 1e-3 else ()) + ((2,) if abs(third) > 1e-3 else ())


def test_chapter5_checks_accept_right_and_explain_wrong_answers():
    ex = exercises

    def epsilon_slope(gammas, deviations, d_embed):
        x = np.log(float(d_embed)) * (0.5 - np.asarray(gammas, dtype=float))
        return float(np.polyfit(x, np.log(np.asarray(deviations, dtype=float)), 1)[0])

    def normalized_entropy(attention):
        a = attention.double()
        h = -(a * torch.where(a > 0, a.log(), torch.zeros_like(a))).sum(-1)
        return h / np.log(a.shape[-1])

    assert ex.check_epsilon_slope(epsilon_slope) is True
    with pytest.raises(ex.ExerciseFailed, match="log-log|log\\(deviation\\)"):
        ex.check_epsilon_slope(lambda g, dev, d: -epsilon_slope(g, dev, d))
    assert ex.check_normalized_entropy(normalized_entropy) is True
    with pytest.raises(ex.ExerciseFailed, match="one-hot rows"):
        ex.check_normalized_entropy(lambda a: -(a * a.clamp_min(1e-300).log()).sum(-1) * 0 + 1)
    assert ex.check_focus_position(lambda task: 1 if task.reverse else 0) is True
    with pytest.raises(ex.ExerciseFailed, match="saturation trap"):
        ex.check_focus_position(lambda task: 1)


def test_chapter6_checks_accept_right_and_explain_wrong_answers():
    from staircase_lib.signatures import spectral_embedding

    ex = exercises
    assert ex.check_signature_embedding(lambda kernel, d_embed, norm: spectral_embedding(kernel, d_embed, norm)) is True
    with pytest.raises(ex.ExerciseFailed, match="ascending order"):
        ex.check_signature_embedding(lambda kernel, d_embed, norm: (lambda w, U: U[:, :d_embed] * w[:d_embed].clamp_min(0).sqrt()
                                                                    * norm / (U[:, :d_embed] * w[:d_embed].clamp_min(0).sqrt()).norm())(*torch.linalg.eigh(kernel)))
    with pytest.raises(ex.ExerciseFailed, match="rescale"):
        ex.check_signature_embedding(lambda kernel, d_embed, norm: spectral_embedding(kernel, d_embed))
    with pytest.raises(ex.ExerciseFailed, match="square root of its eigenvalue"):
        ex.check_signature_embedding(lambda kernel, d_embed, norm: torch.nn.functional.pad(
            torch.linalg.eigh(kernel)[1].flip(1)[:, :3], (0, d_embed - 3)) * norm / 3**0.5)
    assert ex.check_top_singular_values(lambda signature, reference, k: torch.linalg.svdvals(signature - reference)[:k]) is True
    with pytest.raises(ex.ExerciseFailed, match="subtract the reference"):
        ex.check_top_singular_values(lambda signature, reference, k: torch.linalg.svdvals(signature)[:k])
    with pytest.raises(ex.ExerciseFailed, match="largest singular value first"):
        ex.check_top_singular_values(lambda signature, reference, k: torch.linalg.svdvals(signature - reference)[:k].flip(0))
    with pytest.raises(ex.ExerciseFailed, match="square roots"):
        ex.check_top_singular_values(lambda signature, reference, k: torch.linalg.svdvals(signature - reference)[:k] ** 2)
    assert ex.check_first_mapping(lambda gamma: "reasoning" if gamma >= 0.5 else "together") is True
    with pytest.raises(ex.ExerciseFailed, match="gamma=0.25: got 'memorization'"):
        ex.check_first_mapping(lambda gamma: "reasoning" if gamma >= 0.5 else "memorization")
    with pytest.raises(ex.ExerciseFailed, match="answer 'reasoning', 'memorization' or 'together'"):
        ex.check_first_mapping(lambda gamma: "rule")


def test_chapter7_checks_accept_right_and_explain_wrong_answers():
    from staircase_lib.metrics import angular_coverage, gram_correlation

    ex = exercises
    assert ex.check_circulant_eigenvalues(lambda row: torch.fft.fft(row).real.sort(descending=True).values) is True
    with pytest.raises(ex.ExerciseFailed, match="largest first"):
        ex.check_circulant_eigenvalues(lambda row: torch.fft.fft(row).real.sort().values)
    with pytest.raises(ex.ExerciseFailed, match="take .real"):
        ex.check_circulant_eigenvalues(lambda row: torch.fft.fft(row))
    assert ex.check_similarity_rank_correlation(
        lambda e, k: gram_correlation(e, k, method="spearman", cosine=True)) is True
    with pytest.raises(ex.ExerciseFailed, match="use cosines"):
        ex.check_similarity_rank_correlation(lambda e, k: gram_correlation(e, k, method="spearman"))
    assert ex.check_angle_coverage(angular_coverage) is True

    def from_origin(points):  # forgets to centre the points
        angles = torch.sort(torch.atan2(points[:, 1], points[:, 0])).values
        return float(2 * torch.pi - torch.diff(angles, append=angles[:1] + 2 * torch.pi).max())

    with pytest.raises(ex.ExerciseFailed, match="centroid"):
        ex.check_angle_coverage(from_origin)


def test_chapter8_checks_accept_right_and_explain_wrong_answers():
    ex = exercises

    def skipgram_counts(stream, vocab_size, lag):
        counts = torch.bincount(stream[:-lag] * vocab_size + stream[lag:], minlength=vocab_size**2)
        counts = counts.double().view(vocab_size, vocab_size)
        return counts / counts.sum(1, keepdim=True)

    def neighbour_agreement(embeddings, labels):
        unit = torch.nn.functional.normalize(embeddings, dim=1)
        cos = unit @ unit.T - 2 * torch.eye(len(labels), dtype=unit.dtype)
        return float((labels[cos.argmax(1)] == labels).double().mean())

    def tied_drive(bigram, unigram):
        drive = unigram[:, None] * (bigram - unigram[None, :])
        return drive + drive.T

    assert ex.check_skipgram_counts(skipgram_counts) is True
    with pytest.raises(ex.ExerciseFailed, match="NaN"):
        ex.check_skipgram_counts(lambda s, v, k: torch.nan_to_num(skipgram_counts(s, v, k)))
    assert ex.check_neighbour_agreement(neighbour_agreement) is True
    with pytest.raises(ex.ExerciseFailed, match="its own neighbours"):
        ex.check_neighbour_agreement(lambda e, lab: 1.0)
    assert ex.check_tied_drive(tied_drive) is True
    with pytest.raises(ex.ExerciseFailed, match="add the transpose"):
        ex.check_tied_drive(lambda b, q: q[:, None] * (b - q[None, :]))


def test_a_failed_check_can_print_its_verdict_instead_of_stopping_run_all(capsys):
    """The student edition calls the checks with raise_on_failure=False: Colab's Run all goes on past a wrong
    answer, and the verdict is printed (the grader runs the checks itself)."""
    assert exercises.check_plateau_loss(lambda strength, attribute_size: 0.0, raise_on_failure=False) is False
    printed = capsys.readouterr().out
    assert printed.startswith("ex-4.3 (The loss of the first plateau): NOT PASSED. strength=0.15")
    with pytest.raises(ExerciseFailed):
        exercises.check_plateau_loss(lambda strength, attribute_size: 0.0)
    with pytest.raises(TypeError, match="raise_on_failure must be a bool, got str"):
        exercises.check_plateau_loss(lambda strength, attribute_size: 0.0, raise_on_failure="no")
