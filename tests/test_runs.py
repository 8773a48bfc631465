"""Running the experiments: ``--jobs N`` (numbers independent of N), all-or-nothing output
folders, Ctrl-C, failing workers, and ``--out`` checked before anything is computed.

The interruption test starts ``python -m numpy_mamba theory|gates --quick`` in its own process
group and sends SIGINT at seeded random moments (while starting, while computing, while writing):
the output folder must hold either exactly its previous content or the complete new content.
"""
from __future__ import annotations

import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from numpy_mamba.cli import main as cli_main
from numpy_mamba.runs import command, output, runner
from numpy_mamba.runs.output import save_compact_json, save_json, write_section
from numpy_mamba.runs.runner import Unit, UnitError, check_interrupted, run_staged, run_units
from numpy_mamba.sgd import TrainConfig
from conftest import quick_run

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = {"theory": [f"theory_{n}.{e}" for n in ("convergence", "alpha", "attention", "gates", "lemmas")
                      for e in ("png", "json")] + ["theory_summary.json", "claims_theory.json", "REPORT.md"],
           "gates": ["gates.json", "gates_error_vs_alpha.png", "gates_training.png", "claims_gates.json", "REPORT.md"]}


def echo_after(value, seconds: float):
    """A unit for the tests: ``value`` after ``seconds``."""
    time.sleep(seconds)
    return value


def write_after(path: str, seconds: float) -> None:
    """A slow unit for the tests: writes ``path`` after ``seconds``, so a unit that was stopped
    leaves no file and one that was waited for leaves one."""
    time.sleep(seconds)
    Path(path).write_text("finished")


def bad_config() -> TrainConfig:
    """A unit's work that raises: Algorithm 1's settings with p_a = 1 (refused, naming p_a)."""
    return TrainConfig(T=5, p_a=1.0)


def _bad_unit() -> Unit:
    """A unit that raises in its worker (``bad_config``)."""
    return Unit("bad", "bad p_a", bad_config)


def _wait_until_gone(alive, what: str, guard: float = 30.0) -> None:
    """Poll ``alive()`` until False; the guard only keeps a broken run from hanging the suite."""
    deadline = time.monotonic() + guard
    while alive():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} still running {guard:.0f} s after the run ended")
        time.sleep(0.1)


def _plain_json(obj) -> str:
    return json.dumps(output._plain(obj), sort_keys=True)


# ------------------------------------------------------------------ parallel units
def test_results_come_back_in_unit_order_whatever_finishes_first():
    """If this fails, results are assembled in completion order: --jobs N would shuffle numbers."""
    units = [Unit(k, f"unit {k}", echo_after, (k, d)) for k, d in enumerate([0.6, 0.0, 0.3, 0.0])]
    err = io.StringIO()
    assert list(run_units(units, jobs=2, name="t", progress=err).items()) == [(k, k) for k in range(4)]
    lines = err.getvalue().splitlines()
    assert lines[0] == "[t] 4 units, 2 worker processes" and len(lines) == 5, lines
    assert re.fullmatch(r"\[t\] 4/4 units done \(unit \d\) elapsed \d+s, left ~\d+s", lines[-1]), lines[-1]


def _numbers(out: Path) -> dict:
    """Every JSON file in ``out`` without its timing fields: what must not depend on --jobs."""
    def strip(obj):
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if k not in ("seconds", "train_seconds", "timings_seconds", "jobs")}
        return [strip(v) for v in obj] if isinstance(obj, list) else obj
    return {p.name: strip(json.loads(p.read_text())) for p in sorted(out.glob("*.json"))}


@pytest.mark.parametrize("command", ["theory", "gates"])
def test_jobs_2_gives_the_same_numbers_as_jobs_1(command, request, tmp_path, monkeypatch):
    """If this fails, a unit's numbers depend on which process ran it or on the other units
    (randomness not from its own seed stream, or results assembled out of order): the quick run
    with two workers must write exactly the numbers of the session's run with one (conftest.py).
    Its figures are built but not rendered (half a quick run's time): the JSON is what is compared."""
    from matplotlib.figure import Figure
    one = request.getfixturevalue(f"{command}_quick")
    monkeypatch.setattr(Figure, "tight_layout", lambda self, *args, **kwargs: None)
    monkeypatch.setattr(Figure, "savefig", lambda self, path, *args, **kwargs: Path(path).write_bytes(b""))
    two = quick_run(command, tmp_path, jobs=2)
    assert one.code == two.code == 0
    assert _numbers(two.out) == _numbers(one.out)
    for run, jobs in ((one, 1), (two, 2)):
        timings = json.loads((run.out / f"{command}{'_summary' * (command == 'theory')}.json").read_text())["timings_seconds"]
        assert timings["workers (--jobs)"] == jobs


