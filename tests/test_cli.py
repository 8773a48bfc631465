"""The top of the command line: ``--version``, the command table, the console command, help texts.

A failure means: ``--version`` does not print the package's version; a command in the table cannot
be imported or has no ``main``; ``numpy-mamba`` is not installed as the same entry point as
``python -m numpy_mamba``; or a command's one-line help differs from the README's table of commands.
"""
import configparser
import importlib
import re
import subprocess
import sys
from pathlib import Path

import numpy_mamba
from numpy_mamba.cli import COMMANDS, main, usage

ROOT = Path(__file__).resolve().parent.parent


def test_version_prints_the_package_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"numpy_mamba {numpy_mamba.__version__}"


def test_every_command_imports_and_has_a_main_or_a_registry():
    """If this fails, a command of the table cannot run: its module has neither a main() nor a
    COMMAND (an experiment command's registry, run by numpy_mamba.runs.command)."""
    from numpy_mamba.runs.experiment import Command
    for name, (module, doc) in COMMANDS.items():
        found = importlib.import_module(module)
        assert callable(getattr(found, "main", None)) or isinstance(getattr(found, "COMMAND", None), Command), name
        if hasattr(found, "COMMAND"):
            assert found.COMMAND.name == name, f"{module}.COMMAND runs {found.COMMAND.name!r}, not {name!r}"
        assert doc and f"  {name:<10} {doc}" in usage()


def test_console_command_is_the_same_entry_point_as_python_m():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    scripts = cfg["options.entry_points"]["console_scripts"].split()
    assert scripts == ["numpy-mamba", "=", "numpy_mamba.cli:main"], scripts
    result = subprocess.run([sys.executable, "-m", "numpy_mamba", "--help"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.returncode == 0 and "numpy-mamba COMMAND" in result.stdout


def test_help_texts_match_the_readme_table_of_commands():
    rows = re.findall(r"^\| `python -m numpy_mamba (\w+)[^`]*` \| (.+?) \|$", (ROOT / "README.md").read_text(), re.M)
    assert len(rows) >= 6, "the README's table of commands was not found"
    for name, text in rows:
        assert name in COMMANDS, f"the README lists a command {name!r} the command line does not have"
        assert COMMANDS[name][1] == text.replace("`", ""), (
            f"{name}: --help says {COMMANDS[name][1]!r}, the README {text!r}")
