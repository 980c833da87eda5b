"""The walls around the learner's process (channel.py starts it inside them; learner/ is what runs there).

- its own session and process group (`setsid`), killed as a group by the parent's watchdog;
- `setrlimit`: address space, CPU seconds, processes, file size, open files, no core files;
- a minimal environment (nothing inherited), `python -I -B` (forked from the fork server, which
  started so: forkserver.py), stdin/stdout/stderr on /dev/null;
- a private temporary working directory (mode 700) holding a copy of the submission only;
- as root: an unprivileged uid/gid of its own (no passwd entry needed), so it cannot write the
  course's files or other submissions (they are not writable by that uid), and every process of
  that uid can be found and killed; without root it runs as the grader's user (see docs/instructors.md);
- as root, a private mount and network namespace (`mount_namespace`): the course read-only with
  its solutions, tests, checks and history emptied, the submissions' folder hidden, private
  /tmp, /var/tmp and /dev/shm, only its own processes in /proc, no network - and the course, its
  environment and Python reachable even when they sit under a folder only root can enter;
- the parent is a child subreaper (Linux), so processes that detach with `setsid` are
  re-parented to it and found by the final sweep, which kills every descendant.
"""
from __future__ import annotations

import ctypes
import resource
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
UID_BASE = 210_000
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
# Temporary folders the learner could leave files in: each gets a private, empty tmpfs.
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")
# Course folders the learner's code has no business reading (answers, the graded checks'
# hidden cases, the history that holds both): empty and read-only in the learner's view.
HIDDEN_IN_COURSE = ("solutions", "tests", ".git", "course_tools/checks")


def closed_ancestor(path: Path) -> Path | None:
    """The topmost folder above `path` that other users cannot enter (no o+x), or None.
    The sandbox uid needs to pass through it to reach the course and its interpreter."""
    for folder in reversed(path.parents):
        if folder != Path("/") and not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def topmost(paths) -> list[Path]:
    """`paths` without those that lie inside another one of them."""
    paths = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in paths:
        if not any(k == path or k in path.parents for k in kept):
            kept.append(path)
    return kept


def mount_namespace(needed: list[Path], course: Path, hide: list[Path]) -> None:
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
    covers = topmost([c for c in map(closed_ancestor, needed) if c is not None]
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


class ReasonWritten(OSError):
    """Isolating the learner's process failed, and `confine` wrote why for the parent to report."""


@dataclass
class Limits:
    memory_bytes: int = 6 * 1024**3     # address space; torch alone maps ~2 GB of it
    cpu_seconds: int = 600
    processes: int = 64                 # per uid; only enforceable under a uid of its own
    file_bytes: int = 64 * 1024**2
    open_files: int = 256
    reply_bytes: int = 64 * 1024**2     # the most the parent reads in one reply


def become_subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: detached grandchildren are not tracked
        pass


def is_subreaper() -> bool:
    """Whether this process adopts its orphaned descendants (Linux; False where it cannot tell)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value == 1
    except (OSError, AttributeError):
        return False


def open_temp_dir() -> str:
    """The system temp folder, unless it lies under a closed folder (then /tmp or /dev/shm)."""
    for candidate in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
        if os.path.isdir(candidate) and closed_ancestor(Path(candidate).resolve() / "x") is None:
            return candidate
    return tempfile.gettempdir()


def sandbox_uid() -> int | None:
    """A uid of this grader process's own (root only): distinct across parallel graders."""
    return UID_BASE + os.getpid() % 60_000 if os.geteuid() == 0 else None


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
            if b"course_tools.grader.learner" in cmdline or _is_reparented(pid):
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


def confine(limits: Limits, uid: int | None, needed: list[Path], course: Path, hide: list[Path], why_fd: int) -> None:
    """In the child, before it runs Python: the resource limits and, as root, the namespaces and
    the uid of its own (a failure to isolate is written to `why_fd` for the parent to report)."""
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if uid is not None:
        try:
            mount_namespace(needed, course, hide)
        except OSError as error:
            os.write(why_fd, f"{error.strerror or error} ({error.filename or error.args[-1]})".encode())
            raise ReasonWritten(error.errno, str(error)) from error
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