def _live_processes():
    """(pid, parent pid, process group) of every process that has not exited (zombies excluded), from /proc."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            yield int(stat.parent.name), int(fields[1]), int(fields[2])


def _worker_pids():
    """The worker processes: children of this process's forkserver."""
    from multiprocessing import forkserver
    return [pid for pid, parent, _ in _live_processes() if parent == forkserver._forkserver._forkserver_pid]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to list worker processes")
def test_a_failing_unit_stops_the_run_with_its_traceback_and_no_worker_left(tmp_path):
    """If this fails, a worker's error is lost, the run waits for the slow unit running beside
    the failing one (it finishes and writes its file), or workers survive the failed run."""
    bad = _bad_unit()
    slow = [Unit(k, f"slow {k}", write_after, (str(tmp_path / f"slow{k}"), 60)) for k in range(5)]
    with pytest.raises(UnitError) as info:
        run_units([slow[0], bad] + slow[1:], jobs=2, name="t", progress=False)
    message = str(info.value)
    assert "'bad p_a' failed in a worker" in message and "Traceback" in message and "ValueError" in message
    assert "p_a" in message.splitlines()[-1], "the worker's own error message must be in the report"
    _wait_until_gone(_worker_pids, "worker processes of the failed run")
    finished = sorted(p.name for p in tmp_path.iterdir())
    assert finished == [], f"the run waited for units it should have stopped: {finished}"


class _InterruptAfterFirstResult:
    """A progress stream whose first "units done" line is a Ctrl-C in the parent."""
    def write(self, text):
        if "units done" in text:
            raise KeyboardInterrupt

    def flush(self):
        pass


def test_an_interrupt_stops_the_running_units_instead_of_waiting_for_them(tmp_path):
    """If this fails, Ctrl-C lets the units already running (and those queued) finish before the
    run stops, or leaves their workers running."""
    units = [Unit("quick", "quick", abs, (-1,))] + \
            [Unit(k, f"slow {k}", write_after, (str(tmp_path / f"slow{k}"), 60)) for k in range(3)]
    with pytest.raises(KeyboardInterrupt):
        run_units(units, jobs=2, name="t", progress=_InterruptAfterFirstResult())
    _wait_until_gone(_worker_pids, "worker processes of the interrupted run")
    finished = sorted(p.name for p in tmp_path.iterdir())
    assert finished == [], f"units finished after the interrupt: {finished}"


STOP_WHILE_SENDING = """
from numpy_mamba.runs.runner import Unit, run_units
class Stop:
    def write(self, text):
        if "units done" in text:
            raise KeyboardInterrupt             # the parent is interrupted after the first result
    def flush(self):
        pass
try:
    run_units([Unit(k, str(k), bytes, (4_000_000,)) for k in range(6)], jobs=2, progress=Stop())
except KeyboardInterrupt:
    print("stopped")
"""


