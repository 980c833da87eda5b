"""Starting, limiting and killing the learner's process (see driver.py), from the outside.

- its own session and process group (`setsid`), killed as a group by the parent's watchdog;
- `setrlimit`: address space, CPU seconds, processes, file size, open files, no core files;
- a minimal environment (nothing inherited), `python -I -B`, stdin/stdout/stderr on /dev/null;
- a private temporary working directory (mode 700) holding a copy of the submission only;
- as root: an unprivileged uid/gid of its own (no passwd entry needed), so it cannot write the
  course's files or other submissions (they are not writable by that uid), and every process of
  that uid can be found and killed; without root it runs as the grader's user (see README);
- the parent is a child subreaper (Linux), so processes that detach with `setsid` are
  re-parented to it and found by the final sweep, which kills every descendant.
"""
from __future__ import annotations

import ctypes
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import ROOT
from .wire import HEADER, ProtocolError

PR_SET_CHILD_SUBREAPER = 36
UID_BASE = 210_000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18


def _mount_namespace(workdir: Path, hide: list[Path], readonly: list[Path]) -> None:
    """In the child, as root: a private mount namespace in which the course is read-only,
    `hide` (the submissions' folder) is an empty tmpfs, and an interpreter installed under a
    home the sandbox uid cannot enter (e.g. /root/.pyenv) is bound into an empty tmpfs."""
    libc = ctypes.CDLL(None, use_errno=True)

    def mount(src, dst, fstype, flags, data=None):
        if libc.mount(src and str(src).encode(), str(dst).encode(), fstype and fstype.encode(),
                      flags, data and data.encode()) != 0:
            raise OSError(ctypes.get_errno(), f"mount {dst}")
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    prefix = Path(os.path.realpath(sys.base_prefix))
    closed = next((a for a in reversed(prefix.parents) if a != Path("/") and not (os.stat(a).st_mode & 0o001)),
                  None)
    if closed is not None:
        stage = workdir / ".prefix"
        mount(prefix, stage, None, MS_BIND | MS_REC)
        mount("none", closed, "tmpfs", 0, "mode=755")
        target = closed / prefix.relative_to(closed)
        target.mkdir(parents=True, exist_ok=True)
        mount(stage, target, None, MS_BIND | MS_REC)
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path in readonly:
        mount(path, path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path in hide:
        mount("none", path, "tmpfs", MS_RDONLY, "mode=555")


@dataclass
class Limits:
    memory_bytes: int = 6 * 1024**3     # address space; torch alone maps ~2 GB of it
    cpu_seconds: int = 600
    processes: int = 64                 # per uid; only enforceable under a uid of its own
    file_bytes: int = 64 * 1024**2
    open_files: int = 256
    reply_bytes: int = 64 * 1024**2     # the most the parent reads in one reply


def _subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: detached grandchildren are not tracked
        pass


def sandbox_uid() -> int | None:
    """A uid of this grader process's own (root only): distinct across parallel graders."""
    return UID_BASE + os.getpid() % 60_000 if os.geteuid() == 0 else None


class LearnerDied(Exception):
    """The learner's process ended, hit a limit, or was killed by the watchdog."""


class Timeout(LearnerDied):
    pass


class Sandbox:
    def __init__(self, submission: Path | None, limits: Limits | None = None, hide=()):
        self.limits = limits or Limits()
        self.hide = [Path(os.path.realpath(h)) for h in hide]
        self.uid = sandbox_uid()
        self.dir = Path(tempfile.mkdtemp(prefix="course-grade-"))
        os.chmod(self.dir, 0o700)
        if submission is not None:
            shutil.copyfile(submission, self.dir / "submission.ipynb")
        for sub in ("home", "tmp", ".prefix"):
            (self.dir / sub).mkdir()
        if self.uid is not None:
            for path in (self.dir, *self.dir.rglob("*")):
                os.chown(path, self.uid, self.uid)
        self.proc: subprocess.Popen | None = None
        _subreaper()

    # ------------------------------------------------------------ process
    def start(self) -> None:
        limits, uid, workdir = self.limits, self.uid, self.dir
        keep = [workdir, ROOT, Path(sys.prefix), Path(os.path.realpath(sys.base_prefix))]
        hide = [h for h in self.hide if h.is_dir() and h != Path("/") and
                not any(k == h or h in k.parents or k in h.parents for k in keep)]
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.dir / "home"), "TMPDIR": str(self.dir / "tmp"),
               "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(self.dir / "tmp"),
               "IPYTHONDIR": str(self.dir / "tmp"), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "TQDM_DISABLE": "1", "COURSE_GRADE_FDS": f"{to_child_r},{from_child_w}"}

        def preexec():
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if uid is not None:
                _mount_namespace(workdir, hide, [ROOT])
                resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-B", "-m", "course_tools.driver"], cwd=self.dir, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=None if os.environ.get("COURSE_GRADE_DEBUG") else subprocess.DEVNULL,
            start_new_session=True, preexec_fn=preexec, pass_fds=(to_child_r, from_child_w))
        os.close(to_child_r)
        os.close(from_child_w)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, payload: bytes, deadline: float) -> None:
        data = memoryview(HEADER.pack(len(payload)) + payload)
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout()
            _, ready, _ = select.select([], [self._to_child], [], remaining)
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
            if remaining <= 0:
                raise Timeout()
            ready, _, _ = select.select([self._from_child], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._from_child, min(n - got, 1 << 20))
            if not chunk:
                raise LearnerDied(self._death_note())
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def receive(self, deadline: float) -> bytes:
        (n,) = HEADER.unpack(self._read(8, deadline))
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


def _processes():
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            uid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:")), -1)
            yield int(entry), int(fields[1]), uid   # pid, ppid, real uid


def sweep(uid: int | None) -> None:
    """Kill leftovers: processes of the sandbox uid, and our own descendants other than the
    grader's known children (re-parented to us as subreaper). Repeats until none remain."""
    if not Path("/proc").is_dir():
        return
    me = os.getpid()
    for _ in range(50):
        table = list(_processes())
        children: dict[int, list[int]] = {}
        for pid, ppid, _ in table:
            children.setdefault(ppid, []).append(pid)
        victims = {pid for pid, _, u in table if uid is not None and u == uid}
        # orphans re-parented to us: any direct child of ours that is a zombie-free stray
        for pid in children.get(me, []):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"course_tools.driver" in cmdline or _is_reparented(pid):
                victims.add(pid)
        stack = list(victims)
        while stack:
            for child in children.get(stack.pop(), []):
                if child not in victims:
                    victims.add(child)
                    stack.append(child)
        victims.discard(me)
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap(victims)
        time.sleep(0.05)


def _is_reparented(pid: int) -> bool:
    """A process whose session is not ours: started in a learner's session, then re-parented."""
    try:
        return os.getsid(pid) != os.getsid(0)
    except OSError:
        return False


def _reap(pids) -> None:
    """Collect the exit status of the ones that were our children (others are not ours to wait)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass
