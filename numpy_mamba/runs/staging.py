"""All-or-nothing output folders for the experiment commands (``reproduce``, ``theory``, ``gates``).

All or nothing: a command checks that ``--out`` can be written before it computes anything,
writes every file into a hidden staging folder inside ``--out`` (same filesystem), and only at
the end moves the finished files into place, merging its REPORT.md section into the report as
it is at that moment.  A run that fails or is interrupted leaves ``--out`` as it was:

    def work(stage):                                   # stage.dir: write files under their final names
        results = run_units(units, jobs=args.jobs, name="gates")
        save_json(stage.dir / "gates.json", results)
        write_section(stage.report, "gates", markdown)
    return run_staged("gates", out, work)              # exit code: 0, 1, 2 (bad --out), 130 (Ctrl-C)
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from .interrupts import Interrupted, check_interrupted, handle_interrupts, interrupts_held, received_signal
from .jobs import UnitError
from .output import REPORT_TITLE, SECTION, merge_section


STAGING_PREFIX = ".partial-"


class OutputError(Exception):
    """``--out`` (or ``--report``) cannot be written; found before anything is computed."""


class Staging:
    """A hidden folder inside ``out`` that collects one command's files until ``commit``.

    Creating it is the check that ``out`` can be created and written, so do it before computing.
    ``stage.dir``: write every output file here under its final name (flat, no subfolders).
    ``stage.report``: write REPORT.md sections here (``write_section``); ``commit`` merges them
    into ``report`` (default OUT/REPORT.md) as it is at that moment, keeping every other section.
    """

    def __init__(self, out, command: str, report=None):
        self.out, self.command, self.committed = Path(out), command, False
        self.target = self.out / "REPORT.md" if report is None else Path(report)
        self.dir = None
        self._made: list[Path] = []                     # folders made here, deepest first
        try:
            self._make_folder(self.out, "--out")
            self.dir = Path(self._writable(lambda: tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{command}-",
                                                                   dir=self.out), f"--out {self.out}"))
            if self.target.exists() and not self.target.is_file():
                raise OutputError(f"the report {self.target} exists and is not a file")
            if self.target.parent != self.out:
                self._make_folder(self.target.parent, "--report")
                fd, probe = self._writable(lambda: tempfile.mkstemp(prefix=STAGING_PREFIX, dir=self.target.parent),
                                           f"the folder of the report {self.target}")
                os.close(fd)
                os.unlink(probe)
        except OutputError:
            self.discard()
            raise
        self.report = self.dir / "REPORT.md"

    @staticmethod
    def _writable(make, what: str):
        try:
            return make()
        except OSError as exc:
            raise OutputError(f"{what} is not writable ({exc.strerror})") from None

    def _make_folder(self, path: Path, what: str) -> None:
        try:
            if path.exists() and not path.is_dir():
                raise OutputError(f"{what} {path} exists and is not a folder")
            missing = [p for p in (path, *path.parents) if not p.exists()]
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{what} {path} cannot be created ({exc.strerror})") from None
        self._made = missing + self._made

    def _remove_made(self) -> None:
        for folder in self._made:
            try:
                folder.rmdir()                          # only if empty: never another run's files
            except OSError:
                pass
        self._made = []

    def commit(self) -> list[Path]:
        """Move every staged file into ``out`` (os.replace: same filesystem) and merge the staged
        report sections; a signal arriving meanwhile is raised afterwards, an error restores
        the files replaced so far.  Returns the final paths."""
        check_interrupted()
        with interrupts_held():
            files = sorted(p for p in self.dir.iterdir() if p != self.report)
            if any(not p.is_file() for p in files):
                raise ValueError(f"{self.command} staged a folder; only files can be moved: {files}")
            previous, done = self.dir / ".previous", []
            previous.mkdir()
            merged = self.target.parent / f"{self.dir.name}-{self.target.name}"   # same filesystem as the report
            try:
                for path in files:
                    done.append(self._replace(path, self.out / path.name, previous))
                if self.report.exists():
                    text = self.target.read_text() if self.target.exists() else REPORT_TITLE
                    for name, markdown in SECTION.findall(self.report.read_text()):
                        text = merge_section(text, name, markdown)
                    merged.write_text(text)
                    if self.target.exists():
                        shutil.copymode(self.target, merged)
                    done.append(self._replace(merged, self.target, previous))
            except BaseException:
                for dest, backup in reversed(done):
                    os.replace(backup, dest) if backup else dest.unlink()
                merged.unlink(missing_ok=True)
                raise
            self.committed = True
            self.discard()
        check_interrupted()
        return [dest for dest, _ in done]

    @staticmethod
    def _replace(src: Path, dest: Path, previous: Path):
        backup = None
        if dest.is_file():                              # keep the old file until the commit is done
            backup = previous / f"{len(list(previous.iterdir()))}-{dest.name}"
            try:
                os.link(dest, backup)
            except OSError:
                shutil.copy2(dest, backup)
        os.replace(src, dest)
        return dest, backup

    def discard(self) -> None:
        """Remove the staging folder (and, unless committed, the folders this run created)."""
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        if not self.committed:
            self._remove_made()


def run_staged(command: str, out, work, *, report=None, stream=None) -> int:
    """Check ``out``, run ``work(stage)`` (it writes into ``stage.dir`` / ``stage.report``), commit.

    Ctrl-C or SIGTERM anywhere, a failing unit or any error leaves ``out`` as it was and says so
    on stderr.  Returns the exit code: 0 done, 1 a unit failed, 2 ``out`` cannot be written,
    130 (128 + signal) interrupted; other exceptions propagate after the clean-up."""
    err = sys.stderr if stream is None else stream
    stage = None

    def unchanged(what: str) -> str:
        if stage is not None and stage.committed:
            return f"{command}: {what} after the new results were complete and in place in {out}"
        return f"{command}: {what} before its results were complete: nothing in {out} was changed"

    def clean_up():
        with interrupts_held():                             # a second Ctrl-C cannot cut this short
            if stage is not None:
                stage.discard()

    with handle_interrupts():
        try:
            stage = Staging(out, command, report)
            work(stage)
            stage.commit()
        except OutputError as exc:
            print(f"{command}: error: {exc}", file=err)
            return 2
        except KeyboardInterrupt as exc:
            clean_up()
            print(unchanged(f"interrupted ({exc or 'SIGINT'})"), file=err)
            return exc.exit_code if isinstance(exc, Interrupted) else 130
        except UnitError as exc:
            clean_up()
            print(f"{command}: error: {exc}\n{unchanged('stopped')}", file=err)
            return 1
        except BaseException:
            clean_up()
            signum = received_signal()
            if signum is not None:     # the interrupt surfaced in a library as another error, e.g.
                # matplotlib's renderer turned it into "ValueError: Invalid bounding box"
                print(unchanged(f"interrupted ({signal.Signals(signum).name})"), file=err)
                return 128 + signum
            print(unchanged("failed"), file=err)
            raise
    return 0