def test_stopping_while_workers_send_big_results_does_not_hang_at_exit():
    """If this fails, a worker killed half-way through sending a result (more than a pipe buffer)
    leaves the pool's manager thread waiting for the rest, and the process never exits."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run([sys.executable, "-c", STOP_WHILE_SENDING], capture_output=True, text=True,
                              env=env, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the interrupted run never exited (guard: 120 s)")
    assert done.returncode == 0 and done.stdout.strip() == "stopped", done.stderr
    assert "leaked" not in done.stderr, done.stderr


def test_units_that_cannot_reach_a_worker_are_refused_for_every_jobs():
    """If this fails, --jobs 1 accepts a unit that --jobs 2 cannot run (a lambda)."""
    for n in (1, 2):
        with pytest.raises(ValueError, match="'square' cannot be sent to a worker"):
            run_units([Unit(0, "square", lambda x: x * x, (2,)), Unit(1, "b", abs, (1,))], jobs=n, progress=False)


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_jobs_must_be_a_positive_whole_number(value, capsys):
    """If this fails, --jobs 0 (or -1, or a word) starts no workers or crashes with a traceback."""
    with pytest.raises(SystemExit) as info:
        cli_main(["theory", "--quick", "--jobs", value])
    assert info.value.code == 2 and "expected an integer >= 1" in capsys.readouterr().err


# ------------------------------------------------------------------ all or nothing
def _old_content(folder: Path, command: str) -> dict:
    """A previous run's folder: the command's files, another command's JSON and report section."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS[command]:
        (folder / name).write_text(f"OLD {name}\n")
    (folder / "fig2.json").write_text("OLD reproduce output\n")
    write_section(folder / "REPORT.md", "reproduce", "KEEP reproduce")
    write_section(folder / "REPORT.md", command, "OLD section")
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _check_previous_or_complete(folder: Path, command: str, before: dict) -> str:
    """'previous' or 'complete'; fails if the folder is anything in between."""
    now = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert not [n for n in now if n.startswith(runner.STAGING_PREFIX)], f"staging folder left in {folder}"
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(runner.STAGING_PREFIX)]
    if now == before:
        return "previous"
    assert set(now) == set(before), f"files added or lost: {set(now) ^ set(before)}"
    assert now["fig2.json"] == before["fig2.json"], "another command's file was touched"
    stale = [n for n in OUTPUTS[command] if now[n] == before[n]]
    assert not stale, f"a mix of old and new files: {stale} still old"
    for name in OUTPUTS[command]:
        if name.endswith(".json"):
            json.loads(now[name])
        if name.endswith(".png"):
            assert now[name][:8] == b"\x89PNG\r\n\x1a\n", name
    report = now["REPORT.md"].decode()
    assert "KEEP reproduce" in report and "OLD section" not in report and f"<!-- END {command} -->" in report
    return "complete"


def _stage_files(stage, n=3):
    for k in range(n):
        save_json(stage.dir / f"gates_{k}.json", {"k": k})
    write_section(stage.report, "gates", "NEW section")


def test_a_signal_during_the_final_moves_is_raised_after_them(tmp_path, monkeypatch, capsys):
    """If this fails, a Ctrl-C landing between two os.replace calls leaves a half-moved folder."""
    (tmp_path / "gates_0.json").write_text("OLD")
    real = os.replace
    calls = []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)
        real(src, dst)

    monkeypatch.setattr(runner.os, "replace", replace)
    assert run_staged("gates", tmp_path, _stage_files) == 130
    assert json.loads((tmp_path / "gates_2.json").read_text()) == {"k": 2} and len(calls) == 4
    assert "NEW section" in (tmp_path / "REPORT.md").read_text()
    assert "after the new results were complete and in place" in capsys.readouterr().err


def test_a_failed_move_puts_every_earlier_file_back(tmp_path, monkeypatch):
    """If this fails, an error in the middle of the final moves leaves new files beside old ones."""
    before = _old_content(tmp_path, "gates")
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(runner.os, "replace", replace)
    with pytest.raises(OSError, match="No space"):
        run_staged("gates", tmp_path, lambda stage: [(stage.dir / n).write_text("NEW") for n in OUTPUTS["gates"][:3]])
    assert _check_previous_or_complete(tmp_path, "gates", before) == "previous"


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_swallowed_interrupt_still_ends_the_run(signum, code, tmp_path, capsys):
    """If this fails, a KeyboardInterrupt caught by library code (e.g. one that lands in a
    garbage-collector callback) lets the run finish with rc 0, or SIGTERM leaves a half-written folder."""
    before = _old_content(tmp_path, "gates")

    def work(stage):
        _stage_files(stage)
        try:
            os.kill(os.getpid(), signum)
            time.sleep(1)
        except KeyboardInterrupt:
            pass                                           # swallowed, as in a __del__

    assert run_staged("gates", tmp_path, work) == code
    assert _check_previous_or_complete(tmp_path, "gates", before) == "previous"
    err = capsys.readouterr().err
    assert f"({signal.Signals(signum).name})" in err and "nothing in" in err


