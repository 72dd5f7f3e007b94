"""The long runs behind the shipped results, as functions: each recorder trains its chapter's runs and returns
the result (a dict of rounded lists) that ``results.save`` writes and ``results.recorded`` reads.

The scripts in ``scripts/`` are their command lines. :func:`obtain` is what a chapter calls: the shipped result,
or, with ``STAIRCASE_FULL=1`` (off by default, also on a GPU; see ``runtime.full_runs``), the same runs trained live
with the settings the result recorded (same seeds, so the chapter's claims check them the same way).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

from .. import results, runtime
from . import ch3, ch4, ch5, ch6, ch8, ch9

__all__ = ["ch3", "ch4", "ch5", "ch6", "ch8", "ch9", "obtain", "rerun"]

# every shipped result a chapter or a test loads -> the function that recorded it
RECORDERS: dict[str, Callable[..., dict]] = {
    "ch3_gradient_descent": ch3.gradient_descent_stage0,
    **{name: ch4.sweep for name in ("ch4_init_sweep", "ch4_staircase", "ch4_gd_timing", "ch4_gd_escape",
                                    "ch4_new_seeds", "ch4_gd_escape_new_seeds", "ch4_activations", "ch4_linear",
                                    "ch4_gd_kick", "ch4_gd_kick_new_seeds", "ch4_gd_pair_timing",
                                    "ch4_gd_pair_timing_new_seeds")},
    **{name: ch4.exact_gradient for name in ("ch4_gd_kick_population", "ch4_gd_kick_population_new_seeds")},
    "ch5_attention": ch5.attention,
    "ch5_trap_control": ch5.trap_control,
    "ch5_pair_stair": ch5.pair_stair,
    "ch6_transplant": ch6.transplant,
    "ch6_frozen_gd": ch6.frozen_gd,
    "ch6_frozen_gd_weak_g1": ch6.frozen_gd,
    "ch6_pure_task": ch6.pure_task,
    **{name: ch8.real_text for name in ("ch8_real_text", "ch8_real_text_large_init", "ch8_real_text_tied",
                                        "ch8_real_text_long", "ch8_predictions_g100", "ch8_predictions_g050",
                                        "ch8_predictions_g025", "ch8_predictions_shuffled",
                                        "ch8_predictions_new_seeds", "ch8_predictions_seed4", "ch8_gpt2_word_d64",
                                        "ch8_gpt2_bpe_d64", "ch8_gpt2_word_d128", "ch8_gpt2_bpe_d128",
                                        "ch8_predictions_seed2", "ch8_variant", "ch8_gpt2_word_d64_no_warmup",
                                        "ch8_gpt2_word_d256", "ch8_gpt2_bpe_d256")},
    **{name: ch8.real_text for name in ("ch8_ladder_trigram", "ch8_ladder_bigram", "ch8_real_text_gpt2_gamma",
                                        "ch8_ladder_corpus", "ch8_ladder_trigram_long",
                                        "ch8_ladder_corpus_long")},
    "ch9_seeds": ch9.seeds_and_control,
}

_NOT_SETTINGS = {"keep_embeddings"}  # recorder options that shape the output, not the runs


def _parameters(name: str) -> list[str]:
    """The argument names of the recorder of the shipped result ``name``."""
    if name not in RECORDERS:
        raise ValueError(f"no recorder for a result named {name!r}; the recorded ones are {sorted(RECORDERS)}")
    return list(inspect.signature(RECORDERS[name]).parameters)


def settings_of(name: str) -> dict:
    """The recorder arguments that reproduce the shipped result ``name``: its recorded config, cut to them."""
    parameters = _parameters(name)
    config = results.load(name)["config"]
    return {p: config[p] for p in parameters if p in config and p not in _NOT_SETTINGS}


def rerun(name: str, **overrides) -> dict:
    """Train the runs of the shipped result ``name`` again, with its recorded settings and ``overrides``
    (for example ``steps=200``, or ``device="cpu"``); the new result (a dict, like the file)."""
    parameters = _parameters(name)
    settings = settings_of(name)
    unknown = sorted(set(overrides) - set(parameters))
    if unknown:
        raise ValueError(f"overrides {unknown} are not settings of {name!r}; its settings are {sorted(parameters)}")
    return RECORDERS[name](**{**settings, **overrides})


def obtain(name: str, *, live: bool | None = None) -> results.RecordedResult:
    """The result ``name`` as a ``RecordedResult``: loaded from the shipped file, or trained live on this
    machine's best device with the recorded settings when ``live`` (default ``runtime.full_runs()``)."""
    if live is None:
        live = runtime.full_runs()
    if not isinstance(live, bool):
        raise TypeError(f"live must be a bool or None, got {type(live).__name__}")
    if not live:
        return results.recorded(name)
    return results.RecordedResult.from_dict(rerun(name, device="auto"))
