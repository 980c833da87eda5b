"""Step 3 of grading: the learner's process and the pipe to it - one owner for its whole life.

`Channel` starts the process (inside the walls of isolation.py, running learner/server.py; forked
from the fork server of forkserver.py, which imported torch once, where the platform allows),
carries frames both ways, and kills it and cleans up after it. It also keeps the two clocks:

- `allow(seconds)`: the budget of what runs next (a cell, an item), in CPU seconds of the learner's
  process (every thread; read from /proc), so an honest, slow answer on a busy laptop or a CI
  machine running two test workers is not cut off by time it spent waiting for a core. An
  infinite loop burns CPU and ends at the budget; a process that waits without working (sleep,
  a blocked read) ends at WALL_FACTOR times the budget of wall-clock time. Where /proc cannot
  tell (not Linux), the budget is wall-clock time. The checks' own work in the grader never counts.
- `deadline`: when the notebook's whole grading must end, everything included. A wait that runs
  into it raises `NotebookTimeout` instead of `Timeout`.

Frames: frames.py. Standard library only: importing it is cheap.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import ROOT
from .forkserver import ForkServerError, LearnerProcess, fork_server, fork_server_usable, spec_for
from .errors import LearnerDied, NotebookTimeout, ProtocolError, SandboxError, Timeout
from .frames import FRAME
from .isolation import Limits, become_subreaper, confine, open_temp_dir, sandbox_uid, sweep, topmost

#: A budget of CPU seconds also ends after this many times as much wall-clock time (a waiting process).
WALL_FACTOR = 4.0
#: How often a wait looks at the learner's CPU time (seconds).
POLL_S = 0.1
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads) process `pid` has used; None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()   # after the command name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / _TICKS     # utime, stime: fields 14 and 15 of proc(5)
    except (OSError, IndexError, ValueError):
        return None


# The learner's process runs the server of this very course (`course`, which the namespace keeps
# reachable), whatever an isolated interpreter would find first on its own path (an editable
# install of another checkout, a wheel in site-packages).
SERVER = ("import sys; sys.path.insert(0, {root!r}); import runpy; "
          "runpy.run_module('course_tools.grader.learner.server', run_name='__main__', alter_sys=True)")


def _cannot_start(why: str, isolating: bool) -> str:
    return ("cannot start the isolated learner process: " + why
            + (". As root the grader needs to create mount and network namespaces (a container "
               "needs --cap-add SYS_ADMIN, or run the grader as an ordinary user)" if isolating else ""))


class Channel:
    """One learner process: `start`, `exchange` payloads, `kill` (the next `start` is a fresh one), `close`."""

    def __init__(self, submission: Path | None, limits: Limits | None = None, hide=(),
                 deadline: float = float("inf")):
        self.limits = limits or Limits()
        self.hide = [Path(os.path.realpath(h)) for h in hide]
        self.deadline = deadline       # when the notebook's whole grading must end (time.monotonic)
        self.budget = float("inf")     # CPU seconds the learner's process may still take (see `allow`)
        self._cpu_limit: float | None = None   # the learner's CPU time at which the current wait ends
        self.uid = sandbox_uid()
        self.dir = Path(tempfile.mkdtemp(prefix="course-grade-", dir=open_temp_dir()))
        os.chmod(self.dir, 0o700)
        if submission is not None:
            shutil.copyfile(submission, self.dir / "submission.ipynb")
        for sub in ("home", "tmp"):
            (self.dir / sub).mkdir()
        if self.uid is not None:
            for path in (self.dir, *self.dir.rglob("*")):
                os.chown(path, self.uid, self.uid)
        self.proc: subprocess.Popen | LearnerProcess | None = None
        become_subreaper()

    # ------------------------------------------------------------ the clocks
    def allow(self, seconds: float) -> None:
        """What runs next may keep the learner's process busy for `seconds`."""
        self.budget = seconds

    def exchange(self, payload: bytes) -> bytes:
        """Send one request, return its reply; within the budget and before the deadline."""
        if not self.alive:
            raise LearnerDied("the learner's process is not running")
        budget, started, cpu_started = max(self.budget, 0.0), time.monotonic(), self._cpu()
        if cpu_started is None:                                      # wall-clock time only
            own_limit, self._cpu_limit = started + budget, None
        else:
            own_limit, self._cpu_limit = started + WALL_FACTOR * budget, cpu_started + budget
        deadline = min(own_limit, self.deadline)
        try:
            self._send(payload, deadline)
            return self._receive(deadline)
        except Timeout:
            if self.deadline < own_limit and time.monotonic() >= self.deadline:
                raise NotebookTimeout() from None
            raise
        finally:
            cpu_now = self._cpu() if cpu_started is not None else None
            self.budget -= (cpu_now - cpu_started) if cpu_now is not None else time.monotonic() - started
            self._cpu_limit = None

    def _cpu(self) -> float | None:
        return cpu_seconds(self.proc.pid) if self.proc is not None else None

    def _over_cpu_budget(self) -> bool:
        if self._cpu_limit is None:
            return False
        used = self._cpu()
        return used is not None and used > self._cpu_limit

    # ------------------------------------------------------------ the process
    def _needed(self) -> list[Path]:
        """What the sandbox uid must reach: its folder, the course, the environment, Python."""
        return topmost([self.dir, ROOT.resolve(), Path(os.path.realpath(sys.prefix)),
                        Path(os.path.realpath(sys.base_prefix))])

    def _preflight(self) -> None:
        """As root: every needed folder other than its own must be open to other users, since
        the learner runs as a uid of its own (closed folders *above* them are handled)."""
        for path in self._needed():
            if path != self.dir and (os.stat(path).st_mode & 0o005) != 0o005:
                raise SandboxError(
                    f"{path} is readable only by its owner (mode {os.stat(path).st_mode & 0o777:o}); as "
                    f"root the grader runs the learner's code as an unprivileged uid, which must read "
                    f"it. Fix: chmod o+rX {path} (folders above it may stay closed).")

    def start(self) -> None:
        limits, uid = self.limits, self.uid
        needed = self._needed() if uid is not None else []
        if uid is not None:
            self._preflight()
        hide = [h for h in self.hide if h.is_dir() and h != Path("/") and
                not any(k == h or h in k.parents or k in h.parents for k in needed)]
        course = ROOT.resolve()
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        why_r, why_w = os.pipe()   # the child's reason when isolating it fails
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.dir / "home"), "TMPDIR": str(self.dir / "tmp"),
               "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(self.dir / "tmp"),
               "IPYTHONDIR": str(self.dir / "tmp"), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "TQDM_DISABLE": "1", "COURSE_GRADE_FDS": f"{to_child_r},{from_child_w}"}
        debug = bool(os.environ.get("COURSE_GRADE_DEBUG"))
        if fork_server_usable():
            self._start_forked(env, (to_child_r, from_child_w, why_r, why_w),
                               spec_for(self.dir, env, limits, uid, needed, course, hide, debug), debug)
            return
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", SERVER.format(root=str(course))], cwd=self.dir, env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=None if debug else subprocess.DEVNULL,
                start_new_session=True, pass_fds=(to_child_r, from_child_w),
                preexec_fn=lambda: confine(limits, uid, needed, course, hide, why_w))
        except (subprocess.SubprocessError, OSError) as error:
            os.close(why_w)
            why = os.read(why_r, 4096).decode(errors="replace")
            os.close(why_r)
            for fd in (to_child_r, from_child_w, self._to_child, self._from_child):
                os.close(fd)
            raise SandboxError(_cannot_start(why or f"{type(error).__name__}: {error}", bool(why))) from None
        os.close(why_w)
        os.close(why_r)
        os.close(to_child_r)
        os.close(from_child_w)

    def _start_forked(self, env: dict, fds: tuple[int, int, int, int], spec: dict, debug: bool) -> None:
        """The learner's process from the fork server (forkserver.py): the same walls, put up in
        the child before the learner server runs; torch already imported."""
        to_child_r, from_child_w, why_r, why_w = fds
        base = {k: v for k, v in env.items() if k in ("PATH", "LANG", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        for attempt in (1, 2):   # a fork server that ended (killed by a learner as the same user) is started again
            try:
                self.proc = fork_server(dict(base, HOME="/", TMPDIR="/tmp"), debug).spawn(
                    (to_child_r, from_child_w, why_w), spec, timeout=120)
                break
            except ForkServerError as error:
                if attempt == 2:
                    for fd in (to_child_r, from_child_w, why_r, why_w, self._to_child, self._from_child):
                        os.close(fd)
                    raise SandboxError(_cannot_start(str(error), False)) from None
        for fd in (to_child_r, from_child_w, why_w):
            os.close(fd)
        # The child closes its end of `why` once its walls stand, or dies writing why they do not.
        with os.fdopen(why_r, "rb") as pipe:
            ready, _, _ = select.select([pipe], [], [], 60)
            why = pipe.read().decode(errors="replace") if ready else ""
        if why:
            self.kill()                                   # (closes the pipes too)
            raise SandboxError(_cannot_start(why, True))

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # ------------------------------------------------------------ frames
    def _send(self, payload: bytes, deadline: float) -> None:
        data = memoryview(FRAME.pack(len(payload)) + payload)
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._over_cpu_budget():
                raise Timeout()
            _, ready, _ = select.select([], [self._to_child], [], min(remaining, POLL_S))
            if ready:
                try:
                    n = os.write(self._to_child, data[:1 << 16])
                except (BrokenPipeError, OSError):
                    raise LearnerDied("the process ended") from None
                data = data[n:]

    def _read(self, n: int, deadline: float) -> bytes:
        chunks, got = [], 0
        while got < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._over_cpu_budget():
                raise Timeout()
            ready, _, _ = select.select([self._from_child], [], [], min(remaining, POLL_S))
            if not ready:
                continue
            chunk = os.read(self._from_child, min(n - got, 1 << 20))
            if not chunk:
                raise LearnerDied(self._death_note())
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _receive(self, deadline: float) -> bytes:
        (n,) = FRAME.unpack(self._read(FRAME.size, deadline))
        if n > self.limits.reply_bytes:
            raise ProtocolError(f"a reply of {n} bytes (the limit is {self.limits.reply_bytes})")
        return self._read(n, deadline)

    def _death_note(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "the process closed its pipe"
        if code < 0:
            name = signal.Signals(-code).name
            hint = {"SIGXCPU": " (CPU time limit)", "SIGKILL": " (killed: memory?)",
                    "SIGXFSZ": " (file size limit)", "SIGSEGV": " (crashed: out of memory?)"}.get(name, "")
            return f"the process was ended by {name}{hint}"
        return f"the process exited with status {code}"

    # ------------------------------------------------------------ cleanup
    def kill(self) -> None:
        """Kill the learner's process group, every process of its uid and every descendant."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.proc = None
        sweep(self.uid)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.dir.exists() and self.uid is not None:  # files the learner made unreadable
            subprocess.run(["rm", "-rf", str(self.dir)], check=False)