def test_an_interrupt_turned_into_another_error_by_a_library_is_still_an_interrupt(tmp_path, capsys):
    """If this fails, a Ctrl-C that lands inside matplotlib's renderer (which re-raises it as
    "ValueError: Invalid bounding box") ends the run with rc 1 and a traceback instead of 130."""
    before = _old_content(tmp_path, "theory")

    def work(stage):
        _stage_files(stage)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            raise ValueError("Invalid bounding box") from None      # what the renderer raised

    assert run_staged("theory", tmp_path, work) == 130
    assert _check_previous_or_complete(tmp_path, "theory", before) == "previous"
    err = capsys.readouterr().err
    assert "interrupted (SIGINT)" in err and "nothing in" in err and "Traceback" not in err


def test_an_interrupt_inside_a_destructor_prints_no_traceback(tmp_path, capsys, monkeypatch):
    """If this fails, a Ctrl-C that lands in a __del__ (or a garbage-collector callback) prints
    Python's "Exception ignored in ... Traceback" before the run stops."""
    before = _old_content(tmp_path, "theory")
    printed = []                                             # what Python's hook would print
    monkeypatch.setattr(sys, "unraisablehook", lambda u: printed.append(u.exc_type))

    class Noisy:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)                                    # the handler raises in here

    def work(stage):
        _stage_files(stage)
        Noisy()                                              # dropped at once: __del__ runs
        check_interrupted()

    assert run_staged("theory", tmp_path, work) == 130
    assert _check_previous_or_complete(tmp_path, "theory", before) == "previous"
    err = capsys.readouterr().err
    assert "interrupted (SIGINT)" in err and "Traceback" not in err and not printed, printed


def test_a_failing_unit_ends_the_command_with_its_error_and_leaves_out_as_it_was(tmp_path, capsys):
    """If this fails, a unit's error is hidden, exits 0, or leaves new files beside old ones."""
    before = _old_content(tmp_path, "gates")
    bad = _bad_unit()

    def work(stage, jobs):
        _stage_files(stage)
        run_units([Unit("ok", "ok", abs, (-1,)), bad], jobs=jobs, progress=False)

    assert run_staged("gates", tmp_path, lambda stage: work(stage, 2)) == 1
    err = capsys.readouterr().err
    assert "'bad p_a' failed in a worker" in err and "ValueError" in err and "nothing in" in err
    with pytest.raises(ValueError, match="p_a"):                 # --jobs 1: the error itself
        run_staged("gates", tmp_path, lambda stage: work(stage, 1))
    assert _check_previous_or_complete(tmp_path, "gates", before) == "previous"


def test_the_report_section_is_merged_into_the_report_as_it_is_at_the_end(tmp_path):
    """If this fails, a section another command wrote while this one ran is lost."""
    write_section(tmp_path / "REPORT.md", "gates", "OLD section")

    def work(stage):
        write_section(tmp_path / "REPORT.md", "reproduce", "written meanwhile")
        write_section(stage.report, "gates", "NEW section")

    assert run_staged("gates", tmp_path, work) == 0
    text = (tmp_path / "REPORT.md").read_text()
    assert "written meanwhile" in text and "NEW section" in text and "OLD section" not in text


# ------------------------------------------------------------------ --out checked first
def _unwritable_folders(tmp_path):
    cases = {"existing file": tmp_path / "file.txt", "below a file": tmp_path / "file.txt" / "sub"}
    (tmp_path / "file.txt").write_text("x")
    if Path("/proc").is_dir():
        cases["/proc/x"] = Path("/proc/numpy_mamba_x")
    if Path("/sys/kernel").is_dir():                       # refuses new entries even to root
        cases["read-only folder"] = Path("/sys/kernel")
    if os.name == "posix" and os.geteuid() != 0:           # root ignores permission bits
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        cases["chmod 555 folder"] = ro
        cases["below a chmod 555 folder"] = ro / "new"
    return cases


COMMANDS = ("reproduce", "theory", "gates", "ablation")


