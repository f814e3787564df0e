"""The index's SQLite store: the WAL stays bounded whether the checkpoint thread or the writer
itself copies it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebelt.intel import store as store_module
from codebelt.intel.rows import FileRows
from codebelt.intel.store import Store

KB = 1 << 10

# (which path bounds the WAL, CHECKPOINT_AT, CHECKPOINT_INLINE)
CASES = [
    ("checkpoint thread", 64 * KB, 1 << 40),
    ("writer inline", 1 << 40, 64 * KB),
]


@pytest.mark.parametrize("how,at,inline", CASES, ids=[c[0] for c in CASES])
def test_the_wal_is_checkpointed_and_stays_bounded(tmp_path: Path, monkeypatch, how, at, inline):
    monkeypatch.setattr(store_module, "CHECKPOINT_AT", at)
    monkeypatch.setattr(store_module, "CHECKPOINT_INLINE", inline)
    st = Store(tmp_path / "cache", tmp_path)
    symbols = [(f"name{i}", "function", i, 1, i, None, f"def name{i}(): " + "x" * 100) for i in range(200)]
    wal = Path(f"{st.path}-wal")
    sizes = []
    try:
        cp = st._checkpointer
        for n in range(120):  # ~4 MB of rows in all, one commit per file
            st.put_file(f"f{n}.py", "python", n, 1, FileRows(symbols, [], False), None, None)
            before = cp.passes
            st.commit()
            if wal.stat().st_size >= at:
                # the checkpoint thread gets its turn (on a loaded machine it may take a while)
                with cp.ran:
                    assert cp.ran.wait_for(lambda: cp.passes > before, timeout=30), \
                        "no checkpoint within 30 s of being asked for"
            sizes.append(wal.stat().st_size)
    finally:
        st.close()
    # without a checkpoint the WAL only grows (the writer's auto-checkpoint is off): here it is
    # reused from the start once copied back, so it never holds much more than a few commits
    assert max(sizes) < 1 << 20, (how, sizes[-5:])
