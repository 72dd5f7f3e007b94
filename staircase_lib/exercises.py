"""Auto-checks for the exercises: run the learner's function on small cases, compare with a private
reference, and give a targeted hint. The reference solutions are never exported."""
from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass
from typing import Callable

import torch

__all__ = ["Exercise", "EXERCISES", "ExerciseFailed", "check_label_signature", "check_pair_residual",
           "check_predicted_velocity", "check_relative_gap", "check_readout_velocity", "check_half_rise_time",
           "check_surviving_stairs", "check_plateau_loss",
           "check_mode_strength", "check_half_time", "check_learning_order",
           "check_addition_kernel", "check_epsilon_slope", "check_normalized_entropy", "check_focus_position",
           "check_skipgram_counts", "check_neighbour_agreement", "check_tied_drive"]


class ExerciseFailed(AssertionError):
    """A check found a wrong answer; the message says what to look at."""


@dataclass(frozen=True)
class Exercise:
    """A registered exercise: stable id (``ex-C.N``), title, difficulty 1-3, minutes, its check, and the name
    of the function the learner writes. Ids are assigned by hand and never derived from content."""

    id: str
    title: str
    difficulty: int
    minutes: int
    check: Callable[[Callable], bool]
    function: str

    @property
    def chapter(self) -> int:
        """The chapter number: 3 for ``ex-3.2``."""
        return int(self.id.removeprefix("ex-").split(".")[0])

    @property
    def signature(self) -> str:
        """The call the check makes, from its docstring: ``relative_gap(embeddings [T, V, d], v, w) -> Tensor[T]``."""
        match = re.search(r"``(%s\(.*?)``" % re.escape(self.function), self.check.__doc__ or "")
        return match.group(1) if match else f"{self.function}(...)"

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameter names the check passes positionally, e.g. ``("embeddings", "v", "w")``."""
        inside = re.sub(r"\[[^\]]*\]", "", self.signature.split("(", 1)[1].split(")", 1)[0])
        return tuple(part.split()[0] for part in inside.split(",") if part.strip())


EXERCISES: dict[str, Exercise] = {}
"""All exercises of the course by id."""


def _exercise(exercise_id: str, title: str, function: str, difficulty: int, minutes: int):
    def register(check: Callable[[Callable], None]) -> Callable[[Callable], bool]:
        def run(learner: Callable) -> bool:
            if not callable(learner):
                raise TypeError(f"{exercise_id}: pass your function itself, got {type(learner).__name__}")
            _check_signature(EXERCISES[exercise_id], learner)
            try:
                check(learner)
            except NotImplementedError:
                print(f"{exercise_id} ({title}): not attempted yet - replace the NotImplementedError with your code.")
                return False
            print(f"{exercise_id} ({title}): passed.")
            return True

        run.__name__, run.__doc__ = check.__name__, check.__doc__
        run.__signature__ = inspect.signature(check)
        EXERCISES[exercise_id] = Exercise(exercise_id, title, difficulty, minutes, run, function)
        return run

    return register


def _check_signature(exercise: Exercise, learner: Callable) -> None:
    """Fail with a clear message when ``learner`` cannot be called the way the check calls it."""
    try:
        signature = inspect.signature(learner)
    except (TypeError, ValueError):  # some builtins have no signature: let the check find out
        return
    try:
        signature.bind(*exercise.parameters)
    except TypeError:
        name = getattr(learner, "__name__", exercise.function)
        _fail(exercise.id, f"wrong signature: your function is {name}{signature}, but the check calls it as "
                           f"{exercise.function}({', '.join(exercise.parameters)}) - keep the parameters of the stub")


def _fail(exercise_id: str, message: str) -> None:
    raise ExerciseFailed(f"{exercise_id}: {message}")


def _compare(exercise_id: str, got, expected: torch.Tensor, what: str, atol: float = 1e-5) -> None:
    if not isinstance(got, torch.Tensor):
        _fail(exercise_id, f"{what}: expected a torch.Tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(expected.shape):
        _fail(exercise_id, f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}")
    got = got.detach().double()
    expected = expected.double()
    if not torch.equal(torch.isnan(got), torch.isnan(expected)):
        _fail(exercise_id, f"{what}: NaN in the wrong places - rows of tokens that never occur must be NaN "
                           "(and only those)")
    ok = torch.isnan(expected) | torch.isclose(got, expected, atol=atol, rtol=1e-4)
    if not ok.all():
        index = tuple(int(i) for i in torch.nonzero(~ok)[0])
        _fail(exercise_id, f"{what}: wrong value at index {index} (off by {float((got - expected)[index]):.3g})")


# ----- chapter 1 ------------------------------------------------------------------------------------
def _ref_label_signature(tokens, labels, position, n_tokens, n_labels):
    counts = torch.zeros(n_tokens, n_labels, dtype=torch.float64)
    counts.index_put_((tokens[:, position], labels), torch.ones(len(labels), dtype=torch.float64), accumulate=True)
    totals = counts.sum(1, keepdim=True)
    return torch.where(totals > 0, counts / totals.clamp_min(1), torch.full_like(counts, float("nan")))


@_exercise("ex-1.1", "Count an order-0 signature", function="label_signature", difficulty=1, minutes=15)
def check_label_signature(label_signature: Callable) -> None:
    """Check ``label_signature(tokens, labels, position, n_tokens, n_labels) -> Tensor[V, C]``."""
    gen = torch.Generator().manual_seed(11)
    cases = [(6, 3, 2, 40), (10, 4, 3, 500), (5, 2, 1, 7)]
    for n_tokens, n_labels, seq_len, n in cases:
        tokens = torch.randint(n_tokens - 1, (n, seq_len), generator=gen)  # the last token never occurs
        labels = torch.randint(n_labels, (n,), generator=gen)
        for position in range(seq_len):
            got = label_signature(tokens, labels, position, n_tokens, n_labels)
            expected = _ref_label_signature(tokens, labels, position, n_tokens, n_labels)
            what = f"case V={n_tokens}, C={n_labels}, N={n}, position={position}"
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                seen = ~torch.isnan(expected[:, 0])
                sums = got.double()[seen].sum(1)
                if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
                    _fail("ex-1.1", f"{what}: rows must sum to 1 (they are distributions over labels); "
                                    f"row sums are {sums[:4].tolist()}...")
            _compare("ex-1.1", got, expected, what)


def _ref_pair_residual(phi_pair, psi_i, psi_j, pi):
    return phi_pair - psi_i[:, None, :] - psi_j[None, :, :] + pi[None, None, :]


@_exercise("ex-1.2", "The pure order-1 part", function="pair_residual", difficulty=2, minutes=20)
def check_pair_residual(pair_residual: Callable) -> None:
    """Check ``pair_residual(phi_pair [V, V, C], psi_i [V, C], psi_j [V, C], pi [C]) -> Tensor[V, V, C]``."""
    gen = torch.Generator().manual_seed(12)
    n_tokens, n_labels = 5, 3
    # an additive-in-probability task has no pure pair part
    base = torch.softmax(torch.randn(n_labels, generator=gen), 0)
    a = 0.2 * (torch.softmax(torch.randn(n_tokens, n_labels, generator=gen), 1) - base)
    b = 0.2 * (torch.softmax(torch.randn(n_tokens, n_labels, generator=gen), 1) - base)
    phi = base + a[:, None, :] + b[None, :, :]
    got = pair_residual(phi, base + a, base + b, base)
    _compare("ex-1.2", got, torch.zeros(n_tokens, n_tokens, n_labels),
             "additive task P(y|v,w) = pi + a_v + b_w (the pure part must vanish)")
    # the worked example of the three-attribute task
    from .tasks import StaircaseTask
    task = StaircaseTask(strengths=(0.2, 0.3, 0.4), attribute_size=2)
    phi = task.conditional_label_distribution([0, 1])
    got = pair_residual(phi, task.label_signature(0), task.label_signature(1), task.label_marginal())
    h = task.attribute(1)
    expected = 0.3 * (torch.nn.functional.one_hot((h[:, None] + h[None, :]) % 2, 2).double() - 0.5)
    _compare("ex-1.2", got, expected, "three-attribute task, positions (0, 1): expected lambda_1 (delta - u)")
    # a generic case
    phi = torch.softmax(torch.randn(n_tokens, n_tokens, n_labels, generator=gen), -1)
    psi_i, psi_j = phi.mean(1), phi.mean(0)
    _compare("ex-1.2", pair_residual(phi, psi_i, psi_j, psi_i.mean(0)),
             _ref_pair_residual(phi, psi_i, psi_j, psi_i.mean(0)), "random joint table (check the signs of the four terms)")


def _ref_addition_kernel(n):
    psi = torch.zeros(n, 2 * n - 1, dtype=torch.float64)
    for a in range(n):
        psi[a, a:a + n] = 1.0 / n
    centred = psi - psi.mean(0)
    return centred @ centred.T


@_exercise("ex-1.3", "The order-0 kernel of addition", function="addition_kernel", difficulty=2, minutes=20)
def check_addition_kernel(addition_kernel: Callable) -> None:
    """Check ``addition_kernel(n) -> Tensor[n, n]``: K^(0) of the first operand for y = a + b, a, b uniform."""
    for n in (3, 5, 8):
        got = addition_kernel(n)
        expected = _ref_addition_kernel(n)
        if isinstance(got, torch.Tensor) and got.shape == (n, n) and not torch.allclose(got.double(), got.double().T):
            _fail("ex-1.3", f"n={n}: a kernel must be symmetric")
        if isinstance(got, torch.Tensor) and got.shape == (n, n) and not torch.allclose(
                got.double().sum(0), torch.zeros(n, dtype=torch.float64), atol=1e-6):
            _fail("ex-1.3", f"n={n}: every column of K should sum to 0 - did you centre the signatures with "
                            "the label marginal pi?")
        _compare("ex-1.3", got, expected, f"n={n}", atol=1e-6)


# ----- chapter 3 ------------------------------------------------------------------------------------
def _ref_velocity(drives, readout, blocks, slope):
    return slope * torch.einsum("lvc,cm,lmd->vd", drives.double(), readout.double(), blocks.double())


def _random_factors(gen, n_pos=3, n_tokens=6, n_labels=4, d_hidden=5, d_embed=3):
    drives = torch.randn(n_pos, n_tokens, n_labels, generator=gen)
    return (drives - drives.mean(-1, keepdim=True), torch.randn(n_labels, d_hidden, generator=gen),
            torch.randn(n_pos, d_hidden, d_embed, generator=gen))


@_exercise("ex-3.1", "The leading-order embedding velocity", function="predicted_velocity", difficulty=2, minutes=25)
def check_predicted_velocity(predicted_velocity: Callable) -> None:
    """Check ``predicted_velocity(drives [L, V, C], readout [C, m], blocks [L, m, d], slope) -> Tensor[V, d]``."""
    gen = torch.Generator().manual_seed(31)
    for shape in ((3, 6, 4, 5, 3), (2, 4, 3, 7, 2)):
        drives, readout, blocks = _random_factors(gen, *shape)
        got = predicted_velocity(drives, readout, blocks, 0.5)
        _compare("ex-3.1", got, _ref_velocity(drives, readout, blocks, 0.5),
                 f"random factors with L, V, C, m, d = {shape} (sum over positions i of S^(i) W_2 W_1^(i))", atol=1e-4)
    # against autograd on a small-init model
    from .models import EmbMLP
    from .tasks import StaircaseTask
    from .theory import autograd_embedding_velocity, exact_signature_drives

    task = StaircaseTask(strengths=(0.3, 0.3, 0.3), attribute_size=2)
    model = EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d_embed=8, d_hidden=16, gamma=1.0, seed=3)
    got = predicted_velocity(exact_signature_drives(task), model.readout.weight.detach(),
                             model.first_layer_blocks().detach(), 0.5)
    measured = autograd_embedding_velocity(model, task).double()
    cosine = float(torch.nn.functional.cosine_similarity(torch.as_tensor(got).double().flatten(), measured.flatten(), 0))
    if cosine < 0.999:
        _fail("ex-3.1", f"cosine with the autograd velocity of a small-init GELU model is {cosine:.4f}, expected > 0.999 "
                        "- check the factor sigma'(0) and which block W_1^(i) multiplies which S^(i)")


@_exercise("ex-3.2", "Signature twins move together", function="relative_gap", difficulty=1, minutes=15)
def check_relative_gap(relative_gap: Callable) -> None:
    """Check ``relative_gap(embeddings [T, V, d], v, w) -> Tensor[T]`` = ||e_v - e_w|| / ||e_v|| per snapshot."""
    gen = torch.Generator().manual_seed(32)
    embeddings = torch.randn(5, 7, 3, generator=gen)
    for v, w in ((0, 1), (3, 6), (2, 2)):
        expected = (embeddings[:, v] - embeddings[:, w]).norm(dim=-1) / embeddings[:, v].norm(dim=-1)
        _compare("ex-3.2", relative_gap(embeddings, v, w), expected.double(), f"tokens v={v}, w={w}")


def _ref_readout_velocity(drives, embedding, blocks, slope):
    return slope * torch.einsum("lvc,vd,lmd->cm", drives.double(), embedding.double(), blocks.double())


@_exercise("ex-3.3", "The readout's velocity", function="readout_velocity", difficulty=3, minutes=30)
def check_readout_velocity(readout_velocity: Callable) -> None:
    """Check ``readout_velocity(drives [L, V, C], embedding [V, d], blocks [L, m, d], slope) -> Tensor[C, m]``."""
    gen = torch.Generator().manual_seed(33)
    drives, _, blocks = _random_factors(gen)
    embedding = torch.randn(drives.shape[1], blocks.shape[2], generator=gen)
    _compare("ex-3.3", readout_velocity(drives, embedding, blocks, 0.5),
             _ref_readout_velocity(drives, embedding, blocks, 0.5), "random factors (dW_2/dt = sigma'(0) sum_i S^(i)T E W_1^(i)T)",
             atol=1e-4)


# ----- chapter 2 ------------------------------------------------------------------------------------
@_exercise("ex-2.1", "The closed-form mode strength", function="mode_strength", difficulty=1, minutes=15)
def check_mode_strength(mode_strength: Callable) -> None:
    """Check ``mode_strength(s, u0, t) -> Tensor``: the solution of du/dt = 2u(s - u), u(0) = u0 (broadcasting)."""
    from .theory import mode_trajectory

    s = torch.tensor([[3.0], [2.0], [1.0], [0.5]], dtype=torch.float64)
    times = torch.linspace(0, 8, 41, dtype=torch.float64)
    for u0 in (1e-3, 0.2):
        got = mode_strength(s, u0, times[None, :])
        expected = mode_trajectory(s.flatten(), u0, times)  # RK4 integration of the ODE
        what = f"s = (3, 2, 1, 0.5) as a [4, 1] tensor, u0 = {u0}, t = 41 times in [0, 8] as a [1, 41] tensor"
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.isfinite(got).all():
            if not torch.allclose(got.double()[:, 0], torch.full((4,), u0, dtype=torch.float64), rtol=1e-6):
                _fail("ex-2.1", f"{what}: u(0) must equal u0, got {got[:, 0].tolist()}")
            if torch.allclose(got.double(), mode_trajectory(s.flatten(), u0, 2 * times), atol=1e-4):
                _fail("ex-2.1", f"{what}: your curves rise twice too fast - the growth rate is 2s, so at time t the "
                                "exponent is 2st (did you use t where the formula has t/2?)")
        _compare("ex-2.1", got, expected, what, atol=1e-4)
    late = torch.tensor([0.0, 10.0, 100.0, 1000.0], dtype=torch.float64)
    got = mode_strength(3.0, 1e-3, late)
    if isinstance(got, torch.Tensor) and not torch.isfinite(got).all():
        _fail("ex-2.1", f"s = 3, u0 = 1e-3 at t = {late.tolist()} gives {got.tolist()}: e^(2st) overflows for large st. "
                        "Divide numerator and denominator by e^(2st) so that only e^(-2st) appears")
    _compare("ex-2.1", got, torch.tensor([1e-3, 3.0, 3.0, 3.0], dtype=torch.float64),
             f"s = 3, u0 = 1e-3 at t = {late.tolist()} (the mode must saturate at s)", atol=1e-4)


@_exercise("ex-2.2", "Predict the half-rise time", function="half_time", difficulty=1, minutes=10)
def check_half_time(half_time: Callable) -> None:
    """Check ``half_time(s, u0) -> float``: the time at which the two-factor mode reaches s/2 (5% tolerance)."""
    from .theory import mode_trajectory

    for s, u0 in ((3.0, 1e-3), (1.0, 1e-6), (2.0, 0.5), (0.5, 0.1), (1.5, 1e-2)):
        got = half_time(s, u0)
        try:
            got = float(got)
        except (TypeError, ValueError):
            _fail("ex-2.2", f"s={s}, u0={u0}: expected a number, got {type(got).__name__}")
        expected = math.log(s / u0 - 1) / (2 * s)
        if abs(got - expected) <= 0.05 * abs(expected):
            continue
        reached = float(mode_trajectory(s, u0, [got]).flatten()[0]) / s if got > 0 else u0 / s
        hint = f"at your time the mode is at {reached:.1%} of s, not 50%"
        if abs(got - math.log(s / u0) / (2 * s)) < 1e-3 * abs(expected):
            hint = "log(s/u0)/(2s) is only the small-u0 approximation - solve u(t) = s/2 exactly (keep the -1)"
        elif abs(got - 2 * expected) < 1e-3 * abs(expected) or abs(got - expected / 2) < 1e-3 * abs(expected):
            hint += " - your answer is off by a factor of 2; the growth rate of u is 2s"
        _fail("ex-2.2", f"s={s}, u0={u0}: expected t_half = {expected:.4f}, got {got:.4f} ({hint})")


@_exercise("ex-2.3", "Strong modes first", function="learning_order", difficulty=2, minutes=20)
def check_learning_order(learning_order: Callable) -> None:
    """Check ``learning_order(singular_values, u0) -> list[int]``: mode indices in the order they reach s/2."""
    cases = [((3.0, 2.0, 1.0), 1e-3), ((1.0, 3.0, 2.0), 1e-3), ((0.8, 2.5, 1.6, 3.2), 1e-4)]
    for values, u0 in cases:
        got = learning_order(values, u0)
        try:
            got = [int(i) for i in (got.tolist() if isinstance(got, torch.Tensor) else got)]
        except (TypeError, ValueError):
            _fail("ex-2.3", f"singular values {values}: expected a list of mode indices, got {got!r}")
        expected = sorted(range(len(values)), key=lambda k: -values[k])
        if sorted(got) != list(range(len(values))):
            _fail("ex-2.3", f"singular values {values}: expected each index 0..{len(values) - 1} once, got {got} "
                            "(return indices of modes, not their singular values or times)")
        if got == expected[::-1]:
            _fail("ex-2.3", f"singular values {values}: got {got}, the reverse of the right order - the first mode "
                            "to reach half strength should come first")
        if got != expected:
            _fail("ex-2.3", f"singular values {values}, u0={u0}: expected the order {expected}, got {got} - did every "
                            "mode reach half strength within your simulated time?")


# ----- chapter 4 ------------------------------------------------------------------------------------
@_exercise("ex-4.1", "Detect a stair", function="half_rise_time", difficulty=1, minutes=15)
def check_half_rise_time(half_rise_time: Callable) -> None:
    """Check ``half_rise_time(steps LongTensor[T], curve Tensor[T]) -> int | None`` on synthetic curves."""
    steps = torch.arange(0, 10_001, 50)
    for centre, width, low, high in ((2000, 200.0, 0.1, 0.9), (6500, 500.0, 0.3, 0.7), (300, 50.0, 0.0, 0.5)):
        curve = low + (high - low) * torch.sigmoid((steps.double() - centre) / width)
        got = half_rise_time(steps, curve)
        if got is None or abs(int(got) - centre) > 50:
            _fail("ex-4.1", f"a sigmoid from {low} to {high} centred at step {centre} should give about {centre}, got {got}"
                            " - the threshold is halfway between the minimum before the peak and the peak")
    peak = torch.exp(-((steps.double() - 3000) / 400) ** 2)
    bump = torch.where(steps < 3000, 0.3 + 0.5 * peak, 0.8 * peak)  # rises from 0.3 to 0.8, then falls to 0
    got = half_rise_time(steps, bump)
    if got is None or not 2600 <= int(got) <= 2800:
        _fail("ex-4.1", f"a curve that rises from 0.3 to 0.8 (peak at 3000) and then falls to 0 should give its rise time "
                        f"near 2670, got {got} - look for the minimum only before the peak")
    flat = 0.3 + 0.01 * torch.sin(steps.double())
    got = half_rise_time(steps, flat)
    if got is not None:
        _fail("ex-4.1", f"a curve that never rises by 0.1 has no stair (return None), got {got}")


@_exercise("ex-4.2", "Which stairs survive?", function="surviving_stairs", difficulty=2, minutes=15)
def check_surviving_stairs(surviving_stairs: Callable) -> None:
    """Check ``surviving_stairs(activation) -> tuple of orders`` against degree counting."""
    expected = {"identity": (0,), "gelu": (0, 1, 2), "tanh": (0, 1, 2), "quadratic": (0, 1)}
    hints = {"identity": "a linear activation has no derivative beyond the first: no interaction term exists",
             "tanh": "tanh has sigma''(0) = 0, but sigma'''(0) = -2 couples pairs and triples together",
             "quadratic": "a + a^2/2 makes the logits a degree-2 polynomial of the tokens: pairs, but never a pure triple",
             "gelu": "sigma''(0) is not zero"}
    for activation, answer in expected.items():
        got = surviving_stairs(activation)
        if tuple(sorted(got or ())) != answer:
            _fail("ex-4.2", f"{activation}: got {got}. Hint: {hints[activation]}")


def _ref_plateau_loss(strength, attribute_size):
    p_true = strength + (1 - strength) / attribute_size
    p_other = (1 - strength) / attribute_size
    return -(p_true * math.log(p_true) + (attribute_size - 1) * p_other * math.log(p_other)) if p_other > 0 else 0.0


@_exercise("ex-4.3", "The loss of the first plateau", function="plateau_loss", difficulty=2, minutes=20)
def check_plateau_loss(plateau_loss: Callable) -> None:
    """Check ``plateau_loss(strength, attribute_size) -> float``: cross-entropy of the order-0 model."""
    for strength, size in ((0.15, 4), (0.4, 4), (0.3, 8), (0.0, 4)):
        got = plateau_loss(strength, size)
        expected = _ref_plateau_loss(strength, size)
        if not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            _fail("ex-4.3", f"return one number (the loss in nats), got {type(got).__name__}")
        if abs(float(got) - expected) > 1e-6:
            hint = ("with strength 0 the order-0 model predicts the uniform distribution: log(a) nats"
                    if strength == 0 else "the model predicts P(y | x_0) = lambda_0 delta_g + (1 - lambda_0) u; "
                    "its cross-entropy with the true labels is the entropy of that distribution (natural log)")
            _fail("ex-4.3", f"strength={strength}, attribute_size={size}: got {float(got):.5f}. Hint: {hint}")

# ----- chapter 5 ------------------------------------------------------------------------------------
@_exercise("ex-5.1", "The epsilon^4 law", function="epsilon_slope", difficulty=1, minutes=15)
def check_epsilon_slope(epsilon_slope: Callable) -> None:
    """Check ``epsilon_slope(gammas, deviations, d_embed) -> float``: the log-log slope of the deviation
    from uniform attention against ``eps = d_embed ** (1/2 - gamma)``."""
    gammas = torch.tensor([0.75, 1.0, 1.25, 1.5], dtype=torch.float64)
    for d, power, scale in ((32, 4.0, 0.3), (16, 3.0, 2.0), (64, 4.0, 1e-2)):
        eps = d ** (0.5 - gammas)
        got = epsilon_slope(gammas, scale * eps**power, d)
        if not isinstance(got, (int, float)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            _fail("ex-5.1", f"return one number (the slope), got {type(got).__name__}")
        if abs(float(got) - power) > 1e-6:
            _fail("ex-5.1", f"deviations = {scale} * eps**{power} with d_embed={d} should give slope {power}, got "
                            f"{float(got):.4f}. Hint: fit log(deviation) against log(eps), eps = d**(1/2 - gamma), "
                            "by least squares (the slope is positive: deviations shrink as eps shrinks)")


@_exercise("ex-5.2", "Normalized attention entropy", function="normalized_entropy", difficulty=1, minutes=15)
def check_normalized_entropy(normalized_entropy: Callable) -> None:
    """Check ``normalized_entropy(attention Tensor[..., L, L]) -> Tensor[..., L]`` on known distributions."""
    from .metrics import attention_entropy

    random_rows = torch.rand(2, 5, 5, generator=torch.Generator().manual_seed(5))
    cases = {"uniform rows": torch.full((4, 4), 0.25), "one-hot rows (0 log 0 = 0)": torch.eye(3),
             "random rows": random_rows / random_rows.sum(-1, keepdim=True),
             "rows with zeros": torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8], [1 / 3, 1 / 3, 1 / 3]])}
    for what, attention in cases.items():
        _compare("ex-5.2", normalized_entropy(attention), attention_entropy(attention), what, atol=1e-5)


@_exercise("ex-5.3", "Where will attention look?", function="focus_position", difficulty=2, minutes=20)
def check_focus_position(focus_position: Callable) -> None:
    """Check ``focus_position(task) -> int``: the position a last-position readout attends to after training
    on a three-attribute task (forward or reversed) with an order-0 rule."""
    from .tasks import StaircaseTask

    for strengths in ((0.15, 0.45, 0.35), (0.3, 0.3, 0.3)):
        for reverse, answer, hint in (
                (True, 1, "the readout token x_2 carries the order-0 rule itself; the pair rule needs x_1, so the "
                          "attention drive (eq. 4.4) grows for the pair partner"),
                (False, 0, "the order-0 token sits at a context position: the only way its signal reaches the readout "
                           "is through attention, so the order-0 stair pulls attention onto it (the saturation trap)")):
            got = focus_position(StaircaseTask(strengths=strengths, reverse=reverse))
            if got != answer:
                _fail("ex-5.3", f"StaircaseTask(strengths={strengths}, reverse={reverse}): got {got!r}. Hint: {hint}")


# ----- chapter 8 ------------------------------------------------------------------------------------
@_exercise("ex-8.1", "Skip-gram signatures by counting", function="skipgram_counts", difficulty=1, minutes=15)
def check_skipgram_counts(skipgram_counts: Callable) -> None:
    """Check ``skipgram_counts(stream LongTensor[T], vocab_size, lag) -> Tensor[V, V]``: the counted lag-k signature
    ``P(s_{t+lag} = w | s_t = v)``, with NaN rows for tokens that never start a pair."""
    gen = torch.Generator().manual_seed(8)
    for length, vocab, lag in ((200, 5, 1), (500, 7, 2), (300, 6, 3)):
        stream = torch.randint(vocab - 1, (length,), generator=gen)  # the last token id never occurs
        counts = torch.zeros(vocab, vocab, dtype=torch.float64)
        counts.index_put_((stream[:-lag], stream[lag:]), torch.ones(length - lag, dtype=torch.float64), accumulate=True)
        expected = counts / counts.sum(1, keepdim=True)
        _compare("ex-8.1", skipgram_counts(stream, vocab, lag), expected,
                 f"stream of {length} tokens, V={vocab}, lag={lag} (pairs (s_t, s_(t+lag)), rows normalized)")


@_exercise("ex-8.2", "Neighbours in the same slot, and in the same class", function="neighbour_agreement",
           difficulty=2, minutes=20)
def check_neighbour_agreement(neighbour_agreement: Callable) -> None:
    """Check ``neighbour_agreement(embeddings Tensor[n, d], labels LongTensor[n]) -> float``: the fraction of
    words whose nearest other word (largest cosine) has the same label."""
    gen = torch.Generator().manual_seed(9)
    for n, d in ((12, 4), (24, 8)):
        emb = torch.randn(n, d, generator=gen, dtype=torch.float64)
        labels = torch.randint(3, (n,), generator=gen)
        unit = emb / emb.norm(dim=1, keepdim=True)
        cos = unit @ unit.T
        cos.fill_diagonal_(-math.inf)
        expected = float((labels[cos.argmax(1)] == labels).double().mean())
        got = neighbour_agreement(emb, labels)
        if not isinstance(got, (int, float, torch.Tensor)) or abs(float(got) - expected) > 1e-9:
            hint = ("exclude each word from its own neighbours (its cosine with itself is 1)"
                    if abs(float(got) - 1.0) < 1e-9 else "use cosine similarity, not the raw dot product")
            _fail("ex-8.2", f"n={n}, d={d}: expected {expected:.4f}, got {got!r}. Hint: {hint}")


@_exercise("ex-8.3", "The tied-embedding drive", function="tied_drive", difficulty=2, minutes=20)
def check_tied_drive(tied_drive: Callable) -> None:
    """Check ``tied_drive(bigram Tensor[V, V], unigram Tensor[V]) -> Tensor[V, V]``: ``B~ + B~^T`` with
    ``B~_vw = q_v (P(w | v) - q_w)`` (eq. 4.5 with ``U = E``)."""
    gen = torch.Generator().manual_seed(10)
    for vocab in (4, 9):
        bigram = torch.rand(vocab, vocab, generator=gen, dtype=torch.float64)
        bigram /= bigram.sum(1, keepdim=True)
        q = torch.rand(vocab, generator=gen, dtype=torch.float64)
        q /= q.sum()
        drive = q[:, None] * (bigram - q[None, :])
        got = tied_drive(bigram, q)
        if isinstance(got, torch.Tensor) and got.shape == (vocab, vocab) and torch.allclose(
                got.double(), drive.double(), atol=1e-9):
            _fail("ex-8.3", "that is B~ alone; with tied embeddings E is both the input and the output embedding, "
                            "so both sides of the bigram act: add the transpose")
        _compare("ex-8.3", got, drive + drive.T, f"V={vocab}", atol=1e-9)