@pytest.mark.parametrize("name", COMMANDS)
def test_an_unwritable_out_is_a_one_line_error_before_any_computing(name, tmp_path, monkeypatch, capsys):
    """If this fails, --out is found unwritable only after the experiments ran (or with a traceback)."""
    def computing(*args, **kwargs):
        raise AssertionError("computing started before --out was checked")

    monkeypatch.setattr(command, "compute", computing)
    cases = _unwritable_folders(tmp_path)
    assert len(cases) >= 4
    for case, out in cases.items():
        assert cli_main([name, "--quick", "--out", str(out)]) == 2, case
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"{name}: error: ") and str(out) in err[0], (case, err)
    assert not list(tmp_path.glob(f"**/{runner.STAGING_PREFIX}*")) and (tmp_path / "file.txt").read_text() == "x"


def test_the_report_folder_is_checked_too(tmp_path, monkeypatch, capsys):
    """If this fails, an unwritable --report is found out after the computing."""
    monkeypatch.setattr(command, "compute", lambda *a, **k: pytest.fail("computing started"))
    (tmp_path / "file.txt").write_text("x")
    assert cli_main(["theory", "--out", str(tmp_path / "out"), "--report", str(tmp_path / "file.txt" / "R.md")]) == 2
    assert "--report" in capsys.readouterr().err and not (tmp_path / "out").exists(), "a folder it made was left"


