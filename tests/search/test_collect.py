"""The bounded collectors keep exactly the best entries, whatever order they arrive in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codebelt.search.collect import TopK


@given(
    keys=st.lists(st.integers(min_value=-50, max_value=50), max_size=3000, unique=True),
    k=st.one_of(st.none(), st.integers(min_value=0, max_value=40)),
    batch=st.integers(min_value=1, max_value=700),
)
def test_topk_keeps_the_k_smallest_with_bounded_memory(keys, k, batch):
    top = TopK(k)
    entries = [(key, f"item{key}") for key in keys]
    peak = 0
    for i in range(0, len(entries), batch):
        chunk = entries[i : i + batch]
        if batch % 2:
            top.extend(chunk)
        else:
            for e in chunk:
                top.add(e)
        peak = max(peak, len(top.buf))
    assert top.seen == len(entries)
    want = sorted(entries) if k is None else sorted(entries)[:k]
    assert top.sorted() == want
    if k is not None:
        assert peak < 2 * k + 1024 + batch
