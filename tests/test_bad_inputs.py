"""Every public entry point rejects bad input with a ValueError or TypeError that names the argument.

One table: (id, call, expected exception, regex the message must match). Add a row when you add an
argument check.
"""
from __future__ import annotations

import math

import pytest
import torch

from staircase_lib import metrics, runtime, widgets
from staircase_lib import signatures as sg
from staircase_lib.exercises import check_label_signature
from staircase_lib import theory, training
from staircase_lib.corpus import TinyCorpus
from staircase_lib.models import AttentionModel, EmbLinear, EmbMLP, TinyGPT
from staircase_lib.tasks import AdditionTask, AnchorTask, Batch, StaircaseTask
from staircase_lib.training import TrainConfig, train
from staircase_lib.session import setup as sl_setup

NAN, INF = math.nan, math.inf
TASK = StaircaseTask()
MODEL = EmbMLP(vocab_size=64, seq_len=3, n_labels=4, d_embed=4, d_hidden=8)
TOKENS = torch.randint(8, (30, 3), generator=torch.Generator().manual_seed(0))
LABELS = torch.randint(3, (30,), generator=torch.Generator().manual_seed(1))
X = torch.randn(6, 3)
K6 = torch.eye(6)
STEPS = torch.arange(10)
CORPUS = TinyCorpus(n_sentences=200)


def sig(**overrides):
    """label_signature with good arguments, except the ones overridden."""
    args = dict(tokens=TOKENS, labels=LABELS, position=0, vocab_size=8, n_labels=3)
    args.update(overrides)
    return lambda: sg.label_signature(**args)


def cfg(**overrides):
    args = dict(steps=10)
    args.update(overrides)
    return lambda: TrainConfig(**args)


def mlp(**overrides):
    args = dict(vocab_size=64, seq_len=3, n_labels=4)
    args.update(overrides)
    return lambda: EmbMLP(**args)


