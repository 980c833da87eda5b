"""A fork server for the learner's processes: torch imported once per grader, not once per notebook.

Starting a learner process costs about 1.9 s, 1.2 s of it importing torch - most of a notebook's
grading. The fork server is a process the grader starts once (per grader process) that imports
what every learner process imports (torch, the learner server, its codec and trip-wires; never the
checks: nothing secret is in its memory) and then, for each notebook, forks a child that puts up
the same walls as a freshly started one (`isolation.confine`, in the child, before any learner code)
and runs the learner server. What differs from `python -I -B -c SERVER` is only what the fork
server had already imported.

- The child is forked twice, so that it is re-parented to the grader (a child subreaper,
  `isolation.become_subreaper`): the grader waits for it, reads its exit status and its CPU time,
  and kills its process group, as for a process it started itself (`LearnerProcess`).
- The control socket is closed in the child before anything else runs: a learner's code cannot
  ask the fork server for a process with other walls. Every other inherited file descriptor is
  closed too; the environment is replaced, the working directory changed, stdin/stdout/stderr
  point to /dev/null, and the child starts a session of its own - as `subprocess.Popen` did.
- The fork server runs in the grader's session (the final sweep, which kills every learner
  process and whatever they started, leaves it alone) and ends when the grader closes its end of
  the socket, or exits.

This module is the grader's side; zygote.py is the fork server's (never imported here). Linux only
(it needs the subreaper): elsewhere, or with COURSE_GRADE_FORKSERVER=0, channel.py starts every
learner process afresh. Standard library only.
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from .. import ROOT
from .isolation import Limits, is_subreaper

# The fork server's command line names this module, never the learner's: the sweep recognises a
# learner process by "course_tools.grader.learner" in its command line, and must not kill this one.
COMMAND = ("import sys; sys.path.insert(0, {root!r}); "
           "from course_tools.grader.zygote import serve; serve({fd})")


class ForkServerError(RuntimeError):
    pass


def enabled() -> bool:
    return (sys.platform.startswith("linux") and os.environ.get("COURSE_GRADE_FORKSERVER", "1") != "0"
            and hasattr(socket, "send_fds"))


class LearnerProcess:
    """The part of `subprocess.Popen` channel.py uses, for a process the grader did not start
    but is the parent of (re-parented to it): `pid`, `poll()`, `wait(timeout)`, `returncode`."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:      # collected elsewhere (the sweep): gone, status unknown
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(f"learner process {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode


class ForkServer:
    """The grader's end: one fork server process and the socket to it."""

    def __init__(self, env: dict[str, str], debug: bool):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.owner = os.getpid()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", COMMAND.format(root=str(ROOT.resolve()), fd=theirs.fileno())],
                env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=None if debug else subprocess.DEVNULL, pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()

    @property
    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def spawn(self, fds: tuple[int, int, int], spec: dict, timeout: float) -> LearnerProcess:
        """A learner process with `spec`'s walls and the pipes `fds` (to the child, from the child,
        the reason a failed isolation gives)."""
        try:
            socket.send_fds(self.sock, [json.dumps(spec).encode()], list(fds))
            self.sock.settimeout(timeout)
            reply = json.loads(self.sock.recv(4096) or b"{}")
        except (OSError, ValueError) as error:
            self.close()
            raise ForkServerError(f"the fork server did not answer ({type(error).__name__})") from None
        if "pid" not in reply:
            self.close()
            raise ForkServerError(reply.get("error", "the fork server ended"))
        return LearnerProcess(reply["pid"])

    def close(self) -> None:
        self.sock.close()
        if self.owner == os.getpid():
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_server: ForkServer | None = None


def fork_server(env: dict[str, str], debug: bool) -> ForkServer:
    """This grader process's fork server, started on first use (and again if it ended; a process
    forked from the grader - a pool worker - starts its own)."""
    global _server
    if _server is None or not _server.alive:
        if _server is not None:                           # ended, or the parent's (inherited by a fork)
            _server.close()
        _server = ForkServer(env, debug)
        atexit.register(_server.close)
    return _server


def spec_for(cwd: Path, env: dict, limits: Limits, uid: int | None, needed, course: Path, hide, debug: bool) -> dict:
    return {"cwd": str(cwd), "env": env, "limits": asdict(limits), "uid": uid,
            "needed": [str(p) for p in needed], "course": str(course), "hide": [str(p) for p in hide],
            "debug": debug}


def fork_server_usable() -> bool:
    """Whether learner processes can come from the fork server here."""
    return enabled() and is_subreaper()
