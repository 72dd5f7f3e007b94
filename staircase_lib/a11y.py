"""Accessibility helpers for HTML the course generates (screen readers and keyboards, WCAG 2.1 AA).

``label_animation`` post-processes the HTML of matplotlib's ``Animation.to_jshtml`` (what
``plotting.gram_animation`` returns): matplotlib writes the frame as an ``<img>`` with no alt text and the
frame slider as an ``<input type="range">`` with no label, so a screen reader announces "image" and
"slider" with nothing else (axe-core: ``image-alt`` and ``label``, both critical). Use it as
``display(HTML(label_animation(gram_animation(...), alt="...")))``.
"""
from __future__ import annotations

import html as _html
import re

__all__ = ["label_animation"]

_IMG = re.compile(r'<img id="(_anim_img[0-9a-f]+)"(?P<rest>[^>]*)>')
_SLIDER = re.compile(r'<input id="(_anim_slider[0-9a-f]+)"')
# The player's buttons carry aria-label="Play", "Next frame", ...; their visible text is a glyph
# (Font Awesome, or the Unicode arrows of plotting._offline_controls). The glyph is decoration: hide it
# from assistive technology so the name is the aria-label alone.
_BUTTON = re.compile(r'(<button title="[^"]*" aria-label="[^"]*" onclick="anim[0-9a-f]+\.[a-z_]+\(\)">)\s*(.*?)\s*(</button>)',
                     re.DOTALL)


def label_animation(html: str, alt: str, slider_label: str = "Animation frame") -> str:
    """Give a ``to_jshtml`` animation an alt text, a labelled frame slider and glyph-free button names.

    ``alt`` says what the animation shows (what is drawn and how it changes), as for any figure: it is
    the text a screen reader reads for the frame image. ``slider_label`` names the slider that picks the
    frame. Raises ValueError if ``alt`` is empty or if ``html`` is not a ``to_jshtml`` player (so a change
    in matplotlib's template cannot silently drop the labels).
    """
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError("alt must be a non-empty description of what the animation shows")
    if not isinstance(slider_label, str) or not slider_label.strip():
        raise ValueError("slider_label must be a non-empty string")
    if not _IMG.search(html) or not _SLIDER.search(html):
        raise ValueError("html is not a matplotlib to_jshtml animation (no _anim_img / _anim_slider element)")
    alt_attr = _html.escape(alt.strip(), quote=True)
    label_attr = _html.escape(slider_label.strip(), quote=True)

    def img(match: re.Match) -> str:
        rest = re.sub(r'\s+alt="[^"]*"', "", match.group("rest"))
        return f'<img id="{match.group(1)}" alt="{alt_attr}"{rest}>'

    html = _IMG.sub(img, html)
    html = _SLIDER.sub(lambda m: f'<input id="{m.group(1)}" aria-label="{label_attr}"', html)

    def button(match: re.Match) -> str:
        glyph = match.group(2)
        if not glyph.startswith('<span aria-hidden="true">'):
            glyph = f'<span aria-hidden="true">{glyph}</span>'
        return f"{match.group(1)}{glyph}{match.group(3)}"

    return _BUTTON.sub(button, html)
