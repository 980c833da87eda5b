"""The fork server's process (forkserver.py is the grader's side, which starts it): import what
every learner process imports, once, then fork each learner's process, which puts up its walls
(`isolation.confine`) before the learner server runs."""
from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path

from .forkserver import ForkServerError
from .isolation import Limits, ReasonWritten, confine

LEARNER_MODULE = "course_tools.grader.learner.server"
PR_SET_DUMPABLE = 4


def _set_dumpable(value: int) -> None:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, value, 0, 0, 0)


def preload() -> None:
    """What every learner process imports, and nothing else: no checks, no hidden cases."""
    import torch  # noqa: F401  (the point: imported once, shared by every child)

    import course_tools.grader.codec  # noqa: F401
    import course_tools.grader.learner.server  # noqa: F401
    import course_tools.grader.learner.tripwires  # noqa: F401


def serve(fd: int) -> None:
    """Preload, then fork one learner process per request until the grader closes the socket."""
    preload()
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the grader's to handle
    # Not dumpable: a learner's process running as the same user (an ordinary user's grader)
    # cannot attach to this one or read its memory to tamper with the next learner's process.
    _set_dumpable(0)
    sock = socket.socket(fileno=fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            break
        if not message:
            break
        try:
            pid = _fork_twice(sock, json.loads(message), fds)
            reply = {"pid": pid}
        except Exception as error:  # noqa: BLE001 - said to the grader, which stops using us
            reply = {"error": f"the fork server could not start a process: {type(error).__name__}: {error}"}
        finally:
            for f in fds:
                os.close(f)
        sock.send(json.dumps(reply).encode())


def _fork_twice(sock: socket.socket, spec: dict, fds: list[int]) -> int:
    """Fork a child that forks the learner's process and exits at once: the learner's process is
    re-parented to the grader, the nearest subreaper. Returns its pid."""
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(r)
            learner = os.fork()
            if learner == 0:
                os.close(w)
                _become_learner(sock, spec, fds)          # never returns
            os.write(w, str(learner).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        pid = int(pipe.read() or 0)
    os.waitpid(middle, 0)                                 # from here on the learner is the grader's child
    if not pid:
        raise ForkServerError("the learner's process was not forked")
    return pid


def _become_learner(sock: socket.socket, spec: dict, fds: list[int]) -> None:
    """In the learner's process: what `subprocess.Popen(..., preexec_fn=confine)` and
    `python -I -B -c SERVER` did, then the learner server. Never returns. A failure before the
    learner server runs is written to `why` for the grader to report."""
    to_child, from_child, why = fds
    try:
        sock.close()                                      # first: no way back to the fork server
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _set_dumpable(1)                                  # as a freshly started process is
        devnull = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1) if spec["debug"] else (0, 1, 2):
            os.dup2(devnull, target)
        keep = sorted({0, 1, 2, to_child, from_child, why})
        for low, high in zip([-1, *keep], [*keep, 1 << 16]):
            if high > low + 1:   # os.closerange(n, n) would close every descriptor from n up (close_range(n, -1))
                os.closerange(low + 1, high)
        os.chdir(spec["cwd"])
        os.environ.clear()
        os.environ.update(spec["env"], COURSE_GRADE_FDS=f"{to_child},{from_child}")
        import tempfile
        tempfile.tempdir = None                           # TMPDIR is the child's own now
        confine(Limits(**spec["limits"]), spec["uid"], [Path(p) for p in spec["needed"]], Path(spec["course"]),
                [Path(p) for p in spec["hide"]], why)
    except BaseException as error:  # noqa: BLE001 - reported by the grader
        try:
            if not isinstance(error, ReasonWritten):      # (confine wrote the namespaces' own reason)
                os.write(why, f"{type(error).__name__}: {error}".encode())
        finally:
            os._exit(1)
    os.close(why)
    code = 1
    try:
        import runpy
        runpy.run_module(LEARNER_MODULE, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001 - the grader sees the process end
        if spec["debug"]:
            import traceback
            traceback.print_exc()
    finally:
        os._exit(code)
