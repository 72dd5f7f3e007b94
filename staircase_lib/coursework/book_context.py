"""What a built book knows that its notebooks do not (reference numbers, section titles, glossary anchors,
citations, glued values), read from Sphinx's saved environment and the executed notebooks, for the notebook
editions (:mod:`staircase_lib.coursework.editions`)."""
from __future__ import annotations

import pickle
import re
from pathlib import Path

from .editions import BookContext, Target

__all__ = ["from_build", "published_at", "same_glued_text"]


def published_at(config: Path | str = "_config.yml") -> tuple[str, str]:
    """Where the book of ``config`` (a Jupyter Book ``_config.yml``) is published and where its files are: the
    GitHub Pages address of ``repository.url`` (``https://OWNER.github.io/REPO/``) and the repository's blob
    address of its branch (``https://github.com/OWNER/REPO/blob/BRANCH/``)."""
    import yaml

    repository = yaml.safe_load(Path(config).read_text())["repository"]
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)/?", repository["url"])
    if not match:
        raise ValueError(f"repository.url in {config} must be https://github.com/OWNER/REPO, got {repository['url']}")
    owner, repo = match.groups()
    return (f"https://{owner.lower()}.github.io/{repo}/",
            f"https://github.com/{owner}/{repo}/blob/{repository.get('branch', 'main')}/")


def from_build(build: Path | str, url: str, bibliography: Path | str) -> BookContext:
    """The context of the book built into ``build`` (``_build``: its ``.doctrees/environment.pickle`` and its
    ``jupyter_execute`` glued values), published at ``url``, citing the entries of ``bibliography`` (a .bib file)."""
    build = Path(build)
    pickled = build / ".doctrees" / "environment.pickle"
    if not pickled.exists():
        raise FileNotFoundError(f"no built book in {build} (no {pickled}): run `make book` first")
    with pickled.open("rb") as handle:
        env = pickle.load(handle)
    targets: dict[str, dict[str, Target]] = {"numref": {}, "eq": {}, "ref": {}, "prf": {}, "term": {}, "doc": {},
                                             "cite": {}}
    numbers = env.toc_fignumbers
    formats = env.config.numfig_format
    std = env.domaindata["std"]
    for label, (docname, labelid, title) in std["labels"].items():
        targets["ref"][label] = Target(str(title), f"{docname}.html#{labelid}")
        for figtype, found in numbers.get(docname, {}).items():
            if labelid in found and figtype in formats:
                number = ".".join(map(str, found[labelid]))
                targets["numref"][label] = Target(str(formats[figtype]) % number, f"{docname}.html#{labelid}")
    for label, (docname, labelid) in std.get("anonlabels", {}).items():
        if label not in targets["ref"]:  # a label on a paragraph: a {ref} to it must give its own text
            targets["ref"][label] = Target("", f"{docname}.html#{labelid}")
        for figtype, found in numbers.get(docname, {}).items():
            if labelid in found and figtype in formats and label not in targets["numref"]:
                number = ".".join(map(str, found[labelid]))
                targets["numref"][label] = Target(str(formats[figtype]) % number, f"{docname}.html#{labelid}")
    for label, (docname, number) in env.domaindata["math"]["objects"].items():
        node_id = f"equation-{label}"
        shown = numbers.get(docname, {}).get("displaymath", {}).get(node_id)
        text = ".".join(map(str, shown)) if shown else str(number)
        targets["eq"][label] = Target(f"({text})", f"{docname}.html#{node_id}")
    for (kind, name), (docname, labelid) in std["objects"].items():
        if kind == "term":
            targets["term"][name.lower()] = Target(str(name), f"{docname}.html#{labelid}")
    for docname, title in env.titles.items():
        targets["doc"][docname] = Target(title.astext(), f"{docname}.html")
    targets["prf"] = _proofs(env, numbers)
    targets["cite"] = _citations(Path(bibliography), env)
    glue = {docname: _glued(build / "jupyter_execute" / f"{docname}.glue.json")
            for docname in sorted(env.found_docs) if (build / "jupyter_execute" / f"{docname}.glue.json").exists()}
    return BookContext(url=url, targets=targets, glue={d: g for d, g in glue.items() if g})


def _proofs(env, numbers) -> dict[str, Target]:
    """``prf:`` labels: the kind and number the book shows (``"Definition 4"``), numbered like figures."""
    kinds = ("definition", "proposition", "theorem", "lemma", "corollary", "axiom", "remark", "conjecture",
             "criterion", "example", "property", "observation", "assumption", "notation", "algorithm")
    found: dict[str, Target] = {}
    for docname, figtypes in numbers.items():
        for kind in kinds:
            for label, number in figtypes.get(kind, {}).items():
                found[label] = Target(f"{kind.capitalize()} {'.'.join(map(str, number))}", f"{docname}.html#{label}")
    return found


def _citations(bibliography: Path, env) -> dict[str, Target]:
    """Each entry of the .bib file as author-year text ("Saxe et al., 2014"; an entry without authors by the short
    form of its title) linking to the bibliography page."""
    from pybtex.database import parse_file

    page = next((d for d in env.found_docs if d.endswith("bibliography")), None)
    found = {}
    for key, entry in parse_file(str(bibliography)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        last = [" ".join(p.last_names) for p in people]
        names = (last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2
                 else f"{last[0]} et al." if last else entry.fields.get("title", key).split(":")[0])
        names = re.sub(r"[{}]", "", names)
        year = entry.fields.get("year", "n.d.")
        found[key] = Target(f"{names}, {year}", f"{page}.html" if page else "")
    return found


def _glued(saved: Path) -> dict[str, str]:
    """The ``text/plain`` of every value glued in a chapter, by name, from the ``NAME.glue.json`` myst-nb writes
    beside the executed notebook."""
    import json

    return {name: output["data"]["text/plain"] for name, output in json.loads(saved.read_text()).items()
            if "text/plain" in output.get("data", {})}


NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?")


def same_glued_text(shipped: str, built: str) -> bool:
    """Whether two renderings of one glued value agree up to a flip of the last digit shown: the text around the
    numbers is equal and each number differs by at most one unit of its last decimal place (another CPU can round
    a value that sits on a boundary the other way)."""
    if shipped == built:
        return True
    if NUMBER.sub("#", shipped) != NUMBER.sub("#", built):
        return False
    for a, b in zip(NUMBER.findall(shipped), NUMBER.findall(built)):
        mantissa = a.split("e")[0]
        places = len(mantissa.split(".")[1]) if "." in mantissa else 0
        exponent = int(a.split("e")[1]) if "e" in a else 0
        if abs(float(a.replace(",", "")) - float(b.replace(",", ""))) > 1.0001 * 10 ** (exponent - places):
            return False
    return True
