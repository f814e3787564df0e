"""Settings: one declared schema (`schema`), and reading, checking and merging the files that
hold it (`loader`). `codebelt config` shows the result with the file each value came from."""

from .loader import Layer, RuleSource, Settings, load_settings, user_settings_path
from .schema import MODES, SANDBOX_MODES, SettingsModel, json_schema

__all__ = [
    "Layer", "RuleSource", "Settings", "load_settings", "user_settings_path",
    "MODES", "SANDBOX_MODES", "SettingsModel", "json_schema",
]
