"""The OS sandbox for Bash commands (bubblewrap or Landlock), re-exported from its modules:
`manager` (choose a backend, probe it once, wrap each command), `config`, `bwrap`, `landlock`,
`limits` (rlimits, pids cgroup), `protected` (paths re-bound read-only), `denial` (explaining
a failure the sandbox probably caused)."""

from .config import Limits, SandboxConfig
from .manager import Sandbox, SandboxStatus, SandboxUnavailable

__all__ = ["Limits", "SandboxConfig", "Sandbox", "SandboxStatus", "SandboxUnavailable"]
