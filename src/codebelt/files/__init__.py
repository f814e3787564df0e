"""File engines: text codec, line index and paging, file states, atomic writes, media, editing.

Plain libraries with no knowledge of sessions or permissions; the tools in codebelt.tools call them.
"""
