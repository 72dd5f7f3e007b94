"""A Sphinx extension for the book: the Colab launch button of a chapter opens its notebook edition
(``notebooks/NN_slug.ipynb``, which Colab renders right), not the MyST source in ``chapters/``, and a second
button opens the student edition (``notebooks/student/NN_slug.ipynb``). Listed in ``_config.yml``."""
from __future__ import annotations

__all__ = ["point_colab_at_editions", "setup"]

EDITIONS = "notebooks"


def point_colab_at_editions(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """On a chapter page, rewrite the theme's Colab button to the notebook edition and add the student edition."""
    if not pagename.startswith("chapters/"):
        return
    name = pagename.split("/", 1)[1]
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        buttons = []
        for button in group["buttons"]:
            if button.get("text") == "Colab" and button["url"].endswith(f"/{pagename}.ipynb"):
                base = button["url"][: -len(f"{pagename}.ipynb")]
                buttons.append({**button, "url": f"{base}{EDITIONS}/{name}.ipynb"})
                buttons.append({**button, "text": "Colab (student edition)",
                                "tooltip": "Launch the student edition (no solutions) on Colab",
                                "url": f"{base}{EDITIONS}/student/{name}.ipynb"})
            else:
                buttons.append(button)
        group["buttons"] = buttons


def setup(app) -> dict:
    """Register the rewrite after the theme adds its launch buttons (priority 501)."""
    app.connect("html-page-context", point_colab_at_editions, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
