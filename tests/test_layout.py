"""The package's layout is what the README says it is, and the import graph stays one-way.

If a test here fails: the README names a file or function that does not exist; a subpackage's
``__init__`` docstring misses one of its modules; a core module imports a family or the fused
door; two subpackages, or two modules anywhere, import each other (directly or in a circle); a
family imports another family; something other than the command line imports ``numpy_mamba.cli``;
or a module imports another module's private name; or a committed page links to nowhere.
"""
import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.helpers import broken_links

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "numpy_mamba"
README = (ROOT / "README.md").read_text()
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
CORE = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))


def _imports(path: Path):
    """(module imported, names imported) of every import in ``path``, as absolute module names."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def _unit(module: str):
    """'core' for numpy_mamba's top-level modules, the subpackage's name for the rest, None outside."""
    parts = module.split(".")
    if parts[0] != "numpy_mamba" or len(parts) == 1:
        return "core" if parts == ["numpy_mamba"] else None
    return parts[1] if parts[1] in SUBPACKAGES else "core"


def _is_module(name: str) -> bool:
    """Whether ``name`` (numpy_mamba.x.y) is a module or subpackage of the package."""
    path = ROOT.joinpath(*name.split("."))
    return name.startswith("numpy_mamba") and (path.with_suffix(".py").exists() or (path / "__init__.py").exists())


def _graph() -> dict:
    """{unit: set of units it imports} over every module of the package (``python -m numpy_mamba``'s
    __main__, which is the command line, aside)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "__main__.py":
            continue
        here = _unit(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for module, names in _imports(path):
            targets = {_unit(module)} | ({_unit(f"{module}.{n}") for n in names} if module == "numpy_mamba" else set())
            graph.setdefault(here, set()).update(t for t in targets if t and t != here)
    return graph


def test_every_path_the_readme_names_exists():
    paths = set(re.findall(r"`((?:numpy_mamba|tests|tutorials|figures)/[\w/.*-]*)`", README))
    assert len(paths) >= 10, "the README names almost no file: the regex or the README changed"
    missing = [p for p in paths if "*" not in p and not (ROOT / p).exists()]
    assert not missing, f"README names files that do not exist: {missing}"


@pytest.mark.parametrize("page", ["README.md", "figures/REPORT.md", "tutorials/README.md", "tutorials/INSTRUCTORS.md",
                                  "tests/student_files/README.md"])
def test_every_link_of_the_committed_pages_leads_somewhere(page):
    """If this fails, a reader clicks a link of a committed page (a heading of REPORT.md, a file, a
    heading of another page) and lands nowhere: the list says which."""
    assert not broken_links(ROOT / page), broken_links(ROOT / page)


def test_paper_to_code_names_functions_that_exist():
    rows = re.findall(r"`numpy_mamba/([\w/]+)\.py`: ([^|;]*)", README)
    assert len(rows) >= 12, "the README's paper-to-code table lost its rows"
    for module_path, names in rows:
        module = importlib.import_module("numpy_mamba." + module_path.replace("/", "."))
        for name in re.findall(r"`(\w+)`", names):
            assert hasattr(module, name), f"README: numpy_mamba/{module_path}.py has no {name}"


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_docstring_lists_exactly_its_modules(name):
    doc = importlib.import_module(f"numpy_mamba.{name}").__doc__
    assert doc and len(doc.splitlines()) >= 3, f"numpy_mamba/{name}/__init__.py needs a docstring saying what it is"
    listed = set(re.findall(r"\b(\w+)\.py\b", doc)) - {"test_" + name}    # tests/test_NAME.py is no module
    present = {p.stem for p in (PACKAGE / name).glob("*.py")}
    assert present - {"__init__"} <= listed, f"{name}/ modules missing from its docstring: {present - listed}"
    assert listed <= present, f"{name}/__init__ names modules that do not exist: {listed - present}"


def test_the_core_imports_no_subpackage():
    assert {"model", "gradients", "stack", "layer", "network"} <= set(CORE) and "fused" in SUBPACKAGES
    assert not _graph().get("core", set()), f"the core imports {_graph()['core']}"


def _assert_no_cycle(graph: dict) -> None:
    """Depth-first through ``graph`` ({node: nodes it imports}); fails naming the first cycle found."""
    done = set()

    def visit(node, path):
        assert node not in path, f"import cycle: {' -> '.join(path[path.index(node):] + [node])}"
        if node in done:
            return
        for target in sorted(graph.get(node, ())):
            visit(target, path + [node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])


def test_no_cycle_between_subpackages():
    graph = _graph()
    _assert_no_cycle(graph)
    shared = ("measure", "runs", "fused")
    below = {"measure": {"core"}, "fused": {"core"}, "runs": {"core", "measure"}}    # runs judges by measure's rules
    assert all(graph.get(name, set()) <= below[name] for name in shared), (
        f"measure and fused stand on the core only, runs on the core and measure; got "
        f"{[graph.get(name) for name in shared]}")
    families = set(SUBPACKAGES) - {*shared, "cli"}
    assert {"reproduce", "theory", "ablation", "gates", "grader"} <= families
    for family in sorted(families):
        others = graph.get(family, set()) - {"core", *shared}
        assert not others, f"the family {family} imports the families {others}"


def test_no_import_cycle_between_modules():
    """No module imports, directly or through others, a module that imports it back (inside a
    subpackage as well as between them)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        here = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for module, names in _imports(path):
            submodules = {f"{module}.{n}" for n in names if _is_module(f"{module}.{n}")}
            targets = submodules if names and len(submodules) == len(names) else submodules | {module}
            graph.setdefault(here, set()).update(t for t in targets if _is_module(t) and t != here)
    _assert_no_cycle(graph)


def test_nothing_but_the_command_line_imports_cli():
    importers = [str(path.relative_to(ROOT)) for path in list(PACKAGE.rglob("*.py")) + list((ROOT / "tutorials").rglob("*.py"))
                 if "cli" not in path.relative_to(ROOT).parts[:2] and path.name != "__main__.py"
                 and any(_unit(m) == "cli" or m.startswith("numpy_mamba.cli") for m, _ in _imports(path))]
    assert not importers, f"these import numpy_mamba.cli: {importers}"


def test_no_private_name_is_imported_across_modules():
    found = [f"{path.relative_to(ROOT)}: {module} {names}" for path in PACKAGE.rglob("*.py")
             for module, all_names in _imports(path)
             if (names := [n for n in all_names if n.startswith("_") and not n.startswith("__")])]
    assert not found, f"private names imported from another module: {found}"


EXPERIMENTS = ("reproduce", "theory", "gates", "ablation", "measure", "runs", "cli")


def _lines(paths) -> int:
    return sum(len(p.read_text().splitlines()) for p in paths)


def test_the_experiments_stay_within_the_ceiling_the_readme_states():
    """The contributor section's ratchet: the experiments' .py lines at most the README's ceiling."""
    ceiling = int(re.search(r"keeps them at most ([\d,]+) lines", README).group(1).replace(",", ""))
    lines = _lines(p for name in EXPERIMENTS for p in (PACKAGE / name).glob("*.py"))
    assert lines <= ceiling, f"the experiments are {lines} lines, above the README's ceiling {ceiling}"


def test_adding_an_experiment_reads_four_files_of_the_sizes_the_readme_gives():
    """The contributor section's sizes ("about N", in its order: experiment.py, the reproduce
    registry, the toy experiment, rules.py's vocabulary up to its intervals) within 15 % of the
    files; the toy imports from the package only the core and runs.experiment."""
    section = README[README.index("## Adding an experiment"):README.index("## Notes on the paper")]
    stated = [int(n) for n in re.findall(r"about\s+(\d+)\b(?!,)", section)][:4]
    rules = (PACKAGE / "measure" / "rules.py").read_text().splitlines()
    vocabulary = next(i for i, line in enumerate(rules) if line.startswith("# ") and "intervals" in line)
    toy = ROOT / "tests" / "toy_experiment.py"
    sizes = [_lines([PACKAGE / "runs" / "experiment.py"]), _lines([PACKAGE / "reproduce" / "__init__.py"]),
             _lines([toy]), vocabulary]
    assert len(stated) == 4 and all(abs(a - b) <= 0.15 * b for a, b in zip(stated, sizes)), (stated, sizes)
    imported = {module for module, _ in _imports(toy) if module.startswith("numpy_mamba")}
    assert imported <= {"numpy_mamba", "numpy_mamba.runs.experiment"}, imported


def test_every_rule_text_lives_in_measure_rules():
    """No constant ending in _RULE is defined outside measure/rules.py."""
    for path in PACKAGE.rglob("*.py"):
        if path != PACKAGE / "measure" / "rules.py":
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                    assert not any(n.endswith("_RULE") for n in names), (path, names)
