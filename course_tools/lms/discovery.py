"""Finding the submissions: every file of a class folder, at any depth, as one `Entry` (its
student, from the LMS name of its top-level file or folder), with the reason it cannot be graded
when it cannot (not a notebook, a symbolic link, an empty folder, unreadable). Links are listed,
never followed; a runaway tree stops at `MAX_FILES`."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from .names import LmsName, lms_name, readable

# Files an archive or an OS adds on its own: not a student's submission, no row.
NOISE = {".DS_Store", "Thumbs.db", "desktop.ini", "__MACOSX", ".ipynb_checkpoints"}
MAX_FILES = 100_000            # a runaway folder tree stops here (and says so)


@dataclass
class Entry:
    student: str                 # the student's key (LMS ID, folder or file name)
    name: str                    # a name from the download, if any
    lms: str
    path: str                    # the real path (may hold undecodable bytes: never printed)
    file: str                    # readable, relative to the class folder
    problem: str = ""            # "code: why" when the file is not graded


def _kind(path: str, st) -> str:
    """'' for a file to grade, else the reason it is not graded."""
    if stat.S_ISLNK(st.st_mode):
        return "not-a-file: a symbolic link (not followed); submit the file itself"
    if not stat.S_ISREG(st.st_mode):
        return "not-a-file: not a regular file"
    if not path.lower().endswith(".ipynb"):
        suffix = os.path.splitext(readable(os.path.basename(path)))[1] or "no extension"
        return f"not-a-notebook: a {suffix} file, not a notebook; submit the .ipynb"
    return ""


def submissions(folder) -> list[Entry]:
    """Every file of the class folder, as an Entry; symbolic links are listed, never followed."""
    folder = os.fspath(folder)
    entries: list[Entry] = []

    def add(owner: LmsName, path: str, problem: str = ""):
        rel = readable(os.path.relpath(path, folder))
        entries.append(Entry(owner.student, owner.name, owner.lms, path, rel, problem))

    def walk(owner: LmsName, top: str):
        stack = [top]
        while stack and len(entries) < MAX_FILES:
            current = stack.pop()
            try:
                with os.scandir(current) as it:
                    children = sorted(it, key=lambda e: e.name)
            except OSError as error:
                add(owner, current, f"unreadable: the folder could not be listed ({error.strerror})")
                continue
            subdirs = []
            for child in children:
                if child.name in NOISE or child.name.startswith("._"):
                    continue
                try:
                    st = child.stat(follow_symlinks=False)
                except OSError:
                    add(owner, child.path, "unreadable: could not be read")
                    continue
                if stat.S_ISDIR(st.st_mode):
                    subdirs.append(child.path)
                else:
                    add(owner, child.path, _kind(child.path, st))
            stack.extend(reversed(subdirs))

    with os.scandir(folder) as it:
        top = sorted(it, key=lambda e: e.name)
    for entry in top:
        if entry.name in NOISE or entry.name.startswith("._") or len(entries) >= MAX_FILES:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            add(lms_name(entry.name), entry.path, "unreadable: could not be read")
            continue
        if stat.S_ISDIR(st.st_mode):
            owner = lms_name(entry.name, is_dir=True)
            before = len(entries)
            walk(owner, entry.path)
            if len(entries) == before:
                add(owner, entry.path, "empty: the folder holds no file")
        else:
            owner = lms_name(entry.name)
            add(owner, entry.path, _kind(entry.path, st))
    if len(entries) >= MAX_FILES:
        entries.append(Entry("", "", "", folder, ".", f"too-many-files: stopped after {MAX_FILES} files"))
    return entries
