"""staircase_lib.a11y: the to_jshtml animation player gets an alt text and labelled controls."""
from __future__ import annotations

import re

import pytest
import torch

from staircase_lib import a11y, plotting


@pytest.fixture(scope="module")
def player() -> str:
    return plotting.gram_animation(torch.tensor([0, 10, 100]), torch.randn(3, 5, 2, generator=torch.Generator().manual_seed(0)),
                                   n_frames=3)


def test_label_animation_adds_alt_text_and_slider_label(player):
    html = a11y.label_animation(player, alt='Cosines of 5 tokens, "blocks" form', slider_label="Training step")
    imgs = re.findall(r"<img[^>]*>", html)
    assert len(imgs) == 1 and 'alt="Cosines of 5 tokens, &quot;blocks&quot; form"' in imgs[0], imgs
    slider = re.search(r'<input id="_anim_slider[0-9a-f]+"[^>]*>', html)
    assert slider and 'aria-label="Training step"' in slider.group(0)
    assert html.count('<span aria-hidden="true">') == 9, "each player button's glyph is hidden from screen readers"
    assert "<script" in html and "data:image/png;base64" in html, "the player itself is unchanged"


def test_label_animation_replaces_an_existing_alt(player):
    once = a11y.label_animation(player, alt="first")
    twice = a11y.label_animation(once, alt="second")
    assert 'alt="second"' in twice and 'alt="first"' not in twice
    assert twice.count('<span aria-hidden="true">') == 9, "labelling twice does not wrap the glyphs twice"


@pytest.mark.parametrize("alt, label", [("", "Frame"), ("   ", "Frame"), (None, "Frame"), ("ok", "")])
def test_label_animation_rejects_empty_texts(player, alt, label):
    with pytest.raises(ValueError, match="alt|slider_label"):
        a11y.label_animation(player, alt=alt, slider_label=label)


def test_label_animation_rejects_other_html():
    with pytest.raises(ValueError, match="to_jshtml"):
        a11y.label_animation("<div><img src='x.png'></div>", alt="a figure")
