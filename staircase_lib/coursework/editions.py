"""The notebook editions of the chapters: what Colab and plain Jupyter render.

The book's chapters are MyST notebooks: directives (``:::{dropdown}``), roles (``{numref}``, ``{glue:text}``) and
labels that only the book's build resolves. Colab and Jupyter render CommonMark with ``$`` math and basic HTML,
so an edition rewrites each markdown cell into that: admonitions become titled block quotes, dropdowns
``<details>`` (folded), exercises headings, references the numbers the book shows with a link to that place in
the rendered book, glossary terms and citations links, equation labels ``\\tag{}``, and every glued number the
value the book shows. What the build knows (numbers, titles, glued values) comes from a :class:`BookContext`,
read once from a built book (:mod:`staircase_lib.coursework.book_context`) and committed beside the editions, so
an edition is a pure function of its chapter and that context. Code cells are copied unchanged (the student
edition: with stubs in place of the solutions, :func:`~staircase_lib.coursework.student.student_notebook`).
"""
from __future__ import annotations

import copy
import importlib
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .student import student_notebook

__all__ = ["BookContext", "MystSyntaxError", "RAW_MYST", "Target", "convert_markdown", "copy_student_editions",
           "edition", "read_context", "write_editions"]

DIRECTIVE = re.compile(r"^(?P<fence>:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<argument>.*?)\s*$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*?)\s*$")
CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
ROLE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<content>[^`]*)`")
LABEL_LINE = re.compile(r"^\((?P<label>[^()\s]+)\)=\s*$")
EQUATION_END = re.compile(r"^(?P<math>.*?)\$\$[ \t]*\((?P<label>[^()\s]+)\)\s*$")
EXPLICIT_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
RAW_MYST = re.compile(r"^:{3,}|\{(glue|glue:text|numref|eq|ref|term|cite|prf:ref|doc)\}`|^\([^()\s]+\)=\s*$",
                      re.MULTILINE)
"""What must never reach an edition's markdown: a directive fence, a MyST role, a label line."""
PROOF_KINDS = {"prf:definition": "Definition", "prf:proposition": "Proposition", "prf:theorem": "Theorem",
               "prf:lemma": "Lemma", "prf:corollary": "Corollary"}
PAGE_CALL = re.compile(r"\b(?:sl|staircase_lib)\.(?P<path>(?:pages\.ch\d+|chapters\.ch\d+\.page)\.[a-z_]\w*)\(")
"""A call of what a chapter's page measures (``sl.chapters.ch4.page.staircase(...)``, or by its former path
``sl.chapters.ch4.page.staircase(...)``), which the book may hide."""
PREDICT = re.compile(r"\bpredict", re.IGNORECASE)


class MystSyntaxError(ValueError):
    """A chapter uses MyST the converter does not know, or names a label, term or glued value the book lacks."""


@dataclass(frozen=True)
class Target:
    """A place in the rendered book: the text a reference shows there (``"Fig. 12"``, ``"(2.3)"``, a section
    title) and its address relative to the book's root (``"chapters/02_x.html#fig-ch2-modes"``)."""

    text: str
    href: str


@dataclass
class BookContext:
    """What the built book knows that a notebook cannot: where it is published (``url``), the targets of every
    label by role kind (``targets[kind][label]``, kinds ``numref``, ``eq``, ``ref``, ``prf``), the glossary's terms
    and the bibliography's citations (``targets["term"]``, ``targets["cite"]``), each page's title
    (``targets["doc"]``), and the glued values of every chapter (``glue[docname][name]``: the ``text/plain`` the
    book formats)."""

    url: str
    targets: dict[str, dict[str, Target]] = field(default_factory=dict)
    glue: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict:
        """A JSON-ready dict (:meth:`from_json` reads it back)."""
        return {"url": self.url,
                "targets": {kind: {label: [t.text, t.href] for label, t in sorted(found.items())}
                            for kind, found in sorted(self.targets.items())},
                "glue": {doc: dict(sorted(values.items())) for doc, values in sorted(self.glue.items())}}

    @classmethod
    def from_json(cls, data: dict) -> "BookContext":
        """The context written by :meth:`to_json`."""
        return cls(url=data["url"],
                   targets={kind: {label: Target(*pair) for label, pair in found.items()}
                            for kind, found in data["targets"].items()},
                   glue=data["glue"])

    def link(self, target: Target) -> str:
        """The absolute address of ``target`` in the published book."""
        return f"{self.url.rstrip('/')}/{target.href}"

    def target(self, kind: str, label: str, docname: str) -> Target:
        """The target of ``label`` for a role of ``kind``; a clear error naming the page when the book lacks it."""
        found = self.targets.get(kind, {}).get(label)
        if found is None:
            raise MystSyntaxError(f"{docname}: the built book has no {kind} target {label!r} (rebuild the book, then "
                                  "run `make editions`)")
        return found

    def glued(self, docname: str, key: str) -> str:
        """The text the book shows for ``{glue:text}`key``` on page ``docname`` (``key`` may end in ``:format``)."""
        from myst_nb.core.variables import format_plain_text

        name, _, spec = key.partition(":")
        values = self.glue.get(docname, {})
        if name not in values:
            raise MystSyntaxError(f"{docname}: no glued value {name!r} in the built book (rebuild the book, then run "
                                  "`make editions`)")
        return format_plain_text(values[name], spec)


# ----- markdown --------------------------------------------------------------------------------------------------
def convert_markdown(source: str, docname: str, context: BookContext) -> str:
    """A chapter's MyST markdown cell ``source`` (page ``docname``, e.g. ``"chapters/02_x"``) as CommonMark with
    ``$`` math and HTML, every role and directive resolved from ``context``."""
    return "\n".join(_convert_lines(source.split("\n"), docname, context)).strip("\n")


def _convert_lines(lines: list[str], docname: str, context: BookContext) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = CODE_FENCE.match(line)
        if fence:  # a code block: copied as it is
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence.group(1))),
                       len(lines) - 1)
            out += lines[i:end + 1]
            i = end + 1
            continue
        directive = DIRECTIVE.match(line)
        if directive:
            end = _closing_fence(lines, i, directive["fence"], docname)
            options, body_start = {}, i + 1
            while body_start < end and (option := OPTION.match(lines[body_start])):
                options[option["key"]] = option["value"]
                body_start += 1
            body = _convert_lines(lines[body_start:end], docname, context)
            out += _directive(directive["name"], directive["argument"], options, body, docname, context)
            i = end + 1
            continue
        if LABEL_LINE.match(line):
            i += 1
            continue
        equation = EQUATION_END.match(line)
        if equation:
            number = context.target("eq", equation["label"], docname).text.strip("()")
            if equation["math"].strip():
                out.append(_roles(equation["math"], docname, context))
            out += [rf"\tag{{{number}}}", "$$"]
            i += 1
            continue
        out.append(_roles(line, docname, context))
        i += 1
    return out


