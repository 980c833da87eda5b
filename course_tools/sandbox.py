"""Starting, limiting and killing the learner's process (see driver.py), from the outside.

- its own session and process group (`setsid`), killed as a group by the parent's watchdog;
- `setrlimit`: address space, CPU seconds, processes, file size, open files, no core files;
- a minimal environment (nothing inherited), `python -I -B`, stdin/stdout/stderr on /dev/null;
- a private temporary working directory (mode 700) holding a copy of the submission only;
- as root: an unprivileged uid/gid of its own (no passwd entry needed), so it cannot write the
  course's files or other submissions (they are not writable by that uid), and every process of
  that uid can be found and killed; without root it runs as the grader's user (see docs/instructors.md);
- as root, a private mount and network namespace (`_mount_namespace`): the course read-only with
  its solutions, tests, checks and history emptied, the submissions' folder hidden, private
  /tmp, /var/tmp and /dev/shm, only its own processes in /proc, no network - and the course, its
  environment and Python reachable even when they sit under a folder only root can enter;
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
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
# Temporary folders the learner could leave files in: each gets a private, empty tmpfs.
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")
# Course folders the learner's code has no business reading (answers, the graded checks'
# hidden cases, the history that holds both): empty and read-only in the learner's view.
HIDDEN_IN_COURSE = ("solutions", "tests", ".git", "course_tools/checks")


class SandboxError(RuntimeError):
    """The learner's process could not be isolated; the message names the cause and the fix."""


def closed_ancestor(path: Path) -> Path | None:
    """The topmost folder above `path` that other users cannot enter (no o+x), or None.
    The sandbox uid needs to pass through it to reach the course and its interpreter."""
    for folder in reversed(path.parents):
        if folder != Path("/") and not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def _topmost(paths) -> list[Path]:
    """`paths` without those that lie inside another one of them."""
    paths = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in paths:
        if not any(k == path or k in path.parents for k in kept):
            kept.append(path)
    return kept


