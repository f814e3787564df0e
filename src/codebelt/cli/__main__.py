import os
import sys

# `python -m codebelt.cli` puts the current directory first on sys.path, and a module codebelt
# imports on first use (pypdf for a PDF, say) would be looked for there before anywhere else: in
# the workspace, where the repository or a command may have planted one of that name
if not sys.flags.safe_path and sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd():
    del sys.path[0]

from . import main  # noqa: E402

raise SystemExit(main())