BAD_INPUTS = [
    # ----- tasks -----
    ("strengths wrong length", lambda: StaircaseTask(strengths=(0.5, 0.5)), ValueError, r"strengths must be a sequence of 3"),
    ("strengths not a sequence", lambda: StaircaseTask(strengths="abc"), ValueError, r"strengths must be a sequence"),
    ("strengths NaN", lambda: StaircaseTask(strengths=(NAN, 0.1, 0.1)), ValueError, r"strengths\[0\] must be a finite"),
    ("strengths negative", lambda: StaircaseTask(strengths=(0.1, -0.1, 0.1)), ValueError, r"strengths\[1\]"),
    ("strengths above one", lambda: StaircaseTask(strengths=(0.1, 0.1, 1.5)), ValueError, r"strengths\[2\]"),
    ("strengths sum above one", lambda: StaircaseTask(strengths=(0.5, 0.4, 0.3)), ValueError, r"strengths must sum to at most 1"),
    ("strengths of strings", lambda: StaircaseTask(strengths=("a", 0, 0)), ValueError, r"strengths\[0\]"),
    ("attribute_size 1", lambda: StaircaseTask(attribute_size=1), ValueError, r"attribute_size must be an int >= 2"),
    ("attribute_size float", lambda: StaircaseTask(attribute_size=4.0), TypeError, r"attribute_size must be an int"),
    ("task seed negative", lambda: StaircaseTask(seed=-1), ValueError, r"seed must be a non-negative int"),
    ("sample n zero", lambda: TASK.sample(0), ValueError, r"\bn must be an int >= 1"),
    ("sample n float", lambda: TASK.sample(2.5), TypeError, r"\bn must be an int"),
    ("sample n bool", lambda: TASK.sample(True), TypeError, r"\bn must be an int"),
    ("sample generator int", lambda: TASK.sample(4, generator=42), TypeError, r"generator must be a torch.Generator"),
    ("positions out of range", lambda: TASK.conditional_label_distribution([0, 3]), ValueError, r"positions must be ints in \[0, 2\]"),
    ("positions repeated", lambda: TASK.conditional_label_distribution([1, 1]), ValueError, r"positions must be distinct"),
    ("label_signature position", lambda: TASK.label_signature(-1), ValueError, r"positions"),
    ("task kernel order 3", lambda: TASK.kernel(3), ValueError, r"order must be an int in \[0, 2\]"),
    ("task attribute order float", lambda: TASK.attribute(1.0), ValueError, r"order must be an int"),
    ("anchor n_keys", lambda: AnchorTask(n_keys=1), ValueError, r"n_keys must be an int >= 2"),
    ("anchor n_keys float", lambda: AnchorTask(n_keys=4.0), TypeError, r"n_keys must be an int"),
    ("anchor key_start", lambda: AnchorTask(key_start="20"), TypeError, r"key_start must be an int"),
    ("anchor shifts short", lambda: AnchorTask(shifts=(5,)), ValueError, r"shifts must be a sequence of at least 2"),
    ("anchor shifts float", lambda: AnchorTask(shifts=(5, 1.5)), TypeError, r"shifts\[1\] must be an int"),
    ("anchor held_out range", lambda: AnchorTask(held_out=(2, 4)), ValueError, r"held_out must be None or a pair of anchor indices in \[0, 3\]"),
    ("anchor held_out triple", lambda: AnchorTask(held_out=(1, 2, 3)), ValueError, r"held_out must be"),
    ("anchor memorized", lambda: AnchorTask(memorized=1.5), ValueError, r"memorized must be a fraction"),
    ("anchor memorized bool", lambda: AnchorTask(memorized=True), ValueError, r"memorized must be a fraction"),
    ("anchor seed", lambda: AnchorTask(seed=-1), ValueError, r"seed must be a non-negative int"),
    ("anchor mapping", lambda: AnchorTask().keys("rules"), ValueError, r"mapping must be 'reasoning' or 'memorization'"),
    ("anchor dataset mapping", lambda: AnchorTask().dataset("memorisation"), ValueError, r"mapping must be"),
    ("anchor no held-out", lambda: AnchorTask(held_out=None).held_out_batch(), ValueError, r"held_out=None"),
    ("anchor all memorized", lambda: AnchorTask(memorized=1.0).held_out_batch(), ValueError, r"every key is memorized"),
    ("anchor sample n", lambda: AnchorTask().sample(0), ValueError, r"\bn must be an int >= 1"),
    ("anchor sample generator", lambda: AnchorTask().sample(4, generator=1), TypeError, r"generator must be a torch.Generator"),
    ("anchor positions", lambda: AnchorTask().conditional_label_distribution([3]), ValueError, r"positions must be ints in \[0, 2\]"),
    ("anchor positions repeated", lambda: AnchorTask().conditional_label_distribution([0, 0]), ValueError, r"positions must be distinct"),
    # ----- models -----
    ("activation name", mlp(activation="softmax"), ValueError, r"activation must be one of"),
    ("pool name", mlp(pool="mean"), ValueError, r"pool must be one of"),
    ("linear pool name", lambda: EmbLinear(vocab_size=64, seq_len=3, n_labels=4, pool="max"), ValueError, r"pool must be one of"),
    ("gamma inf", mlp(gamma=INF), ValueError, r"gamma must be finite"),
    ("gamma NaN", mlp(gamma=NAN), ValueError, r"gamma must be finite"),
    ("gamma string", mlp(gamma="1"), TypeError, r"gamma must be a real number"),
    ("vocab_size zero", mlp(vocab_size=0), ValueError, r"vocab_size must be an int >= 1"),
    ("seq_len float", mlp(seq_len=3.0), TypeError, r"seq_len must be an int"),
    ("n_labels negative", mlp(n_labels=-4), ValueError, r"n_labels must be an int >= 1"),
    ("d_embed zero", mlp(d_embed=0), ValueError, r"d_embed must be an int >= 1"),
    ("d_hidden zero", mlp(d_hidden=0), ValueError, r"d_hidden must be an int >= 1"),
    ("model seed negative", mlp(seed=-2), ValueError, r"seed must be a non-negative int"),
    ("forward float tokens", lambda: MODEL(torch.zeros(2, 3)), TypeError, r"tokens must be an integer tensor"),
    ("forward wrong seq_len", lambda: MODEL(torch.zeros(2, 4, dtype=torch.long)), ValueError, r"tokens must have shape \[N, 3\]"),
    ("forward id out of range", lambda: MODEL(torch.full((2, 3), 64)), ValueError, r"tokens holds ids in \[64, 64\]"),
    ("forward list", lambda: MODEL([[0, 1, 2]]), TypeError, r"tokens must be a torch.Tensor"),
    ("freeze not bool", lambda: EmbMLP(vocab_size=8, seq_len=3, n_labels=2).freeze_embeddings("yes"), TypeError, r"frozen must be True or False"),
    ("load_embeddings list", lambda: EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=4).load_embeddings([[0.0]]), TypeError, r"embeddings must be a torch.Tensor of shape \[8, 4\]"),
    ("load_embeddings shape", lambda: EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=4).load_embeddings(torch.zeros(8, 5)), ValueError, r"embeddings must have shape \[8, 4\]"),
    ("load_embeddings NaN", lambda: EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=4).load_embeddings(torch.full((8, 4), NAN)), ValueError, r"embeddings must be a finite"),
    ("load_embeddings freeze", lambda: EmbMLP(vocab_size=8, seq_len=3, n_labels=2, d_embed=4).load_embeddings(torch.zeros(8, 4), freeze=1), TypeError, r"freeze must be True or False"),
    ("blocks with sum pool", lambda: EmbMLP(vocab_size=64, seq_len=3, n_labels=4, pool="sum").first_layer_blocks(), ValueError, r"pool='concat'"),
    ("attention heads do not divide d", lambda: AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_embed=10, n_heads=3), ValueError, r"d_embed=10 must be divisible by n_heads=3"),
    ("attention readout name", lambda: AttentionModel(vocab_size=64, seq_len=3, n_labels=4, readout_mode="first"), ValueError, r"readout_mode must be one of"),
    ("attention causal string", lambda: AttentionModel(vocab_size=64, seq_len=3, n_labels=4, causal="yes"), TypeError, r"causal must be True or False"),
    ("attention n_layers zero", lambda: AttentionModel(vocab_size=64, seq_len=3, n_labels=4, n_layers=0), ValueError, r"n_layers must be an int >= 1"),
    ("attention d_hidden negative", lambda: AttentionModel(vocab_size=64, seq_len=3, n_labels=4, d_hidden=-1), ValueError, r"d_hidden must be an int >= 0"),
    ("attention maps float tokens", lambda: AttentionModel(vocab_size=64, seq_len=3, n_labels=4).attention_maps(torch.zeros(2, 3)), TypeError, r"tokens must be an integer tensor"),
    ("task reverse string", lambda: StaircaseTask(reverse="yes"), TypeError, r"reverse must be True or False"),
    ("attention entropy rows", lambda: metrics.attention_entropy(torch.ones(3, 3)), ValueError, r"rows must be finite, non-negative and sum to 1"),
    ("attention entropy shape", lambda: metrics.attention_entropy(torch.ones(3, 2) / 2), ValueError, r"attention must have shape \[..., L, L\]"),
    ("attention entropy ints", lambda: metrics.attention_entropy(torch.eye(3, dtype=torch.long)), TypeError, r"attention must be a floating-point tensor"),
    ("velocity terms", lambda: theory.predicted_embedding_velocity(AttentionModel(vocab_size=64, seq_len=3, n_labels=4), TASK, terms=("bias",)), ValueError, r"terms must be a non-empty subset"),
    ("deviation model", lambda: theory.attention_deviation(MODEL, TOKENS), TypeError, r"model must be an AttentionModel"),
    ("ensemble mixed models", lambda: training.train_ensemble([MODEL, AttentionModel(vocab_size=64, seq_len=3, n_labels=4)], TASK, TrainConfig(steps=1)), ValueError, r"an ensemble needs one architecture"),
    ("addition n_numbers one", lambda: AdditionTask(1), ValueError, r"n_numbers must be an int >= 2"),
    ("addition operands one", lambda: AdditionTask(10, n_operands=1), ValueError, r"n_operands must be an int >= 2"),
    ("addition modular string", lambda: AdditionTask(10, modular="yes"), TypeError, r"modular must be True or False"),
    ("addition width too big", lambda: AdditionTask(10, operand_width=11), ValueError, r"operand_width must be at most n_numbers=10"),
    ("addition positions", lambda: AdditionTask(10).conditional_label_distribution([2]), ValueError, r"positions must be ints in \[0, 1\]"),
    ("rank_correlation lengths", lambda: metrics.rank_correlation(torch.ones(3), torch.ones(4)), ValueError, r"a and b must be 1-D of equal length"),
    ("principal_components k", lambda: metrics.principal_components(X, k=5), ValueError, r"k must be at most min\(V, d\) = 3"),
    ("angular_coverage shape", lambda: metrics.angular_coverage(X), ValueError, r"points must be a tensor \[V, 2\]"),
    # ----- corpus and tiny GPT (Chapter 8) -----
    ("corpus n_sentences zero", lambda: TinyCorpus(n_sentences=0), ValueError, r"n_sentences must be an int >= 1"),
    ("corpus one class", lambda: TinyCorpus(n_classes=1), ValueError, r"n_classes must be an int >= 2"),
    ("corpus nouns float", lambda: TinyCorpus(nouns_per_class=2.5), TypeError, r"nouns_per_class must be an int"),
    ("corpus p_adjective", lambda: TinyCorpus(p_adjective=1.5), ValueError, r"p_adjective must be a probability"),
    ("corpus p_phrase NaN", lambda: TinyCorpus(p_phrase=NAN), ValueError, r"p_phrase must be finite"),
    ("corpus seed", lambda: TinyCorpus(seed=-1), ValueError, r"seed must be a non-negative int"),
    ("encode unknown word", lambda: CORPUS.tokenizer.encode("the unicorn eats hay"), ValueError, r"text holds words not in the vocabulary"),
    ("encode number", lambda: CORPUS.tokenizer.encode(42), TypeError, r"text must be a str"),
    ("decode out of range", lambda: CORPUS.tokenizer.decode([0, 99]), ValueError, r"ids must be ints in \[0, 42\)"),
    ("skipgram lag zero", lambda: CORPUS.skipgram(0), ValueError, r"lag must be an int in \[1, 4\]"),
    ("counted skipgram lag", lambda: CORPUS.counted_skipgram(1.0), ValueError, r"lag must be an int >= 1"),
    ("exact_joint offsets", lambda: CORPUS.exact_joint((1, 1)), ValueError, r"offsets must be 1 or 2 distinct ints"),
    ("corpus kernel kind", lambda: CORPUS.signature_kernel("fourgram"), ValueError, r"kind must be one of"),
    ("corpus label kind", lambda: CORPUS.label_kernel("topic"), ValueError, r"kind must be one of"),
    ("corpus alignment shape", lambda: CORPUS.label_alignment(torch.ones(3, 5, 2)), ValueError, r"embeddings must have shape \[T, 42, d\]"),
    ("window zero", lambda: CORPUS.windows(0), ValueError, r"window must be an int >= 1"),
    ("seq_len too long", lambda: CORPUS.sequences(10**6), ValueError, r"seq_len=1000000 is too long"),
    ("corpus task corpus", lambda: type(CORPUS.windows(2))("text"), TypeError, r"corpus must be a TinyCorpus"),
    ("corpus sample n", lambda: CORPUS.windows(2).sample(0), ValueError, r"\bn must be an int >= 1"),
    ("corpus sample generator", lambda: CORPUS.sequences(4).sample(2, generator=1), TypeError, r"generator must be a torch.Generator"),
    ("sentences n", lambda: CORPUS.sentences(0), ValueError, r"\bn must be an int >= 1"),
    ("gpt tied string", lambda: TinyGPT(vocab_size=42, seq_len=8, tied="yes"), TypeError, r"tied must be True or False"),
    ("gpt heads", lambda: TinyGPT(vocab_size=42, seq_len=8, d_embed=10, n_heads=3), ValueError, r"d_embed=10 must be divisible by n_heads=3"),
    ("gpt n_layers", lambda: TinyGPT(vocab_size=42, seq_len=8, n_layers=0), ValueError, r"n_layers must be an int >= 1"),
    ("gpt d_hidden", lambda: TinyGPT(vocab_size=42, seq_len=8, d_hidden=2.5), TypeError, r"d_hidden must be an int >= 0"),
    ("gpt activation", lambda: TinyGPT(vocab_size=42, seq_len=8, activation="step"), ValueError, r"activation must be one of"),
    ("gpt gamma", lambda: TinyGPT(vocab_size=42, seq_len=8, gamma=NAN), ValueError, r"gamma must be finite"),
    ("gpt tokens too long", lambda: TinyGPT(vocab_size=42, seq_len=4)(torch.zeros(2, 5, dtype=torch.long)), ValueError, r"1 <= L <= 4"),
    ("gpt tokens float", lambda: TinyGPT(vocab_size=42, seq_len=4)(torch.zeros(2, 4)), TypeError, r"tokens must be an integer tensor"),
    ("gpt attention ids", lambda: TinyGPT(vocab_size=42, seq_len=4).attention_maps(torch.full((2, 4), 42)), ValueError, r"tokens holds ids"),
    ("gpt train size mismatch", lambda: train(TinyGPT(vocab_size=42, seq_len=4), CORPUS.sequences(8), TrainConfig(steps=1)), ValueError, r"task.seq_len=8 does not match model.seq_len=4"),
    # ----- training -----
    ("config steps zero", cfg(steps=0), ValueError, r"steps must be an int >= 1"),
    ("config lr zero", cfg(lr=0.0), ValueError, r"lr must be > 0"),
    ("config lr NaN", cfg(lr=NAN), ValueError, r"lr must be finite"),
    ("config lr string", cfg(lr="0.1"), TypeError, r"lr must be a real number"),
    ("config batch_size", cfg(batch_size=0), ValueError, r"batch_size must be an int >= 1"),
    ("config record_every", cfg(record_every=1.5), TypeError, r"record_every must be an int"),
    ("config eval_size", cfg(eval_size=-1), ValueError, r"eval_size must be an int >= 1"),
    ("config seed", cfg(seed=-1), ValueError, r"seed must be a non-negative int"),
    ("config optimizer", cfg(optimizer="rmsprop"), ValueError, r"optimizer must be one of"),
    ("config device name", cfg(device="gpu"), ValueError, r"device must be one of"),
    ("config progress", cfg(progress="yes"), TypeError, r"progress must be True, False or None"),
    ("train model", lambda: train(object(), TASK, TrainConfig(steps=1)), TypeError, r"model must be a staircase_lib model"),
    ("train config", lambda: train(MODEL, TASK, {"steps": 1}), TypeError, r"config must be a TrainConfig"),
    ("train size mismatch", lambda: train(EmbMLP(vocab_size=8, seq_len=3, n_labels=2), TASK, TrainConfig(steps=1)), ValueError, r"task.vocab_size=64 does not match model.vocab_size=8"),
    ("train probes list", lambda: train(MODEL, TASK, TrainConfig(steps=1), probes=[TASK.sample(4)]), TypeError, r"probes must be a dict"),
    ("train probes value", lambda: train(MODEL, TASK, TrainConfig(steps=1), probes={"a": (1, 2)}), TypeError, r"probes must map str names to Batch"),
    ("train probes tokens", lambda: train(MODEL, TASK, TrainConfig(steps=1), probes={"a": Batch(torch.full((2, 3), 64), torch.zeros(2, dtype=torch.long))}), ValueError, r"probes\['a'\].tokens holds ids"),
    ("train probes seq_len", lambda: train(MODEL, TASK, TrainConfig(steps=1), probes={"a": Batch(torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, dtype=torch.long))}), ValueError, r"probes\['a'\].tokens must have shape \[N, 3\]"),
    ("train probes labels", lambda: train(MODEL, TASK, TrainConfig(steps=1), probes={"a": Batch(torch.zeros(2, 3, dtype=torch.long), torch.full((2,), 4))}), ValueError, r"probes\['a'\].labels holds ids"),
    # ----- runtime -----
    ("device name", lambda: runtime.resolve_device("tpu"), ValueError, r"device must be one of"),
    ("device type", lambda: runtime.resolve_device(0), TypeError, r"device must be a str or torch.device"),
    ("seed_everything negative", lambda: runtime.seed_everything(-1), ValueError, r"seed must be a non-negative int"),
    ("setup seed", lambda: sl_setup(seed=-3, verbose=False), ValueError, r"seed must be a non-negative int"),
    # ----- signatures -----
    ("float tokens", sig(tokens=TOKENS.float()), TypeError, r"tokens must be an integer tensor"),
    ("tokens list", sig(tokens=TOKENS.tolist()), TypeError, r"tokens must be a torch.Tensor"),
    ("tokens 1-D", sig(tokens=TOKENS[:, 0]), ValueError, r"tokens must have shape \[N, L\]"),
    ("tokens empty", sig(tokens=TOKENS[:0], labels=LABELS[:0]), ValueError, r"tokens must have shape \[N, L\] with N >= 1"),
    ("token ids out of range", sig(vocab_size=5), ValueError, r"tokens holds ids in \[0, 7\], expected ids in \[0, 5\)"),
    ("labels wrong length", sig(labels=LABELS[:-1]), ValueError, r"labels must have shape \[30\]"),
    ("labels float", sig(labels=LABELS.float()), TypeError, r"labels must be an integer tensor"),
    ("labels list", sig(labels=LABELS.tolist()), TypeError, r"labels must be a torch.Tensor"),
    ("marginal labels list", lambda: sg.label_marginal([0, 1], 3), TypeError, r"labels must be a torch.Tensor"),
    ("label ids out of range", sig(n_labels=2), ValueError, r"labels holds ids in \[0, 2\], expected ids in \[0, 2\)"),
    ("position out of range", sig(position=3), ValueError, r"position\(s\) in \[0, 2\]"),
    ("position float", sig(position=1.0), ValueError, r"position must be an int"),
    ("smoothing negative", sig(smoothing=-1.0), ValueError, r"smoothing must be >= 0"),
    ("smoothing NaN", sig(smoothing=NAN), ValueError, r"smoothing must be finite"),
    ("signature vocab_size zero", sig(vocab_size=0), ValueError, r"vocab_size must be an int >= 1"),
    ("n_labels string", sig(n_labels="3"), TypeError, r"n_labels must be an int"),
    ("signature_kernel order 3", lambda: sg.signature_kernel(TOKENS, LABELS, 3, 8, 3), ValueError, r"order must be an int in \[0, 2\]"),
    ("signature_kernel order -1", lambda: sg.signature_kernel(TOKENS, LABELS, -1, 8, 3), ValueError, r"order must be an int"),
    ("pure_signature repeated", lambda: sg.pure_signature(TOKENS, LABELS, [0, 0], 8, 3), ValueError, r"positions must be distinct"),
    ("pure_signature too many", lambda: sg.pure_signature(TOKENS, LABELS, [0, 1, 2, 3], 8, 3), ValueError, r"positions"),
    ("drive reference shape", lambda: sg.signature_drive(TOKENS, LABELS, 8, 3, reference=torch.ones(4) / 4), ValueError, r"reference must have shape \[3\]"),
    ("drive reference list", lambda: sg.signature_drive(TOKENS, LABELS, 8, 3, reference=[1 / 3] * 3), TypeError, r"reference must be a torch.Tensor"),
    ("drive position", lambda: sg.signature_drive(TOKENS, LABELS, 8, 3, position=4), ValueError, r"position must be position"),
    ("marginal labels 2-D", lambda: sg.label_marginal(LABELS[:, None], 3), ValueError, r"labels must have shape"),
    ("marginal labels empty", lambda: sg.label_marginal(LABELS[:0], 3), ValueError, r"labels must have shape \[N\] with N >= 1"),
    # ----- metrics -----
    ("cka kernel size", lambda: metrics.cka(X, torch.eye(5)), ValueError, r"kernel must have shape \[6, 6\]"),
    ("cka kernel not square", lambda: metrics.cka(X, torch.ones(6, 5)), ValueError, r"kernel must be a square matrix"),
    ("cka kernel NaN", lambda: metrics.cka(X, torch.full((6, 6), NAN)), ValueError, r"kernel contains NaN"),
    ("cka kernel list", lambda: metrics.cka(X, [[1.0]]), TypeError, r"kernel must be a torch.Tensor"),
    ("cka x 1-D", lambda: metrics.cka(torch.ones(6), K6), ValueError, r"\bx must be a 2-D tensor"),
    ("cka x NaN", lambda: metrics.cka(torch.full((6, 3), NAN), K6), ValueError, r"\bx contains NaN"),
    ("cka_chance d_embed", lambda: metrics.cka_chance(K6, d_embed=0), ValueError, r"d_embed must be an int >= 1"),
    ("cka_chance n_draws", lambda: metrics.cka_chance(K6, 4, n_draws=0), ValueError, r"n_draws must be an int >= 1"),
    ("gram x 1-D", lambda: metrics.gram(torch.ones(3)), ValueError, r"\bx must be a tensor of shape \[\.\.\., V, d\]"),
    ("gram_correlation method", lambda: metrics.gram_correlation(X, K6, method="kendall"), ValueError, r"method must be 'pearson' or 'spearman'"),
    ("gram_correlation x 1-D", lambda: metrics.gram_correlation(torch.ones(6), K6), ValueError, r"\bx must be a 2-D tensor"),
    ("gram_correlation kernel", lambda: metrics.gram_correlation(X, torch.eye(3)), ValueError, r"kernel must have shape \[6, 6\]"),
    ("alignment embeddings 2-D", lambda: metrics.alignment_curve(X, K6), ValueError, r"embeddings must have shape \[T, V, d\]"),
    ("alignment kernel size", lambda: metrics.alignment_curve(X[None], torch.eye(4)), ValueError, r"kernel must have shape \[6, 6\]"),
    ("crossing_time list", lambda: metrics.crossing_time([0, 1], torch.ones(2), 0.5), TypeError, r"steps and curve must be tensors"),
    ("crossing_time shapes", lambda: metrics.crossing_time(STEPS, torch.ones(9), 0.5), ValueError, r"steps and curve must be 1-D of equal length"),
    ("crossing_time level NaN", lambda: metrics.crossing_time(STEPS, torch.ones(10), NAN), ValueError, r"level must be finite"),
    ("crossing_time below", lambda: metrics.crossing_time(STEPS, torch.ones(10), 0.5, below="yes"), TypeError, r"below must be True or False"),
    ("spectral kernel shape", lambda: sg.spectral_embedding(torch.ones(3, 4), 2), ValueError, r"kernel must be a square matrix"),
    ("spectral d_embed", lambda: sg.spectral_embedding(K6, 0), ValueError, r"d_embed must be an int >= 1"),
    ("spectral norm", lambda: sg.spectral_embedding(K6, 2, norm=0.0), ValueError, r"norm must be > 0"),
    ("spectral zero kernel", lambda: sg.spectral_embedding(torch.zeros(3, 3), 2, norm=1.0), ValueError, r"no positive eigenvalue"),
    ("smooth window zero", lambda: metrics.smooth(STEPS.float(), 0), ValueError, r"window must be an int >= 1"),
    ("stair_time shapes", lambda: metrics.stair_time(STEPS, torch.ones(9)), ValueError, r"steps and curve must be 1-D of equal length"),
    ("stair_time 2-D", lambda: metrics.stair_time(STEPS[None], torch.ones(1, 10)), ValueError, r"steps and curve must be 1-D"),
    ("stair_time empty", lambda: metrics.stair_time(STEPS[:0], STEPS[:0].float()), ValueError, r"steps and curve"),
    ("stair_time list", lambda: metrics.stair_time(list(range(10)), torch.ones(10)), TypeError, r"steps and curve must be tensors"),
    ("stair_time min_rise", lambda: metrics.stair_time(STEPS, torch.ones(10), min_rise=-0.1), ValueError, r"min_rise must be >= 0"),
    ("stair_time window", lambda: metrics.stair_time(STEPS, torch.ones(10), window=0), ValueError, r"window must be an int >= 1"),
    # ----- widgets and exercises -----
    ("explore not callable", lambda: widgets.explore("plot", static=True), TypeError, r"function must be callable"),
    ("explore unknown control", lambda: widgets.explore(lambda a: a, static=True, b=(0, 1)), ValueError, r"controls \['b'\]"),
    ("exercise check non-callable", lambda: check_label_signature(None), TypeError, r"pass your function itself"),
]


IDS = [row[0] for row in BAD_INPUTS]
assert len(IDS) == len(set(IDS)), "duplicate ids in BAD_INPUTS"


@pytest.mark.parametrize("call, error, message", [row[1:] for row in BAD_INPUTS], ids=IDS)
def test_bad_input_is_rejected_with_a_message_naming_the_argument(call, error, message):
    assert error in (ValueError, TypeError)
    with pytest.raises(error, match=message):
        call()