def _closing_fence(lines: list[str], start: int, fence: str, docname: str) -> int:
    for j in range(start + 1, len(lines)):
        stripped = lines[j].strip()
        if re.fullmatch(r":{3,}", stripped) and len(stripped) >= len(fence):
            return j
    raise MystSyntaxError(f"{docname}: the directive {lines[start]!r} is never closed")


def _directive(name: str, argument: str, options: dict[str, str], body: list[str], docname: str,
               context: BookContext) -> list[str]:
    title = _roles(argument, docname, context)
    if name == "dropdown" or (name == "admonition" and "dropdown" in options.get("class", "").split()):
        return ["<details>", f"<summary>{title or 'Details'}</summary>", "", *body, "", "</details>", ""]
    if name == "admonition":
        return _quote([f"**{title}**", "", *body])
    if name == "exercise":
        return [f"### Exercise {title}", "", *body]
    if name in PROOF_KINDS:
        label = options.get("label")
        heading = context.target("prf", label, docname).text if label else PROOF_KINDS[name]
        return _quote([f"**{heading}** ({title})." if title else f"**{heading}.**", "", *body])
    raise MystSyntaxError(f"{docname}: no notebook form for the directive {{{name}}} (teach "
                          "staircase_lib.coursework.editions one)")


def _quote(lines: list[str]) -> list[str]:
    return [f"> {line}".rstrip() for line in lines] + [""]


def _roles(text: str, docname: str, context: BookContext) -> str:
    return ROLE.sub(lambda match: _role(match["name"], match["content"], docname, context), text)


def _role(name: str, content: str, docname: str, context: BookContext) -> str:
    explicit = EXPLICIT_TARGET.match(content)
    shown, label = (explicit["text"], explicit["target"]) if explicit else (None, content)
    if name in ("glue", "glue:text"):
        return context.glued(docname, content)
    if name == "cite":
        return "; ".join(_link(context.target("cite", key.strip(), docname).text,
                               context.link(context.target("cite", key.strip(), docname)))
                         for key in content.split(","))
    kind = {"numref": "numref", "eq": "eq", "ref": "ref", "prf:ref": "prf", "term": "term", "doc": "doc"}.get(name)
    if kind is None:
        raise MystSyntaxError(f"{docname}: no notebook form for the role {{{name}}}`{content}`")
    if kind == "term":
        label = label.strip()
        found = context.target("term", label.lower(), docname)
        return _link(shown or label, context.link(found))
    if kind == "doc":
        label = str((Path(docname).parent / label).as_posix()) if not label.startswith("/") else label[1:]
        label = re.sub(r"[^/]+/\.\./", "", label)
    found = context.target(kind, label, docname)
    text = found.text
    if not text and not shown:
        raise MystSyntaxError(f"{docname}: {{{name}}}`{content}` points at a label with no title: give it a text")
    if shown:
        text = shown
        if kind == "numref":  # MyST fills {number} and %s with the bare number: "12" of "Fig. 12"
            number = found.text.rsplit(" ", 1)[-1]
            text = shown.replace("{number}", number).replace("%s", number)
    return _link(text, context.link(found))


