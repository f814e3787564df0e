"""Committing a plan, all or nothing: deletions, then every changed file written atomically; if
anything fails midway, the files already touched are restored from their in-memory originals and
directories created for them are removed again."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import PatchApplyError
from ..files.atomic import remove_file, write_atomic
from ..files.beneath import Beneath
from .plan import Plan


def _missing_dirs(p: Path) -> list[Path]:
    out = []
    for parent in p.parents:
        if os.path.lexists(parent):
            break
        out.append(parent)
    return out


def commit(plan: Plan, *, fsync: bool = True) -> None:
    """Delete, then write every changed file; on any failure restore what was already done.
    Every path is reached beneath its root without following symlinks (`plan.view.beneath`)."""
    writes = plan.writes()
    display = plan.view.display
    beneath = plan.view.beneath
    done: list[tuple[Path, bytes | None, int | None]] = []
    created: list[Path] = []
    try:
        # Deletions first: a deleted file may be replaced by a directory of the same name.
        for p, new, orig, mode in sorted(writes, key=lambda w: w[1] is not None):
            if new is not None:
                created.extend(_missing_dirs(p))
                write_atomic(p, new, mode=mode if orig is None else None, fsync=fsync, beneath=beneath)
            else:
                remove_file(p, beneath=beneath)
            done.append((p, orig, mode))
    except OSError as e:
        failed = display(p)
        problems = _rollback(done, created, fsync, beneath)
        msg = f"Failed to write {failed}: {e}."
        if problems:
            msg += " Restoring the files already changed also failed for: " + "; ".join(problems)
        else:
            msg += " No file was changed (the files already written were restored)."
        raise PatchApplyError(msg) from None


def _rollback(done: list[tuple[Path, bytes | None, int | None]], created: list[Path], fsync: bool,
              beneath: Beneath) -> list[str]:
    problems = []
    for p, orig, mode in reversed(done):
        try:
            if orig is None:
                try:
                    remove_file(p, beneath=beneath)
                except FileNotFoundError:
                    pass
            else:
                write_atomic(p, orig, mode=mode, fsync=fsync, beneath=beneath)
        except OSError as e:
            problems.append(f"{p}: {e}")
    for d in sorted(set(created), key=lambda x: len(x.parts), reverse=True):
        try:
            fd = beneath.open_dir(d.parent)
        except OSError:
            continue
        try:
            os.rmdir(d.name, dir_fd=fd)
        except OSError:
            pass
        finally:
            os.close(fd)
    return problems
