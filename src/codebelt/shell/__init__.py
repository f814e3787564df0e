"""The shell engines: `analysis` (what a command line would do: parse, read-only, danger) and
`execution` (running commands: processes, output spooling, background tasks, working directory).
The OS sandbox the runner wraps commands in is its own package, `codebelt.sandbox`."""
