"""Names in an LMS download: a file name as readable text whatever its bytes (`readable`), and who
a top-level file or folder belongs to (`lms_name`): Canvas (`lastfirst_12345_67890_original.ipynb`,
`_late_` too) and Moodle (`Full Name_12345_assignsubmission_file_original.ipynb`, flat or in
per-student folders) map to the LMS's student ID; any other name is its own student key."""
from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass


def readable(name: str) -> str:
    """A file name as text: UTF-8, else cp1252 (zips made on Windows), else with U+FFFD;
    control characters become '?'. Never raises, whatever bytes the name holds."""
    raw = os.fsencode(name)
    for encoding in ("utf-8", "cp1252"):
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        text = raw.decode("utf-8", "replace")
    text = unicodedata.normalize("NFC", text)
    return "".join(ch if ch.isprintable() else "?" for ch in text)


# Canvas: "<sortable name, letters only>_[late_]<user id>_<submission id>_<original name>"
# (resubmissions add "-1", "-2" to the original name).
CANVAS = re.compile(r"^(?P<name>[^_\s]+?)_(?:late_|LATE_)?(?P<id>\d+)_(?P<sub>\d+)_(?P<original>.+)$")
# Moodle: "<Full Name>_<participant id>_assignsubmission_<plugin>_<original name>" (a file), or the
# folder "<Full Name>_<participant id>_assignsubmission_<plugin>_" holding the original files.
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<original>.*)$")


@dataclass(frozen=True)
class LmsName:
    student: str      # the LMS's student ID (Canvas user ID, Moodle participant ID), else the name
    name: str         # the name the download carries ("" when none)
    lms: str          # "canvas", "moodle" or ""
    original: str     # the file name the student uploaded


def lms_name(name: str, is_dir: bool = False) -> LmsName:
    """Who a top-level file or folder of a download belongs to, from its name."""
    text = readable(name)
    match = MOODLE.match(text)
    if match:
        return LmsName(match["id"], match["name"].strip(), "moodle", match["original"])
    match = CANVAS.match(text) if not is_dir else None
    if match:
        return LmsName(match["id"], match["name"], "canvas", match["original"])
    stem = text if is_dir else (text[:-len(".ipynb")] if text.lower().endswith(".ipynb") else text)
    return LmsName(stem, "", "", text)
