"""Checkpoints: what each call changed in the workspace, kept so it can be rewound.

A plain library (no sessions, no settings): `Checkpoints` records calls and rewinds them;
`store` keeps contents by hash; `tracker` and `journal` find what a command changed; `rewind`
puts paths back without clobbering what someone else changed. See docs/checkpoints.md.
"""

from .entries import Entry
from .manager import Checkpoints, Limits, Recording, RewindReport
from .records import Change, Checkpoint

__all__ = ["Checkpoints", "Limits", "Recording", "RewindReport", "Checkpoint", "Change", "Entry"]
