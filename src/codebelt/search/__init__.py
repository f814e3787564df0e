"""Search engines on the ripgrep binary (see ripgrep.py, grep.py, glob.py)."""
