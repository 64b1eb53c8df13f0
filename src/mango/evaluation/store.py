"""A campaign's results in one SQLite file (`DIR/campaign.sqlite`): one row per finished
episode, written and committed as each finishes, so a killed run loses only the episodes in
flight and `mango campaign run` resumes by skipping the ids already stored.

SQLite because it is in the standard library, one file a user can copy, and safe against a
kill mid-write (a transaction either landed or did not). One writer: the campaign's main
process; workers only return results.

A store that cannot be read (not a database, cut short, damaged) or written (a full disk) is
an `InputError` naming the file, from every method: what the user sees is that file and what
to do, not sqlite's words alone.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mango.errors import InputError, open_user_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY,
    system TEXT NOT NULL,
    task TEXT NOT NULL,
    seed INTEGER NOT NULL,
    fault TEXT,
    success INTEGER NOT NULL,
    verdict TEXT,          -- fine-grained: pass | fail | running | NULL (no oracle)
    failed_step TEXT,
    symbolic TEXT,         -- pass | fail | NULL
    expected_verdict TEXT, -- the labels' ground truth
    expected_step TEXT,
    error TEXT,
    wall_s REAL NOT NULL,
    role TEXT NOT NULL,    -- episode | pool (a sampling run, not a system's episode)
    result TEXT NOT NULL   -- the whole result.json
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(self.path):  # a FIFO or a device is named as what it is
            open_user_file(self.path, "campaign store", max_bytes=None).close()
        with self._checked():
            self.db = sqlite3.connect(self.path)
            try:
                self.db.executescript(SCHEMA)
                self.db.commit()
            except BaseException:
                self.db.close()
                raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _checked(self) -> Iterator[None]:
        """sqlite's errors as the user's: this file, and whether it cannot be written (a full
        disk: an `OSError`, the run could not go on; a read-only file), is in use, or is no
        campaign store (damaged, cut short)."""
        try:
            yield
        except UnicodeDecodeError as exc:  # sqlite's text (a row, its own message) not UTF-8
            raise InputError(f"not a readable campaign store (text that is not UTF-8: {exc.reason})"
                             ": move it aside (the episode folders stay) or use a new output "
                             "folder", file=str(self.path)) from None
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if isinstance(exc, sqlite3.OperationalError):
                if "full" in text or "disk I/O" in text:  # the system refused a write mid-run
                    raise OSError(errno.ENOSPC if "full" in text else errno.EIO,
                                  f"cannot write the campaign store ({text})",
                                  str(self.path)) from None
                if any(w in text for w in ("readonly", "unable to open")):
                    raise InputError(f"cannot write the campaign store ({text})",
                                     file=str(self.path)) from None
                if "locked" in text:
                    raise InputError(f"the campaign store is in use by another run ({text})",
                                     file=str(self.path)) from None
            raise InputError(f"not a readable campaign store ({text}): move it aside (the "
                             "episode folders stay) or use a new output folder",
                             file=str(self.path)) from None

    def set_meta(self, key: str, value: Any) -> None:
        with self._checked():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            (key, json.dumps(value)))
            self.db.commit()

    def _decoded(self, text: Any) -> Any:
        """A stored JSON text; a damaged one names the store, as sqlite's own damage does."""
        try:
            return json.loads(text)
        except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as exc:
            raise InputError(f"not a readable campaign store (a damaged record: {exc}): move it "
                             "aside (the episode folders stay) or use a new output folder",
                             file=str(self.path)) from None

    def meta(self, key: str) -> Any:
        with self._checked():
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return self._decoded(row[0]) if row else None

    def done(self) -> set[str]:
        with self._checked():
            return {r[0] for r in self.db.execute("SELECT id FROM episodes")}

    def get(self, episode_id: str) -> dict[str, Any] | None:
        with self._checked():
            row = self.db.execute("SELECT result FROM episodes WHERE id = ?",
                                  (episode_id,)).fetchone()
        return self._decoded(row[0]) if row else None

    def add(self, result: dict[str, Any], role: str = "episode") -> None:
        verdict = result.get("verdict") or {}
        labels = result.get("labels") or {}
        symbolic = result.get("symbolic") or {}
        with self._checked():
            self.db.execute(
                "INSERT OR REPLACE INTO episodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (result["episode"], result["system"], result["task"], result["seed"],
                 result["fault"], int(bool(result.get("success"))), verdict.get("verdict"),
                 verdict.get("failed_step"), symbolic.get("verdict"),
                 labels.get("expected_verdict"), labels.get("failed_step"),
                 result.get("error"), float(result.get("wall_s", 0.0)), role,
                 json.dumps(result)))
            self.db.commit()

    def results(self, role: str = "episode") -> Iterator[dict[str, Any]]:
        with self._checked():
            rows = self.db.execute(
                "SELECT result FROM episodes WHERE role = ? ORDER BY id", (role,)).fetchall()
        for (text,) in rows:
            yield self._decoded(text)
