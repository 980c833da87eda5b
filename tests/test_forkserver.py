"""The fork server (course_tools/grader/forkserver.py): learner processes forked from one that
imported torch once. The walls are the same as for a freshly started process (the attack, fairness
and kernel-escape tests run through it); here, what only the fork server could get wrong."""
import os
import stat
import subprocess
import sys

import pytest

from course_lib import ROOT
from course_tools.grader import forkserver, grade
from course_tools.grader.channel import Channel
from course_tools.grader.run import start

pytestmark = pytest.mark.skipif(not forkserver.enabled(), reason="the fork server is Linux only")

SOLUTION = ROOT / "solutions" / "00_welcome.ipynb"

LOOK_AROUND = """
import os, stat
FDS = {}
for name in os.listdir("/proc/self/fd"):
    try:
        FDS[int(name)] = stat.S_IFMT(os.fstat(int(name)).st_mode)
    except OSError:           # the listing's own descriptor, closed by now
        pass
PPID, SID, PID = os.getppid(), os.getsid(0), os.getpid()
"""


def _look_around():
    channel = Channel(None)
    try:
        remote = start(channel, {}, 60)
        remote.exec_cell(LOOK_AROUND)
        return {name: remote.get_global(name) for name in ("FDS", "PPID", "SID", "PID")}, forkserver._server.proc.pid
    finally:
        channel.close()


def test_a_learner_process_holds_its_two_pipes_and_no_way_back_to_the_fork_server():
    seen, _ = _look_around()
    kinds = seen["FDS"]
    assert stat.S_IFSOCK not in kinds.values(), kinds          # the fork server's socket is closed
    assert sorted(fd for fd, kind in kinds.items() if kind == stat.S_IFIFO) == [3, 4], kinds
    # its own session, and the grader (a subreaper) as its parent: waited for and killed like a child
    assert seen["SID"] == seen["PID"] and seen["PPID"] == os.getpid()


def test_one_fork_server_serves_every_learner_process_and_outlives_the_sweep():
    _, first = _look_around()
    _, second = _look_around()        # closing a channel sweeps its processes: not the fork server
    assert first == second


def test_a_fork_server_that_ended_is_started_again():
    _, first = _look_around()
    forkserver._server.proc.kill()
    forkserver._server.proc.wait()
    seen, second = _look_around()
    assert second != first and seen["PPID"] == os.getpid()


def test_grades_are_the_same_with_and_without_the_fork_server(monkeypatch):
    forked = grade(SOLUTION)
    monkeypatch.setenv("COURSE_GRADE_FORKSERVER", "0")
    assert not forkserver.fork_server_usable()
    fresh = grade(SOLUTION)
    assert forked["score"] == fresh["score"] == forked["max_score"] > 0
    assert [i["feedback"] for i in forked["items"]] == [i["feedback"] for i in fresh["items"]]


def test_the_fork_server_imports_no_checks():
    # what it holds in memory every learner process inherits: never a check or a hidden case
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from course_tools.grader import zygote; "
            "zygote.preload(); print('\\n'.join(sorted(m for m in sys.modules if m.startswith('course'))))")
    modules = subprocess.run([sys.executable, "-I", "-c", code, str(ROOT)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert "course_tools.grader.learner.server" in modules
    assert not [m for m in modules if m.startswith(("course_tools.checks", "course_tools.grading",
                                                    "course_tools.exercises"))], modules


def test_a_learner_process_cannot_read_the_fork_servers_memory():
    # as an ordinary user the learner's process runs as the fork server's user: the fork server is
    # not dumpable, so it cannot be attached to or read (and tampered with for the next learner)
    channel = Channel(None)
    try:
        remote = start(channel, {}, 60)
        pid = forkserver._server.proc.pid
        remote.exec_cell(f"try:\n    open('/proc/{pid}/mem', 'rb').read(1)\n    MEM = 'read'\n"
                         f"except OSError as error:\n    MEM = type(error).__name__")
        assert remote.get_global("MEM") in ("PermissionError", "FileNotFoundError"), remote.get_global("MEM")
    finally:
        channel.close()


def _why_it_did_not_start(**changes):
    """Ask the fork server for a process with `changes` to a valid spec: (the reason it wrote, exit code)."""
    from course_tools.grader.isolation import Limits, become_subreaper
    become_subreaper()
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    why_r, why_w = os.pipe()
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/", "TMPDIR": "/tmp"}
    spec = {**forkserver.spec_for(ROOT, env, Limits(), None, [], ROOT, [], False), **changes}
    try:
        proc = forkserver.fork_server(env, False).spawn((to_child_r, from_child_w, why_w), spec, timeout=60)
    finally:
        for fd in (to_child_r, from_child_w, why_w):
            os.close(fd)
    with os.fdopen(why_r, "rb") as pipe:
        why = pipe.read().decode()
    code = proc.wait(timeout=30)
    for fd in (to_child_w, from_child_r):
        os.close(fd)
    return why, code


def test_a_process_that_cannot_be_set_up_says_why_once():
    why, code = _why_it_did_not_start(cwd=str(ROOT / "no-such-folder"))
    assert code == 1 and why.startswith("FileNotFoundError: ") and "no-such-folder" in why, why


@pytest.mark.skipif(os.geteuid() != 0, reason="the namespaces are made as root only")
def test_a_namespace_that_cannot_be_made_is_reported_in_confines_words_only():
    from course_tools.grader.isolation import sandbox_uid
    missing = str(ROOT / "no-such-folder")
    why, code = _why_it_did_not_start(uid=sandbox_uid(), needed=[missing])
    assert code == 1 and why == f"No such file or directory ({missing})", why