# ------------------------------------------------------------------ Ctrl-C on the real commands
def _group_alive(pgid: int) -> bool:
    """Any process of the group that has not exited (a zombie has; init reaps it)."""
    if Path("/proc/self/stat").exists():
        return any(group == pgid for _, _, group in _live_processes())
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _interrupted_run(command: str, folder: Path, event: str, delay: float, whole_group: bool) -> dict:
    """Run the command; ``delay`` s after the first stderr line matching ``event``, send SIGINT."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    argv = ["numpy_mamba", command, "--quick", "--jobs", "2", "--out", str(folder)]
    # as from a terminal, even when these tests run in a background job (which ignores SIGINT)
    start = (f"import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             f"sys.argv = {argv!r}; runpy.run_module('numpy_mamba', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", start], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, env=env, start_new_session=True)
    sent, lines = [], []

    def interrupt():
        if proc.poll() is None:
            (os.killpg if whole_group else os.kill)(proc.pid, signal.SIGINT)
            sent.append(True)

    timer = None
    for line in proc.stderr:
        lines.append(line.rstrip())
        if timer is None and re.search(event, line):
            timer = threading.Timer(delay, interrupt)
            timer.start()
    try:
        rc = proc.wait(timeout=120)                      # a guard against hanging the suite
    except subprocess.TimeoutExpired:
        rc = "still running 120 s after its stderr closed"
    finally:
        if timer:
            timer.cancel()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _wait_until_gone(lambda: _group_alive(proc.pid), f"processes of the interrupted {command} run")
    return {"rc": rc, "stderr": lines, "sent": sent}


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGINT to a group are POSIX")
def test_ctrl_c_at_random_moments_leaves_the_previous_or_the_complete_results(tmp_path):
    """If this fails, an interrupted run left a mixed or partial folder, a staging folder, a
    process behind, a swallowed interrupt (rc 0 with old files) or no message.  That a Ctrl-C
    stops the units still running rather than waiting for them is
    test_an_interrupt_stops_the_running_units_instead_of_waiting_for_them."""
    rng = random.Random(14)
    scenarios = [  # (command, event on stderr, delay range, SIGINT to the whole group?)
        ("gates", r"\] \d+ units, ", 0.6, True),                # pool starting, first units
        ("gates", r"3/\d+ units done", 0.6, False),             # training; parent only
        ("gates", r"writing JSON", 2.5, True),                   # writing, or just after the end
        ("theory", r"5/\d+ units done", 1.0, True),             # computing
        ("theory", r"writing JSON", 4.0, True),              # writing, or just after the end
    ]
    befores = {k: _old_content(tmp_path / f"run{k}" / "out", command) for k, (command, *_) in enumerate(scenarios)}
    delays = [rng.uniform(0, top) for _, _, top, _ in scenarios]
    with ThreadPoolExecutor(len(scenarios)) as pool:
        runs = list(pool.map(lambda k: _interrupted_run(scenarios[k][0], tmp_path / f"run{k}" / "out",
                                                          scenarios[k][1], delays[k], scenarios[k][3]),
                             range(len(scenarios))))
    for k, ((command, event, *_), r) in enumerate(zip(scenarios, runs)):
        where = f"{command} interrupted after {event!r}: rc {r['rc']}, stderr tail {r['stderr'][-3:]}"
        state = _check_previous_or_complete(tmp_path / f"run{k}" / "out", command, befores[k])
        if r["rc"] in (0, -signal.SIGINT):    # finished; or the SIGINT came as the interpreter exited
            assert state == "complete", where
            continue
        assert r["rc"] == 130, where
        assert r["sent"], f"rc 130 without a SIGINT: {where}"
        last = r["stderr"][-1]
        assert re.fullmatch(rf"{command}: interrupted \(SIGINT\)( (before|after) .*)?", last), where
        assert not [l for l in r["stderr"] if "Traceback" in l], f"a traceback on Ctrl-C: {where}"
        if " before " in last or " after " in last:
            assert state == ("previous" if " before " in last else "complete"), where


def test_compact_json_keeps_the_content_and_refuses_nan(tmp_path):
    """If this fails, putting innermost number lists on one line changed a value, a string that
    looks like a list, or an empty list; or a NaN was written instead of refused."""
    obj = {"a": [[1, 2.5e-3, None], [3, -4]], "b": {"c": [0.1]}, "s": ["x", "[1]"], "e": []}
    path = save_compact_json(tmp_path / "r.json", obj)
    assert json.loads(path.read_text()) == obj and "[1, 0.0025, null]" in path.read_text()
    with pytest.raises(ValueError, match="NaN"):
        save_compact_json(tmp_path / "bad.json", {"x": float("nan")})


# ------------------------------------------------------------------ the results table
def _row(key, claim="a claim", rule="r", headline=None, where="holds: everywhere"):
    return {"key": key, "claim": claim, "paper": "p", "ours": "o", "level": "full", "verdict": "holds", "where": where,
            "rule": rule, "see": [["fig.png", "fig.png"]], "detail": "numbers", "headline": headline}


def test_the_results_table_opens_the_report_and_links_every_row(tmp_path):
    """If this fails, the results section is not the first section of REPORT.md whatever order the
    commands ran in, a row loses its figure or detail link, or a rule is written more than once."""
    from numpy_mamba.runs.claims import anchor, save_claims, write_results
    report = tmp_path / "REPORT.md"
    write_section(report, "theory", "## Theory\nbody")
    save_claims(tmp_path, "theory", [_row("t1", "Thm 1: a claim", headline=("slope", "1", "1.03"))], {"r": "a rule"}, False)
    save_claims(tmp_path, "gates", [_row("g1", "Ours: gates")], {"r": "a rule"}, True, headlines=[("x", "n/a", "0.5")])
    write_results(report, tmp_path)
    write_section(report, "gates", "## Gates\nbody")                     # a section written after the appendix
    text = report.read_text()
    assert text.index("<!-- BEGIN results -->") < text.index("<!-- BEGIN theory -->"), "the table comes first"
    assert text.index("<!-- BEGIN gates -->") < text.index("<!-- BEGIN appendix -->"), "the appendix stays last"
    assert text.index("## Summary") < text.index("| Thm 1: a claim") < text.index('name="rule-r"'), \
        "summary, then the table; the rules below the results"
    assert "| Thm 1: a claim | p | o | **holds** ([r](#rule-r)) | holds: everywhere | [fig.png](fig.png), [detail]" \
           "(#thm-1-a-claim) |" in text
    assert "Ours: gates (SMOKE RUN)" in text and text.count('name="rule-r"') == 1
    assert anchor("### Figure 2 in numbers") == "#figure-2-in-numbers" and anchor("Thm 1: a (b)") == "#thm-1-a-b"
    found = json.loads((tmp_path / "claims_gates.json").read_text())
    assert found["headlines"] == [["x", "n/a", "0.5"]]


def test_the_results_table_refuses_long_cells_and_unknown_rules(tmp_path):
    """If this fails, a cell a reader sees as longer than 200 characters reaches the first screen (a
    link counts by its text, not its target), or a row cites a rule that is written nowhere."""
    from numpy_mamba.runs.claims import save_claims, section
    with pytest.raises(ValueError, match="cite rules"):
        save_claims(tmp_path, "theory", [_row("t1", rule="nowhere")], {"r": "a rule"}, False)
    with pytest.raises(ValueError, match="command must be one of"):
        save_claims(tmp_path, "nothing", [], {}, False)
    long = {"theory": {"quick": False, "rows": [_row("t1", where="x" * 201)], "rules": {"r": "a rule"}, "notes": {}}}
    with pytest.raises(ValueError, match="201 characters"):
        section(long)
    links = {"theory": {"quick": False, "rows": [_row("t1", where=f"[{'x' * 150}](#{'y' * 200})")], "rules": {}, "notes": {}}}
    assert "x" * 150 in section(links)


def test_headline_numbers_end_a_command_above_its_verdict_counts(tmp_path, capsys):
    """If this fails, a command's closing lines lose its headline numbers (paper against ours) or put
    them below the verdict counts."""
    rows = [_row("t1", headline=("Thm 1: slope", "1", "1.03")), _row("t2")]
    command.print_summary("theory", {"rows": rows, "heads": [("Thm 1: slope", "1", "1.03")]}, tmp_path, 1.5)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "theory: Thm 1: slope: paper 1, ours 1.03" and lines[1] == "theory: 2 verdicts: 2 holds"


# ------------------------------------------------------------------ heap padding (runner.keep_heap_padding)
HEAP = r"""
import ctypes, sys
from numpy_mamba.runs.runner import keep_heap_padding
libc = ctypes.CDLL(None)
libc.sbrk.restype, libc.sbrk.argtypes = ctypes.c_void_p, (ctypes.c_ssize_t,)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
took = keep_heap_padding() if sys.argv[1] == "pad" else None
start = libc.sbrk(0)
blocks = [libc.malloc(64 << 10) for _ in range(160)]      # 10 MiB of a step's arrays, on the heap
for block in blocks[::-1]:
    libc.free(block)
