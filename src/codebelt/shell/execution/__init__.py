"""Running shell commands: `bash -c` in its own process group (`runner`), output spooled to disk
(`spool`), process-group and escapee handling (`procs`), foreground waits with auto-background
(`foreground`), background tasks (`tasks`) and the persistent working directory (`cwd`)."""
