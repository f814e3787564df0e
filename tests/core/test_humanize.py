"""Durations worded for people, wherever codebelt computes one into a message."""

from __future__ import annotations

import pytest

from codebelt.humanize import duration


@pytest.mark.parametrize("seconds,text", [
    (0, "0 ms"), (0.25, "250 ms"), (0.9996, "1 s"), (1, "1 s"), (1.5, "1.5 s"), (4.99994, "5 s"),
    (9.96, "10 s"), (12.4, "12 s"), (59.6, "1 min"), (125, "2 min 5 s"), (3600, "1 h"), (3725, "1 h 2 min"),
])
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_a_language_server_timeout_is_worded_for_people(tmp_path):
    """The fallback note quoted the remaining request budget as computed: "within 4.99994 s"."""
    import sys

    from codebelt.intel.lsp.client import LspClient, LspTimeout

    server = tmp_path / "silent.py"
    server.write_text("import sys\nsys.stdin.buffer.read()\n")  # reads, never answers
    client = LspClient("silent", [sys.executable, str(server)], tmp_path)
    try:
        with pytest.raises(LspTimeout) as info:
            client.request("workspace/symbol", {"query": "x"}, 0.3337)
        assert str(info.value).endswith("did not answer workspace/symbol within 334 ms"), str(info.value)
    finally:
        client.close(timeout=0.5)
