"""Settings: one declared schema (`schema`), what a workspace's own files may do with each key
(`narrowing`), whether the user trusts the workspace (`trust`), bounded reading of the files
(`reading`), and checking and merging them (`loader`). `codebelt config` shows the result with
the file each value came from."""

from .loader import Ignored, Layer, RuleSource, Settings, load_settings, user_settings_path
from .schema import MODES, SANDBOX_MODES, SettingsModel, json_schema
from .trust import Trust

__all__ = [
    "Ignored", "Layer", "RuleSource", "Settings", "Trust", "load_settings", "user_settings_path",
    "MODES", "SANDBOX_MODES", "SettingsModel", "json_schema",
]
