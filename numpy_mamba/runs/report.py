"""The report's sentences as Markdown templates: every experiment's part of REPORT.md is a ``.md``
file in its family's ``templates/`` folder, so a change of wording is an edit of that file.

A template holds named snippets, each opened by a marker line; its text runs to the next marker,
blank lines at either end dropped.  Fields are Python's format fields, filled from the results::

    <!-- snippet: head -->
    {n} models trained on the same prompts; eta = {eta:g} for every model.

    ``Template("numpy_mamba.gates", "gates.md")("head", n="Six", eta=0.02)``

A literal brace is written twice (``prod_{{j>i}}``).  A missing field or snippet is an error that
names the template, the snippet and the field: a sentence is never written half-filled.
"""
from __future__ import annotations

import re
import string
from functools import lru_cache
from importlib import resources

MARKER = re.compile(r"^<!-- snippet: ([\w-]+) -->\n", re.M)


@lru_cache(maxsize=None)
def snippets(package: str, name: str) -> dict:
    """{snippet name: text} of the template ``name`` in the ``templates`` folder of ``package``."""
    text = (resources.files(package) / "templates" / name).read_text(encoding="utf-8")
    parts = MARKER.split(text)
    if parts[0].strip():
        raise ValueError(f"{package}/templates/{name} must start with a snippet marker; got {parts[0][:60]!r}.")
    found = {}
    for key, body in zip(parts[1::2], parts[2::2]):
        if key in found:
            raise ValueError(f"{package}/templates/{name} has two snippets named {key!r}.")
        found[key] = body.strip("\n")
    return found


class Template:
    """One template file of a family: ``template(snippet, **values)`` is the snippet, filled."""

    def __init__(self, package: str, name: str):
        self.package, self.name = package, name

    def fields(self, snippet: str) -> set:
        """The names of the fields the snippet asks for."""
        return {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(self.text(snippet)) if f}

    def text(self, snippet: str) -> str:
        found = snippets(self.package, self.name)
        if snippet not in found:
            raise ValueError(f"{self.package}/templates/{self.name} has no snippet {snippet!r}; it has {sorted(found)}.")
        return found[snippet]

    def __call__(self, snippet: str, **values) -> str:
        try:
            return self.text(snippet).format_map(values)
        except KeyError as exc:
            raise ValueError(f"{self.package}/templates/{self.name}, snippet {snippet!r}, needs the field {exc}; "
                             f"given {sorted(values)}.") from None
