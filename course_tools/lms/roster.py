"""The roster: reading a roster CSV exported from an LMS (Canvas gradebook, Moodle grading
worksheet, or any CSV with a student ID column) and matching the submissions to its students, by
ID first (LMS IDs, logins, e-mail), then by name."""
from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .discovery import Entry

ID_COLUMNS = ("ID", "Identifier", "SIS User ID", "Student ID", "student_id", "student id", "id",
              "ID number", "Username", "username", "SIS Login ID", "Email address", "email", "Email")
NAME_COLUMNS = ("Student", "Full name", "Name", "name", "student", "Student name")


def _norm(text: str) -> str:
    """Lower-case letters and digits only, accents dropped: "Müller, Erin" -> "mullererin"."""
    text = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in text.lower() if ch.isalnum() and not unicodedata.combining(ch))


def _digits(text: str) -> str:
    """"Participant 12345" (Moodle's identifier) -> "12345"; "" when it holds no number."""
    match = re.search(r"(\d+)\s*$", text)
    return match.group(1) if match else ""


class RosterError(ValueError):
    pass


@dataclass
class Roster:
    columns: list[str]
    rows: list[dict]
    id_column: str
    name_column: str | None

    def name_of(self, row: dict) -> str:
        if self.name_column:
            return row.get(self.name_column, "")
        first = next((c for c in self.columns if c.lower() in ("first name", "firstname", "first")), None)
        last = next((c for c in self.columns if c.lower() in ("last name", "lastname", "surname", "last")), None)
        return " ".join(row.get(c, "") for c in (first, last) if c).strip()

    def index(self) -> tuple[dict, dict]:
        """(by ID-like value, by normalised name) -> roster row."""
        by_id, by_name = {}, {}
        id_like = [c for c in self.columns if c in ID_COLUMNS or c == self.id_column]
        for row in self.rows:
            for column in id_like:
                value = row.get(column, "").strip()
                if value:
                    by_id.setdefault(value.lower(), row)
                    if _digits(value) and column in ("Identifier", self.id_column):
                        by_id.setdefault(_digits(value), row)
                    if "@" in value:
                        by_id.setdefault(value.split("@")[0].lower(), row)
            name = self.name_of(row)
            if name:
                by_name.setdefault(_norm(name), row)
                if "," in name:     # "Last, First": Canvas's sortable name
                    last, first = name.split(",", 1)
                    by_name.setdefault(_norm(first + last), row)
                    by_name.setdefault(_norm(last + first), row)
                else:
                    parts = name.split()
                    if len(parts) > 1:
                        by_name.setdefault(_norm(parts[-1] + "".join(parts[:-1])), row)
        return by_id, by_name


def read_roster(path, id_column: str | None = None) -> Roster:
    """A roster CSV: any export with a student ID column (Canvas gradebook: ID; Moodle grading
    worksheet: Identifier; or student_id, SIS User ID, Username, Email address, ...) and,
    optionally, a name column. UTF-8 (with or without BOM), else cp1252."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", "replace")
    reader = csv.DictReader(text.splitlines())
    columns = [c.strip() for c in (reader.fieldnames or [])]
    if not columns:
        raise RosterError(f"{path}: the roster is empty (a CSV with a header row is expected)")
    reader.fieldnames = columns
    if id_column is None:
        id_column = next((c for c in ID_COLUMNS if c in columns), None)
        if id_column is None:
            raise RosterError(f"{path}: no student ID column (one of {', '.join(ID_COLUMNS)}); "
                              f"its columns are {', '.join(columns)} - name one with --id-column")
    elif id_column not in columns:
        raise RosterError(f"{path}: no column {id_column!r}; its columns are {', '.join(columns)}")
    name_column = next((c for c in NAME_COLUMNS if c in columns and c != id_column), None)
    rows = []
    for row in reader:
        row = {k: (v or "").strip() for k, v in row.items() if k is not None}
        value = row.get(id_column, "")
        # Canvas exports carry a "Points Possible" row (and sometimes a muted-assignment row)
        if not value or "points possible" in " ".join(row.values()).lower():
            continue
        rows.append(row)
    return Roster(columns, rows, id_column, name_column)


def match(roster: Roster, entries: list[Entry]) -> dict[str, dict]:
    """Student key -> roster row, by ID first (LMS IDs, logins, e-mail), then by name."""
    by_id, by_name = roster.index()
    found = {}
    for entry in entries:
        if entry.student in found:
            continue
        row = by_id.get(entry.student.lower()) or by_id.get(_digits(entry.student) if entry.lms else "")
        if row is None:
            for candidate in (entry.name, entry.student):
                if candidate and _norm(candidate) in by_name:
                    row = by_name[_norm(candidate)]
                    break
        if row is not None:
            found[entry.student] = row
    return found
