"""Reading a recording: an index of its gzip members (one per keyframe), then one member at a time.

Opening a file decompresses it once to find where each member starts and which times it
covers, reading only each line's ``{"t":...`` prefix; a seek then decompresses and parses the
one member whose keyframe precedes the wanted time (:attr:`RecordingReader.records_decoded`
counts the records parsed, so tests bound a seek's work).  A file cut short (the app was
killed while recording) replays up to its last complete record."""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_tui.core.operations.recording import format as fmt

_GZIP_MAGIC = b"\x1f\x8b"
_PREFIX = b'{"t":'


@dataclass(frozen=True)
class Member:
    """One gzip member: a keyframe and the records after it."""

    offset: int  # compressed bytes from the start of the file
    length: int  # compressed bytes (to the end of the file for a truncated last member)
    first_t: float  # the keyframe's time
    last_t: float
    records: int  # complete records, keyframe included (header excluded)
    skip: int  # lines before the keyframe (the header, in the first member)


class RecordingReader:
    """The index of one recording file.  Raises :class:`RecordingError` naming the file and
    what to do when it is missing, not a recording, of another version or holds no keyframe."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.members: list[Member] = []
        self.header: dict[str, Any] = {}
        #: The file ends in the middle of a record or of a gzip member (the recorder was stopped).
        self.truncated = False
        #: Records parsed by :meth:`member_records` so far.
        self.records_decoded = 0
        self._data = self._read()
        self._scan()

    # -- opening ---------------------------------------------------------------------

    def _fail(self, what: str, todo: str) -> fmt.RecordingError:
        return fmt.RecordingError(f"cannot replay {self.path}: {what}; {todo}")

    def _read(self) -> bytes:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            raise self._fail("no such file", "give the path of a file written by tau-tui --record FILE") from None
        except IsADirectoryError:
            raise self._fail("it is a directory", "give the recording file inside it") from None
        except OSError as err:
            raise self._fail(err.strerror or str(err), "check the path and its permissions") from None
        if not data:
            raise self._fail("the file is empty", "the recording was stopped before it wrote anything; record again")
        if not data.startswith(_GZIP_MAGIC):
            raise self._fail("it is not a tau-tui recording (not gzip-compressed)",
                             "give a file written by tau-tui --record FILE")
        return data

    def _scan(self) -> None:
        view = memoryview(self._data)
        pos = 0
        while pos < len(self._data):
            decompressor = zlib.decompressobj(wbits=31)
            try:
                out = decompressor.decompress(view[pos:])
            except zlib.error:
                if not self.members:
                    raise self._fail("its compressed data is damaged", "record the session again") from None
                self.truncated = True  # damaged after the last good member: replay what came before
                break
            end = len(self._data) - len(decompressor.unused_data) if decompressor.eof else len(self._data)
            if not decompressor.eof:
                self.truncated = True
            lines = out.split(b"\n")
            if lines[-1]:
                self.truncated = True  # a record cut in the middle
            lines = lines[:-1]
            skip = 0
            if not self.members:
                self._read_header(lines[0] if lines else b"")
                skip = 1
            times = self._times(lines[skip:])
            if not times:
                if not self.members:
                    raise self._fail("it holds no complete snapshot (the recorder stopped before its first keyframe)",
                                     "record the session again for a little longer")
                break
            self.members.append(Member(pos, end - pos, times[0], times[-1], len(times), skip))
            if not decompressor.eof:
                break
            pos = end

    def _read_header(self, line: bytes) -> None:
        try:
            header = json.loads(line) if line else None
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("format") != fmt.FORMAT:
            if not line:
                raise self._fail("it holds no complete header (the recorder stopped at once)", "record the session again")
            raise self._fail("it is not a tau-tui recording (its first line is no tau-tui-recording header)",
                             "give a file written by tau-tui --record FILE")
        if header.get("version") != fmt.VERSION:
            raise self._fail(f"it is a recording of format version {header.get('version')}, this tau-tui reads "
                             f"version {fmt.VERSION}", "replay it with the tau-tui version that recorded it")
        self.header = header

    def _times(self, lines: list[bytes]) -> list[float]:
        """Each complete record's time, from its prefix (no JSON parsing); stops at a bad line."""
        times: list[float] = []
        for number, line in enumerate(lines):
            comma = line.find(b",")
            try:
                if not line.startswith(_PREFIX) or comma < 0:
                    raise ValueError
                times.append(float(line[len(_PREFIX):comma]))
            except ValueError:
                self.truncated = True
                break
            if number == 0 and b'"op":"keyframe"' not in line[: comma + 20]:
                self.truncated = True  # a member must start with its keyframe
                return []
        return times

    # -- reading ------------------------------------------------------------------------

    @property
    def start(self) -> float:
        return self.members[0].first_t

    @property
    def end(self) -> float:
        return self.members[-1].last_t

    def member_at(self, t: float) -> int:
        """The last member whose keyframe is at or before ``t`` (the first one for earlier times)."""
        index = 0
        for i, member in enumerate(self.members):
            if member.first_t <= t:
                index = i
            else:
                break
        return index

    def member_records(self, index: int) -> list[dict[str, Any]]:
        """The parsed records of one member, keyframe first."""
        member = self.members[index]
        decompressor = zlib.decompressobj(wbits=31)
        try:
            out = decompressor.decompress(memoryview(self._data)[member.offset: member.offset + member.length])
        except zlib.error:
            out = b""
        lines = out.split(b"\n")[member.skip: member.skip + member.records]
        records = [json.loads(line) for line in lines]
        self.records_decoded += len(records)
        return records
