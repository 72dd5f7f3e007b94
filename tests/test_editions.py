"""The notebook editions (staircase_lib.coursework.editions): MyST turned into what Colab and plain Jupyter
render, both committed editions current, nothing of MyST left when rendered as Colab renders (CommonMark with
HTML), every answer folded, every glued number present; the student's own folder never overwritten."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from markdown_it import MarkdownIt

from staircase_lib.coursework import book_context, editions, launch_buttons
from staircase_lib.coursework.editions import BookContext, MystSyntaxError, Target, convert_markdown

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
EDITIONS = ROOT / "notebooks"
DOC = "chapters/02_x"
CONTEXT = BookContext(
    url="https://example.org/book/",
    targets={"numref": {"fig-a": Target("Fig. 12", "chapters/02_x.html#fig-a")},
             "eq": {"eq-b": Target("(3)", "chapters/02_x.html#equation-eq-b")},
             "ref": {"sec-c": Target("One equation per mode", "chapters/02_x.html#sec-c")},
             "prf": {"def-d": Target("Definition 4", "chapters/01_y.html#def-d")},
             "term": {"plateau": Target("Plateau", "appendix/glossary.html#term-Plateau")},
             "cite": {"saxe2014": Target("Saxe et al., 2014", "appendix/bibliography.html")},
             "doc": {"chapters/01_y": Target("1. Signatures", "chapters/01_y.html")}},
    glue={DOC: {"n_steps": "1096", "err": "0.01234", "word": "'censored'"}})


def colab_html(markdown: str) -> str:
    """A markdown cell as Colab and Jupyter render it: CommonMark with raw HTML, no MyST."""
    return MarkdownIt("commonmark", {"html": True}).render(markdown)


# ----- the converter ---------------------------------------------------------------------------------------------
def test_roles_become_the_books_numbers_and_links():
    text = convert_markdown(
        "See {numref}`fig-a`, {numref}`panel of Fig. {number} <fig-a>`, eq. {eq}`eq-b`, {ref}`sec-c`, "
        "{prf:ref}`def-d`, {term}`the wait <Plateau>`, {cite}`saxe2014` and {doc}`01_y`: "
        "{glue:text}`n_steps` steps, {glue:text}`err:.1%`, {glue:text}`word`.", DOC, CONTEXT)
    assert text == (
        "See [Fig. 12](https://example.org/book/chapters/02_x.html#fig-a), "
        "[panel of Fig. 12](https://example.org/book/chapters/02_x.html#fig-a), "
        "eq. [(3)](https://example.org/book/chapters/02_x.html#equation-eq-b), "
        "[One equation per mode](https://example.org/book/chapters/02_x.html#sec-c), "
        "[Definition 4](https://example.org/book/chapters/01_y.html#def-d), "
        "[the wait](https://example.org/book/appendix/glossary.html#term-Plateau), "
        "[Saxe et al., 2014](https://example.org/book/appendix/bibliography.html) and "
        "[1. Signatures](https://example.org/book/chapters/01_y.html): 1096 steps, 1.2%, censored.")


def test_directives_become_quotes_folds_and_headings():
    source = "\n".join([
        "(sec-c)=", "## A section", "", ":::{admonition} Think!", ":class: tip", "Which mode first?", ":::", "",
        ":::{dropdown} An answer", "The strongest, at $t = 4.6$.", ":::", "",
        "::::{exercise} 2.1 · A title", ":label: ex-2-1", "Write it.", "", ":::{dropdown} Hint 1", "Look.", ":::",
        "::::", "", ":::{prf:definition} Mode strength", ":label: def-d", "The strength $u$.", ":::", "",
        "$$", "u = s", "$$ (eq-b)", "", "```python", "{glue:text}`not_a_role_in_code`", "```"])
    text = convert_markdown(source, DOC, CONTEXT)
    assert "(sec-c)=" not in text and "## A section" in text
    assert "> **Think!**\n>\n> Which mode first?" in text
    assert "<details>\n<summary>An answer</summary>\n\nThe strongest, at $t = 4.6$.\n\n</details>" in text
    assert "### Exercise 2.1 · A title\n\nWrite it." in text and "<summary>Hint 1</summary>" in text
    assert "> **Definition 4** (Mode strength).\n>\n> The strength $u$." in text
    assert "$$\nu = s\n\\tag{3}\n$$" in text
    assert "{glue:text}`not_a_role_in_code`" in text, "code blocks are copied as they are"
    assert not editions.RAW_MYST.search(text.replace("{glue:text}`not_a_role_in_code`", ""))


@pytest.mark.parametrize("source,match", [
    (":::{margin}\nx\n:::", r"no notebook form for the directive \{margin\}"),
    (":::{dropdown} open\nnever closed", "is never closed"),
    ("{glue:text}`missing`", r"chapters/02_x: no glued value 'missing' in the built book .*make editions"),
    ("{numref}`fig-missing`", r"no numref target 'fig-missing'"),
    ("{abbr}`x`", r"no notebook form for the role"),
])
def test_what_the_converter_does_not_know_is_refused_by_name(source, match):
    with pytest.raises(MystSyntaxError, match=match):
        convert_markdown(source, DOC, CONTEXT)


def test_the_context_survives_its_json_form():
    again = BookContext.from_json(CONTEXT.to_json())
    assert again == CONTEXT


@pytest.mark.parametrize("shipped,built,same", [
    ("1,096", "1,096", True), ("0.0123", "0.0124", True), ("0.0123", "0.0125", False), ("2.1e-05", "2.2e-05", True),
    ("12 %", "13 %", True), ("12 %", "12 of", False), ("censored", "1,201", False), ("3.3", "3.30", True),
])
def test_a_glued_value_may_differ_by_one_unit_of_its_last_digit_only(shipped, built, same):
    assert book_context.same_glued_text(shipped, built) is same


# ----- the committed editions --------------------------------------------------------------------------------------
def committed(student: bool) -> list[tuple[Path, nbformat.NotebookNode]]:
    folder = EDITIONS / "student" if student else EDITIONS
    return [(path, nbformat.read(folder / path.name, as_version=4)) for path in CHAPTERS]


def test_every_chapter_has_both_editions_and_they_are_current():
    context = editions.read_context(EDITIONS)
    _, source_url = book_context.published_at(ROOT / "_config.yml")
    stale = []
    for path in CHAPTERS:
        source = nbformat.read(path, as_version=4)
        for student, folder in ((False, EDITIONS), (True, EDITIONS / "student")):
            made = editions.edition(source, f"chapters/{path.stem}", context, student=student, source_url=source_url)
            if nbformat.writes(made) != nbformat.writes(nbformat.read(folder / path.name, as_version=4)):
                stale.append(str((folder / path.name).relative_to(ROOT)))
    assert not stale, f"stale notebook editions, regenerate them with `make editions`: {stale}"


def test_the_full_editions_code_cells_are_the_chapters_code_cells():
    for path, made in committed(student=False):
        source = nbformat.read(path, as_version=4)
        assert [c.source for c in made.cells if c.cell_type == "code"] == [
            c.source for c in source.cells if c.cell_type == "code"], path.name


@pytest.mark.parametrize("student", [False, True], ids=["full", "student"])
def test_an_edition_rendered_as_colab_renders_it_shows_no_myst_and_folds_every_answer(student):
    for path, made in committed(student):
        source = nbformat.read(path, as_version=4)
        dropdowns = sum(len(re.findall(r"^:{3,}\{dropdown\}|^:class: dropdown", c.source, re.M))
                        for c in source.cells if c.cell_type == "markdown")
        folds = 0
        for cell in made.cells:
            if cell.cell_type != "markdown":
                continue
            assert not editions.RAW_MYST.search(cell.source), (path.name, editions.RAW_MYST.search(cell.source)[0])
            html = colab_html(cell.source)
            for raw in (":::", "{glue", "{numref}", "{eq}", "{term}", "{cite}", "{ref}", "{prf:ref}"):
                assert raw not in html, (path.name, raw, cell.source[:200])
            assert html.count("<details>") == html.count("</details>") == html.count("<summary>"), path.name
            folds += html.count("<details>")
        assert folds == dropdowns, f"{path.name}: {dropdowns} dropdowns in the chapter, {folds} folds in the edition"


def test_every_glued_number_of_a_chapter_is_in_its_edition():
    context = editions.read_context(EDITIONS)
    for path, made in committed(student=False):
        source = nbformat.read(path, as_version=4)
        glued = [m for c in source.cells if c.cell_type == "markdown" for m in re.findall(r"\{glue:text\}`([^`]*)`",
                                                                                            c.source)]
        text = "\n".join(c.source for c in made.cells if c.cell_type == "markdown")
        for key in glued:
            value = context.glued(f"chapters/{path.stem}", key)
            assert value.strip() and value in text, (path.name, key)


def test_the_student_edition_asks_for_predictions_and_never_stops_run_all():
    for path, made in committed(student=True):
        source = nbformat.read(path, as_version=4)
        assert not any("solution" in c.metadata.get("tags", []) and "NotImplementedError" not in c.source
                       for c in made.cells if c.cell_type == "code"), f"{path.name}: a solution is left"
        checks = [c.source for c in made.cells if c.cell_type == "code" and "sl.exercises.check_" in c.source]
        assert all("raise_on_failure=False" in check for check in checks), path.name
        asks = sum(bool(re.search(r"^:{3,}\{exercise\}", c.source, re.M) and re.search(r"predict", c.source, re.I))
                   for c in source.cells if c.cell_type == "markdown")
        assert sum(bool(c.metadata.get("prediction")) for c in made.cells) == asks, path.name
        header = made.cells[1].source
        assert "Save a copy before you work" in header and "notebooks/student/" in header, path.name


def test_each_edition_opens_with_its_title_then_says_what_it_is_and_links_its_page():
    url, _ = book_context.published_at(ROOT / "_config.yml")
    for student in (False, True):
        for path, made in committed(student):
            assert made.cells[0].source.startswith("# "), path.name
            assert f"{url}chapters/{path.stem}.html" in made.cells[1].source, path.name


def test_a_hidden_page_call_is_introduced_by_what_it_computes():
    _, made = committed(student=False)[1]  # Chapter 2
    notes = [c.source for c in made.cells if c.metadata.get("call_note")]
    assert any(re.search(r"`sl\.(pages\.ch2|chapters\.ch2\.page)\.simulation`\]\([^)]*/(pages/ch2|chapters/ch2/page)\.py\)",
                         note) for note in notes), notes[:3]


# ----- the student's own folder -----------------------------------------------------------------------------------
def test_copying_the_student_editions_never_overwrites_the_students_work(tmp_path):
    source = tmp_path / "editions"
    source.mkdir()
    (source / "02_x.ipynb").write_text("edition 2")
    (source / "04_y.ipynb").write_text("edition 4")
    work = tmp_path / "mywork"
    work.mkdir()
    (work / "02_x.ipynb").write_text("my solved notebook")
    copied, kept = editions.copy_student_editions(source, work)
    assert copied == [work / "04_y.ipynb"] and kept == [work / "02_x.ipynb"]
    assert (work / "02_x.ipynb").read_text() == "my solved notebook"
    editions.copy_student_editions(source, work)
    assert (work / "04_y.ipynb").read_text() == "edition 4"


def test_no_make_target_deletes_or_writes_into_the_students_folder():
    targets = re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M)
    assert {"student", "lab", "clean", "distclean", "editions", "test"} <= set(targets)
    for target in targets:
        dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True,
                             text=True, timeout=60).stdout
        for line in dry.splitlines():
            if "mywork" in line:
                assert "coursework copy-student" in line or "jupyter lab" in line, (target, line)


# ----- the book's launch buttons -----------------------------------------------------------------------------------
def test_the_colab_button_of_a_chapter_opens_its_editions():
    blob = "https://colab.research.google.com/github/o/r/blob/main/"
    context = {"header_buttons": [{"label": "launch-buttons", "buttons": [
        {"type": "link", "text": "Colab", "url": f"{blob}chapters/02_x.ipynb"}]}]}
    launch_buttons.point_colab_at_editions(None, "chapters/02_x", "page.html", context, None)
    urls = [b["url"] for b in context["header_buttons"][0]["buttons"]]
    assert urls == [f"{blob}notebooks/02_x.ipynb", f"{blob}notebooks/student/02_x.ipynb"]


# ----- against the built book (make test builds it first) -------------------------------------------------------
WALL_CLOCK = re.compile(r"_seconds$")  # how long a live cell took on the machine that built the book: no build agrees


@pytest.mark.book
def test_the_committed_book_context_is_the_built_books():
    """The numbers, titles and glued values the editions show are the fresh build's (a glued value may differ by
    one unit of its last digit: another CPU may round a value on a boundary the other way; a wall-clock time, such as
    ch4_live_seconds, is compared by name only)."""
    url, _ = book_context.published_at(ROOT / "_config.yml")
    built = book_context.from_build(ROOT / "_build", url, ROOT / "references.bib")
    shipped = editions.read_context(EDITIONS)
    for kind in sorted(set(built.targets) | set(shipped.targets)):
        differ = {label for label in set(built.targets.get(kind, {})) | set(shipped.targets.get(kind, {}))
                  if built.targets.get(kind, {}).get(label) != shipped.targets.get(kind, {}).get(label)}
        assert not differ, f"{kind} targets differ from the built book ({sorted(differ)[:5]}): run `make editions`"
    for docname in sorted(set(built.glue) | set(shipped.glue)):
        ours, theirs = shipped.glue.get(docname, {}), built.glue.get(docname, {})
        assert set(ours) == set(theirs), f"{docname}: glued names differ from the built book: run `make editions`"
        differ = [(name, ours[name], theirs[name]) for name in ours if not WALL_CLOCK.search(name)
                  and not book_context.same_glued_text(ours[name], theirs[name])]
        assert not differ, f"{docname}: glued values differ from the built book: {differ[:5]}; run `make editions`"


@pytest.mark.book
def test_the_built_chapter_pages_launch_colab_on_the_editions():
    page = (ROOT / "_build" / "html" / "chapters" / f"{CHAPTERS[1].stem}.html").read_text()
    assert f"/blob/main/notebooks/{CHAPTERS[1].name}" in page
    assert f"/blob/main/notebooks/student/{CHAPTERS[1].name}" in page
    assert not re.search(r"colab\.research\.google\.com/github/[^\"]*/chapters/", page), "a Colab link to a source"


def test_a_student_check_cell_that_uses_the_function_waits_for_it_instead_of_stopping_run_all():
    cell = nbformat.v4.new_code_cell("sl.exercises.check_f(f)\nvalue = f(2)  # uses it\nprint(value)")
    made = editions._non_stopping_check(cell)
    namespace = {"sl": type("sl", (), {"exercises": type("ex", (), {"check_f": staticmethod(lambda f, **k: False)})}),
                 "f": lambda x: (_ for _ in ()).throw(NotImplementedError("ex-9.9: f"))}
    exec(made.source, namespace)  # an unsolved stub: no exception escapes
    assert made.source.startswith("sl.exercises.check_f(f, raise_on_failure=False)\ntry:")
    assert editions._non_stopping_check(nbformat.v4.new_code_cell("x = 1")).source == "x = 1"
