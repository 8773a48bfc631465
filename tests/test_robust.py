"""The command line fails loudly: every number goes through an argparse type from
numpy_mamba/runs/args.py, so a bad value is a usage error (exit 2, no traceback), and a training
run that diverges or collapses exits 1 with a one-line error instead of printing a "result"."""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from numpy_mamba.cli import bench, train
from numpy_mamba.runs import args


@pytest.mark.parametrize("fn,good,bad", [
    (args.positive_int, {"1": 1, "64": 64, " 7 ": 7}, ["0", "-1", "2.5", "1e3", "x", ""]),
    (args.nonnegative_int, {"0": 0, "12": 12}, ["-1", "-5", "0.0", "nan"]),
    (args.positive_float, {"0.1": 0.1, "1e-3": 1e-3, "5": 5.0}, ["0", "-1", "-0.0", "nan", "inf", "0.1x"]),
    (args.nonnegative_float, {"0": 0.0, "2.5": 2.5}, ["-1e-9", "inf", "nan", "a"]),
    (args.probability, {"0": 0.0, "0.6": 0.6}, ["1", "1.0", "-0.1", "nan", "half"]),
])
def test_argument_types_accept_and_refuse(fn, good, bad):
    # If this fails, a type lets a negative or non-finite number through to the computation (or
    # refuses a valid one); its error must quote the text received and say what was expected.
    for text, value in good.items():
        assert fn(text) == value and type(fn(text)) is type(value)
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=f"expected .*; got {text!r}"):
            fn(text)


@pytest.mark.parametrize("module,argv,message", [
    (train, ["--eta", "-1"], "argument --eta: expected a positive finite number; got '-1'"),
    (train, ["--eta", "nan"], "argument --eta: expected a positive finite number; got 'nan'"),
    (train, ["--steps", "-1"], "argument --steps: expected an integer >= 0; got '-1'"),
    (train, ["--seed", "-1"], "argument --seed: expected an integer >= 0; got '-1'"),
    (train, ["--batch", "0"], "argument --batch: expected an integer >= 1; got '0'"),
    (bench, ["--repeat", "0"], "argument --repeat: expected an integer >= 1; got '0'"),
    (bench, ["--repeat", "-3"], "argument --repeat: expected an integer >= 1; got '-3'"),
])
def test_bad_numbers_are_usage_errors(module, argv, message, capsys):
    # If this fails, a bad number (`train --eta -1`, `--steps -1`, `--seed -1`) ends in a traceback
    # or a computation instead of a usage error that quotes the value and says what was expected.
    with pytest.raises(SystemExit) as info:
        module.main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "usage:" in err and message in err, err


@pytest.mark.parametrize("argv,words", [
    (["--eta", "1e6", "--steps", "20"],                         # every gate underflows: F = 0
     ["training collapsed at step 1", "underflowed to 0", "eta = 1e+06"]),
    (["--eta", "1e3", "--steps", "100", "--batch", "8", "--model", "linear_transformer"],
     ["training diverged at step", "beyond the divergence bound", "smaller step size than eta = 1000"]),
])
def test_failed_training_exits_1_with_one_line(argv, words, capsys):
    # If this fails, a training run that collapsed (`train --eta 1e6`: loss 1.000, error 1.000) or
    # diverged reports a result and exits 0 instead of one line of error and exit code 1.
    assert train.main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("python -m numpy_mamba train: error: "), err
    for word in words:
        assert word in err, (word, err)


def test_collapse_exits_1_without_a_traceback_from_the_shell(tmp_path):
    # If this fails, `python -m numpy_mamba train` shows a collapse as a traceback or exit code 0.
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    run = subprocess.run([sys.executable, "-m", "numpy_mamba", "train", "--eta", "1e6", "--steps", "5"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr and "gate" in run.stderr, run.stderr
