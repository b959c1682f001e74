"""Log streams into append-only spool files (no line cap, no dropped line).

A :class:`LogSpool` is a file plus a byte-offset index of line starts (like
toolong): any line is read back by one seek, memory stays small however long
the log grows, and :meth:`LogSpool.search` / :meth:`LogSpool.save` work on the
file.  A :class:`LogStream` fills a spool from one or more container streams:

* every container is requested with server timestamps, so lines of several
  pods are merged by time (each line prefixed ``[pod/container]``) and a
  broken stream resumes from the last timestamp without duplicating lines;
* an unterminated last line is visible as a provisional line and replaced by
  the complete line when its newline arrives;
* text is stored and returned verbatim: nothing here interprets markup or
  escape sequences (widgets must render it as plain text).

The package, by idea: ``log_requests`` (what to stream), ``timestamps`` (kubelet's RFC3339Nano
prefixes), ``spool`` (the file, its line index and search), ``spool_dirs`` (per-process spool
directories and the clean-up of stale ones), ``stream`` (following and merging container
streams into a spool) and ``saving`` (saving a spool to a file the user named).
"""