def _link(text: str, url: str) -> str:
    return f"[{text}]({url})"


# ----- notebooks -------------------------------------------------------------------------------------------------
def edition(nb: nbformat.NotebookNode, docname: str, context: BookContext, *, student: bool = False,
            source_url: str | None = None) -> nbformat.NotebookNode:
    """The notebook edition of chapter ``nb`` (page ``docname``): markdown converted, figure captions under their
    figures, a sentence before each hidden call of the library saying what it computes (with a link to its source
    at ``source_url``, the repository's blob address), code cells unchanged. ``student``: the student edition
    (solutions replaced by stubs, a "Your prediction" cell after each exercise that asks for a prediction, checks
    that print their verdict instead of stopping "Run all")."""
    header = _first_cell(nb, docname, context, student)
    nb = student_notebook(nb, colab_url=None, note=False) if student else copy.deepcopy(nb)
    cells = [header]
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            if "remove-cell" in tags or "colab.research.google.com" in cell.source:
                continue  # the book-only badge (the first cell says where the editions are)
            title_cell = len(cells) == 1 and cell.source.lstrip().startswith("# ")
            converted = convert_markdown(cell.source, docname, context)
            cells.append(_markdown(converted, cell))
            if title_cell:
                cells[0], cells[1] = cells[1], cells[0]  # the chapter's title stays first
            if student and _asks_prediction(cell.source):
                cells.append(_new_cell(
                    "**Your prediction** (write it here before you run the code below; the instructor guide grades "
                    "these as your prediction log):\n\n*...*", f"{cell.id}-prediction", prediction=True))
            continue
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        hidden = {"remove-cell", "hide-cell", "hide-input", "remove-input"} & set(tags)
        call = PAGE_CALL.search(cell.source)
        if hidden and call and "solution" not in tags and cell.metadata.get("mystnb", {}).get("figure") is None:
            note = _call_note(call["path"], source_url)
            if note:
                cells.append(_new_cell(note, f"{cell.id}-note", call_note=True))
        if student:
            cell = _non_stopping_check(cell)
        cells.append(cell)
        figure = cell.metadata.get("mystnb", {}).get("figure")
        if figure and figure.get("caption"):
            number = context.target("numref", figure["name"], docname).text if figure.get("name") else "Figure"
            caption = convert_markdown(figure["caption"], docname, context)
            cells.append(_new_cell(f"**{number}.** {caption}", f"{cell.id}-caption", caption=True))
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb


def _markdown(source: str, like: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A markdown cell with ``source`` and the id and metadata of the chapter's cell ``like``."""
    cell = nbformat.v4.new_markdown_cell(source, metadata=copy.deepcopy(like.metadata))
    cell.id = like.id
    return cell


def _new_cell(source: str, cell_id: str, **metadata) -> nbformat.NotebookNode:
    """A markdown cell the edition adds, with a fixed id (the same edition from the same chapter, byte for byte)."""
    cell = nbformat.v4.new_markdown_cell(source, metadata=metadata)
    cell.id = cell_id
    return cell


def _first_cell(nb: nbformat.NotebookNode, docname: str, context: BookContext, student: bool) -> nbformat.NotebookNode:
    repo = context.url.rstrip("/")
    page = f"{repo}/{docname}.html"
    name = Path(docname).name
    colab = _colab_url(nb, name, student)
    if student:
        text = (f"**Student edition** of the chapter [rendered in the book]({page}): the exercise solutions are "
                "removed. **Save a copy before you work** (Colab: *File → Save a copy in Drive*; Jupyter: work in "
                "your own folder, `make lab`), then write each exercise's function where it raises "
                "`NotImplementedError`, run it, and run the check under it: a check prints its verdict and never "
                "stops *Run all*. Write each prediction in its *Your prediction* cell before you run the code.")
    else:
        text = (f"**Notebook edition** of the chapter [rendered in the book]({page}), with the same code: folded "
                "answers open on a click, and numbers and references are the book's (they link to it). The book "
                "hides some cells; here every cell runs.")
    badge = f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab})" if colab else ""
    return _new_cell(f"{badge}\n\n{text}".strip(), "edition-header", edition_header=True)