def _mount_namespace(needed: list[Path], course: Path, hide: list[Path]) -> None:
    """In the child, as root, before it becomes the sandbox uid: a private mount and network
    namespace in which

    - every folder the sandbox uid cannot enter on the way to `needed` (the course, the
      virtual environment, the interpreter, the working directory) is an empty tmpfs through
      which only the needed folders are bound again - so a course cloned into /root, a
      `mktemp -d` folder or a mode-700 home grades like one in /srv;
    - /tmp, /var/tmp and /dev/shm are private and empty: whatever the learner writes there is
      gone when the process ends;
    - the course is read-only, its solutions, tests, checks and git history are empty, and
      `hide` (the submissions' folder) is an empty tmpfs;
    - /proc shows only the learner's own processes (hidepid), and there is no network."""
    libc = ctypes.CDLL(None, use_errno=True)

    def mount(src, dst, fstype, flags, data=None):
        if libc.mount(src and str(src).encode(), str(dst).encode(), fstype and fstype.encode(),
                      flags, data and data.encode()) != 0:
            raise OSError(ctypes.get_errno(), f"mount {fstype or 'bind'} on {dst}")
    if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare (mount and network namespaces)")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Hold each needed folder open before anything covers it, then bind it back through
    # /proc/self/fd: no staging folder is needed, wherever the folders are.
    handles = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in needed}
    covers = _topmost([c for c in map(closed_ancestor, needed) if c is not None]
                      + [Path(t) for t in PRIVATE_TMP if os.path.isdir(t) and not os.path.islink(t)])
    for cover in covers:
        mode = "1777" if str(cover) in PRIVATE_TMP else "755"
        mount("none", cover, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode}")
    for path, fd in handles.items():
        if any(c == path or c in path.parents for c in covers):
            for folder in [*reversed(path.relative_to(path.anchor).parents), path.relative_to(path.anchor)]:
                target = Path(path.anchor) / folder
                if not target.exists():
                    target.mkdir()
                    os.chmod(target, 0o755)
            mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    mount(course, course, None, MS_BIND | MS_REC)
    mount(None, course, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path in [course / name for name in HIDDEN_IN_COURSE] + hide:
        if path.is_dir() and not any(path == n or path in n.parents for n in needed):
            mount("none", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=555")
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    except OSError:  # a container that forbids a new proc: other processes stay visible (docs/instructors.md)
        pass


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


# The learner's process runs the driver of this very course (`course`, which the namespace keeps
# reachable), whatever an isolated interpreter would find first on its own path (an editable
# install of another checkout, a wheel in site-packages).
_DRIVER = ("import sys; sys.path.insert(0, {root!r}); import runpy; "
           "runpy.run_module('course_tools.driver', run_name='__main__', alter_sys=True)")


def _open_temp_dir() -> str:
    """The system temp folder, unless it lies under a closed folder (then /tmp or /dev/shm)."""
    for candidate in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
        if os.path.isdir(candidate) and closed_ancestor(Path(candidate).resolve() / "x") is None:
            return candidate
    return tempfile.gettempdir()


def sandbox_uid() -> int | None:
    """A uid of this grader process's own (root only): distinct across parallel graders."""
    return UID_BASE + os.getpid() % 60_000 if os.geteuid() == 0 else None


class LearnerDied(BaseException):
    # BaseException: a check's `except Exception` (reporting what the learner's code raised) must
    # never swallow the grader's own signal that the learner's process died or ran out of time
    """The learner's process ended, hit a limit, or was killed by the watchdog."""


class Timeout(LearnerDied):
    pass


class Sandbox:
    def __init__(self, submission: Path | None, limits: Limits | None = None, hide=()):
        self.limits = limits or Limits()
        self.hide = [Path(os.path.realpath(h)) for h in hide]
        self.uid = sandbox_uid()
        self.dir = Path(tempfile.mkdtemp(prefix="course-grade-", dir=_open_temp_dir()))
        os.chmod(self.dir, 0o700)
        if submission is not None:
            shutil.copyfile(submission, self.dir / "submission.ipynb")
        for sub in ("home", "tmp"):
            (self.dir / sub).mkdir()
        if self.uid is not None:
            for path in (self.dir, *self.dir.rglob("*")):
                os.chown(path, self.uid, self.uid)
        self.proc: subprocess.Popen | None = None
        _subreaper()

    def _needed(self) -> list[Path]:
        """What the sandbox uid must reach: its folder, the course, the environment, Python."""
        return _topmost([self.dir, ROOT.resolve(), Path(os.path.realpath(sys.prefix)),
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

    # ------------------------------------------------------------ process
    def start(self) -> None:
        limits, uid, workdir = self.limits, self.uid, self.dir
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

        def preexec():
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if uid is not None:
                try:
                    _mount_namespace(needed, course, hide)
                except OSError as error:
                    os.write(why_w, f"{error.strerror or error} ({error.filename or error.args[-1]})".encode())
                    raise
                resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", _DRIVER.format(root=str(course))], cwd=self.dir, env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=None if os.environ.get("COURSE_GRADE_DEBUG") else subprocess.DEVNULL,
                start_new_session=True, preexec_fn=preexec, pass_fds=(to_child_r, from_child_w))
        except (subprocess.SubprocessError, OSError) as error:
            os.close(why_w)
            why = os.read(why_r, 4096).decode(errors="replace")
            os.close(why_r)
            for fd in (to_child_r, from_child_w, self._to_child, self._from_child):
                os.close(fd)
            raise SandboxError(
                "cannot start the isolated learner process: " + (why or f"{type(error).__name__}: {error}")
                + (". As root the grader needs to create mount and network namespaces (a container "
                   "needs --cap-add SYS_ADMIN, or run the grader as an ordinary user)" if why else "")) from None
        os.close(why_w)
        os.close(why_r)
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
