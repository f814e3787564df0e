"""codebelt: the tool layer of a coding agent.

    from codebelt import Session
    with Session(root=".") as s:
        print(s.call("Grep", {"pattern": "def main"}).text)
"""

from .errors import CodebeltError, PathError, SettingsError, UnknownToolError
from .permissions.approvers import ApprovalRequest
from .permissions.decision import Decision
from .session import Session
from .tool import Image, ToolResult

__all__ = [
    "Session", "ToolResult", "Image", "Decision", "ApprovalRequest",
    "CodebeltError", "PathError", "SettingsError", "UnknownToolError",
]
__version__ = "0.1.0"
