"""The package's layout is what the README says it is, and the core stays the paper's model.

If a test here fails, the README ("Paper to code", "Where things are") or a subpackage's
``__init__`` docstring names a file or function that does not exist (or misses one that does),
or a core module has started to import a family or to special-case an Appendix E.6 gate.
"""
import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "numpy_mamba"
README = (ROOT / "README.md").read_text()
CORE = ("data", "scan", "model", "loss", "gradients", "gradcheck", "sgd", "_checks", "_models")
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def test_every_path_the_readme_names_exists():
    paths = set(re.findall(r"`(numpy_mamba/[\w/.]*|tests/[\w/.]*|tutorials/[\w/.*]*)`", README))
    assert paths, "the README names no file: the regex or the README changed"
    missing = [p for p in paths if "*" not in p and not (ROOT / p).exists()]
    assert not missing, f"README names files that do not exist: {missing}"


def test_paper_to_code_table_names_functions_that_exist():
    rows = re.findall(r"`numpy_mamba/(\w+)\.py`: ([^|]*)", _section("Paper to code"))
    assert len(rows) >= 12, "the Paper to code table lost its rows"
    for module_name, names in rows:
        module = importlib.import_module(f"numpy_mamba.{module_name}")
        for name in re.findall(r"`([\w.]+)", names.split("; `numpy_mamba/")[0]):
            obj = module
            for part in name.split("."):
                assert hasattr(obj, part), f"README: numpy_mamba/{module_name}.py has no {name}"
                obj = getattr(obj, part)


def test_where_things_are_map_lists_every_subpackage_and_core_module():
    section = _section("Where things are")
    for name in SUBPACKAGES:
        assert f"    {name}/" in section, f"subpackage numpy_mamba/{name}/ is missing from the map"
    package_part = section[section.index("numpy_mamba/"):section.index("\ntests/")]
    listed = set(re.findall(r"\b(\w+)\.py\b", package_part))
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert top <= listed, f"top-level modules missing from the map: {sorted(top - listed)}"
    assert listed <= top, f"the map names modules that do not exist: {sorted(listed - top)}"


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_docstring_lists_exactly_its_modules(name):
    doc = importlib.import_module(f"numpy_mamba.{name}").__doc__
    assert doc and len(doc.splitlines()) >= 3, f"numpy_mamba/{name}/__init__.py needs a docstring saying what it is"
    listed = set(re.findall(r"\b(\w+)\.py\b", doc))
    present = {p.stem for p in (PACKAGE / name).glob("*.py")}
    assert present - {"__init__"} <= listed, f"{name}/ modules missing from its docstring: {present - listed}"
    assert listed <= present, f"{name}/__init__ names modules that do not exist: {listed - present}"


@pytest.mark.parametrize("core", CORE)
def test_the_core_imports_no_family(core):
    tree = ast.parse((PACKAGE / f"{core}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            target = (node.module or "").split(".")[0]
            names = [a.name for a in node.names]
            assert target not in SUBPACKAGES and not set(names) & set(SUBPACKAGES), (
                f"core module {core}.py imports the family {target or names}")


@pytest.mark.parametrize("core", CORE)
def test_the_core_has_no_branch_for_an_appendix_e6_gate(core):
    code = (PACKAGE / f"{core}.py").read_text()
    for word in ("GATES", "gla", "mamba2", "retnet", "gated_retention", "ndim == 3"):
        assert not re.search(rf"\b{re.escape(word)}\b", code), f"{core}.py mentions {word!r}"


def test_an_extension_is_accepted_only_once_registered():
    from numpy_mamba import _models
    assert "gla" in _models.model_names()                    # numpy_mamba.gates registered it
    with pytest.raises(ValueError, match="paper's models"):
        _models.register("mamba", _models.extension("gla"))
    with pytest.raises(ValueError, match="model must be one of"):
        _models.check_model("not_a_model")