def _colab_url(nb: nbformat.NotebookNode, name: str, student: bool) -> str | None:
    for cell in nb.cells:
        match = re.search(r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/", cell.source)
        if match:
            folder = "notebooks/student" if student else "notebooks"
            return f"https://colab.research.google.com/github/{match[1]}/blob/{match[2]}/{folder}/{name}.ipynb"
    return None


def _asks_prediction(source: str) -> bool:
    return any(DIRECTIVE.match(line) and DIRECTIVE.match(line)["name"] == "exercise" for line in source.split("\n")) \
        and bool(PREDICT.search(source))


CHECK_CALL = re.compile(r"(sl\.exercises\.check_\w+\()(?P<args>[^()]*)\)")


def _non_stopping_check(cell: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A student edition's check cell: the check prints its verdict (``raise_on_failure=False``), and what the cell
    does after the check with the learner's function waits, with a message, until the function is written."""
    if not CHECK_CALL.search(cell.source):
        return cell
    cell = copy.deepcopy(cell)
    lines = CHECK_CALL.sub(lambda m: f"{m[1]}{m['args']}, raise_on_failure=False)", cell.source).split("\n")
    last_check = max(i for i, line in enumerate(lines) if "sl.exercises.check_" in line)
    rest = lines[last_check + 1:]
    if any(line.strip() and not line.strip().startswith("#") for line in rest):
        lines = lines[:last_check + 1] + [
            "try:  # this part runs your function: it waits until the function is written",
            *[f"    {line}" if line.strip() else line for line in rest],
            "except NotImplementedError as unsolved:",
            '    print(f"(skipped until you solve it: {unsolved})")']
    cell.source = "\n".join(lines)
    return cell


def _first_sentence(text: str) -> str:
    """``text`` up to its first full stop outside parentheses, without the stop."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "." and depth == 0 and (i + 1 == len(text) or text[i + 1] == " "):
            return text[:i]
    return text.rstrip(".")


def _call_note(path: str, source_url: str | None) -> str | None:
    """One sentence on what ``staircase_lib.<path>`` computes (its docstring's first sentence), with a link to its
    source; None when ``path`` is not a function of the library."""
    module_name, _, attribute = f"staircase_lib.{path}".rpartition(".")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None
    doc = inspect.getdoc(function)
    if not doc:
        return None
    summary = _first_sentence(" ".join(doc.split("\n\n")[0].split())).replace("``", "`")
    summary = re.sub(r":(?:\w+:)+`~?([^`]+)`", r"`\1`", summary)  # Sphinx roles (:data:`LADDER`) as code
    shown = f"`sl.{path}`"
    if source_url:
        file = Path(inspect.getsourcefile(function)).resolve()
        root = Path(importlib.import_module("staircase_lib").__file__).resolve().parent.parent
        shown = f"[{shown}]({source_url.rstrip('/')}/{file.relative_to(root).as_posix()})"
    return f"*The next cell calls {shown}:* {summary[0].lower() + summary[1:]}."


# ----- files -----------------------------------------------------------------------------------------------------
CONTEXT_FILE = "book_context.json"


def write_editions(sources: list[Path], out: Path, context: BookContext, source_url: str | None = None
                   ) -> list[Path]:
    """Both editions of each chapter in ``sources`` (``chapters/NN_slug.ipynb``): ``out/NN_slug.ipynb`` and
    ``out/student/NN_slug.ipynb``, and the context they were made from, ``out/book_context.json``; the paths
    written."""
    import json

    (out / "student").mkdir(parents=True, exist_ok=True)
    (out / CONTEXT_FILE).write_text(json.dumps(context.to_json(), indent=1, ensure_ascii=False) + "\n")
    written = [out / CONTEXT_FILE]
    for source in sources:
        nb = nbformat.read(source, as_version=4)
        docname = f"{source.parent.name}/{source.stem}"
        for student, folder in ((False, out), (True, out / "student")):
            made = edition(nb, docname, context, student=student, source_url=source_url)
            nbformat.write(made, folder / source.name)
            written.append(folder / source.name)
    return written


def read_context(out: Path) -> BookContext:
    """The context the editions in ``out`` were made from."""
    import json

    return BookContext.from_json(json.loads((out / CONTEXT_FILE).read_text()))


def copy_student_editions(editions: Path, work: Path) -> tuple[list[Path], list[Path]]:
    """Copy each student edition in ``editions`` into the student's own folder ``work``, never over a notebook
    that is already there (the student's work); the paths copied and the paths kept as they were."""
    work.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for notebook in sorted(editions.glob("[0-9][0-9]_*.ipynb")):
        target = work / notebook.name
        if target.exists():
            kept.append(target)
            continue
        target.write_bytes(notebook.read_bytes())
        copied.append(target)
    return copied, kept
