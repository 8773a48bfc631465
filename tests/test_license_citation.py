"""An instructor may adopt the package: LICENSE is the license setup.cfg declares, and CITATION.cff
cites the package and the paper it implements.

A failure means: LICENSE names another license than setup.cfg's ``license`` (or lost its copyright
line or its grant); CITATION.cff is not valid YAML, lacks a field that CFF 1.2.0 requires
(cff-version, message, title, authors), names another version than the package's or another
license than setup.cfg's; or its reference to the paper lost the paper's arXiv id, title, year or
one of its five authors (as printed on the paper's first page).
"""
import configparser
import re
from pathlib import Path

import yaml

import numpy_mamba

ROOT = Path(__file__).resolve().parent.parent
PAPER = {"title": "Can Mamba Learn In Context with Outliers? A Theoretical Generalization Analysis",
         "arxiv": "2510.00399", "year": 2025,
         "authors": [("Li", "Hongkang"), ("Lu", "Songtao"), ("Cui", "Xiaodong"), ("Chen", "Pin-Yu"), ("Wang", "Meng")]}


def _setup_license() -> str:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg["metadata"]["license"]


def _citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def test_license_file_is_the_license_setup_cfg_declares():
    text = (ROOT / "LICENSE").read_text()
    assert _setup_license() == "MIT"
    assert text.splitlines()[0] == f"{_setup_license()} License", "LICENSE's title names another license"
    assert re.search(r"^Copyright \(c\) \d{4} \S", text, re.M), "LICENSE has no copyright line"
    assert "Permission is hereby granted, free of charge" in text, "LICENSE lost the MIT grant"


def test_citation_has_the_fields_cff_requires_and_the_package_version():
    cff = _citation()
    assert cff["cff-version"] == "1.2.0"
    assert cff["message"].strip() and cff["title"] == "numpy_mamba" and cff["type"] == "software"
    assert cff["authors"] and all("name" in a or "family-names" in a for a in cff["authors"]), cff["authors"]
    assert str(cff["version"]) == numpy_mamba.__version__, "CITATION.cff names another version than the package"
    assert cff["license"] == _setup_license(), "CITATION.cff names another license than setup.cfg"


def test_citation_references_the_paper():
    papers = [ref for ref in _citation().get("references", []) if ref.get("title") == PAPER["title"]]
    assert len(papers) == 1, "CITATION.cff does not reference the paper by its title"
    paper = papers[0]
    ids = [paper.get("doi", ""), paper.get("url", "")] + [i["value"] for i in paper.get("identifiers", [])]
    assert all(PAPER["arxiv"] in value for value in ids) and len(ids) >= 3, f"the paper's arXiv id is missing: {ids}"
    assert paper["year"] == PAPER["year"] and paper["type"] == "article"
    assert [(a["family-names"], a["given-names"]) for a in paper["authors"]] == PAPER["authors"]