print(took, (libc.sbrk(0) - start) >> 20)                # MiB the heap keeps once they are freed
"""


@pytest.mark.parametrize("mode", ["pad", "default"])
def test_heap_padding_keeps_a_freed_steps_pages(mode):
    """If this fails, keep_heap_padding no longer reaches glibc's malloc: every training step's
    arrays go back to the system when freed and are faulted in again at the next step."""
    done = subprocess.run([sys.executable, "-c", HEAP, mode], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    took, kept = done.stdout.split()
    if mode == "pad":
        assert took == "True" and int(kept) >= 32, done.stdout
    else:
        assert int(kept) < 8, f"glibc kept {kept} MiB without the padding: the test no longer tells them apart"


LARGE = r"""
import resource, sys
import numpy as np
from numpy_mamba.runs.runner import keep_heap_padding
keep_heap_padding()                                       # first, as a worker does when it starts
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    a = np.ones(1 << 19)                                  # a step's 4 MiB array, made and freed
    del a
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_heap_padding_keeps_large_arrays_on_the_heap():
    """If this fails, a step's arrays of a few MiB get fresh zeroed pages from the system each time
    (one page fault per 4 KiB): M_TOP_PAD alone freezes glibc's adaptive mmap threshold, so the
    padding must set the threshold too.  Counted in page faults, not time: 50 arrays of 4 MiB were
    25,700 faults with M_TOP_PAD alone (the ablation ran 12 % slower), 0 with both settings."""
    done = subprocess.run([sys.executable, "-c", LARGE], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    assert int(done.stdout) < 1000, f"{done.stdout.strip()} page faults for 50 arrays of 4 MiB; {done.stderr[-300:]}"


def test_heap_padding_does_nothing_outside_glibc(monkeypatch):
    monkeypatch.setattr(runner.platform, "libc_ver", lambda: ("", ""))
    assert runner.keep_heap_padding() is False


def _dies() -> None:
    """A unit whose worker process ends at once, as a crash would."""
    os._exit(3)


def test_a_worker_that_dies_is_named_with_its_unit_and_no_worker_is_left():
    """If this fails, a worker process that ends (a crash, the OOM killer) hangs the run or is
    reported without the unit it was running."""
    with pytest.raises(UnitError, match=r"a worker process died while running one of the units .*'dies'"):
        run_units([Unit("dies", "dies", _dies), Unit("slow", "slow", echo_after, (1, 30))], jobs=2, progress=False)
    _wait_until_gone(_worker_pids, "worker processes of the run whose worker died")
