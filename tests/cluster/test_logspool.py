from __future__ import annotations

import random
import re
import threading

from tau_tui.core.cluster.logspool.log_requests import LogChunkRequest, LogRequest
from tau_tui.core.cluster.logspool.spool import LogSpool
from tau_tui.core.cluster.logspool.stream import LogStream
from tau_tui.core.cluster.logspool.timestamps import format_timestamp_ns, split_timestamp


def test_spool_index_reads_any_line_and_has_no_cap(tmp_path):
    spool = LogSpool(directory=str(tmp_path))
    for i in range(50_000):
        spool.append_line(f"line {i} é")
    assert spool.line_count == 50_000
    assert spool.line(0) == "line 0 é"
    assert spool.line(49_999) == "line 49999 é"
    assert spool.lines(1000, 1003) == ["line 1000 é", "line 1001 é", "line 1002 é"]
    assert spool.lines(-2) == ["line 49998 é", "line 49999 é"]
    spool.close()


def test_line_index_widens_to_64_bit_past_4_gib(tmp_path):
    spool = LogSpool(directory=str(tmp_path))
    spool.append_encoded([b"first"])
    assert spool._offsets.typecode == "I"  # 4 bytes a line while the file is under 4 GiB
    spool._offsets[-1] = 0xFFFF_FFF0  # as if 4 GiB had been written (the index only; nothing is read back)
    spool.append_encoded([b"x" * 100, b"y"])
    assert spool._offsets.typecode == "Q"
    assert list(spool._offsets) == [0, 0xFFFF_FFF0, 0xFFFF_FFF0 + 101, 0xFFFF_FFF0 + 103]
    spool.close()


def test_partial_line_is_visible_then_replaced(tmp_path):
    spool = LogSpool(directory=str(tmp_path))
    spool.append_line("done")
    spool.set_partial("src", "half a li")
    assert spool.line_count == 2 and spool.line(1) == "half a li"
    assert spool.committed_count == 1
    spool.set_partial("src", None)
    spool.append_line("half a line")
    assert spool.lines() == ["done", "half a line"]


def test_search_save_and_markup_verbatim(tmp_path):
    spool = LogSpool(directory=str(tmp_path))
    texts = ["[bold red]not markup[/]", "\x1b[31mansi kept\x1b[0m", "plain ERROR here", "error again"]
    for t in texts:
        spool.append_line(t)
    spool.set_partial("p", "tail ERROR")
    assert spool.lines() == texts + ["tail ERROR"]
    assert spool.search("error") == [2, 3, 4]
    assert spool.search("ERROR", ignore_case=False) == [2, 4]
    assert spool.search(r"\[bold.*\]", regex=True) == [0]
    out = tmp_path / "out.log"
    assert spool.save(str(out)) == 5
    assert out.read_text(encoding="utf-8").splitlines() == texts + ["tail ERROR"]
    assert (out.stat().st_mode & 0o777) != 0
    spool.close()
    assert not (tmp_path / spool.path).exists()


def test_block_search_finds_what_a_per_line_search_finds(tmp_path, monkeypatch):
    # Small blocks so that lines straddle many block boundaries; ASCII and non-ASCII blocks both occur.
    monkeypatch.setattr(LogSpool, "SEARCH_BLOCK", 512)
    rng = random.Random(7)
    words = ["error", "ERROR", "Warn", "\u212a", "caf\u00e9", "x", "", "a b", "foo$", "^bar", "[x]", "\u00fcber", "\r"]
    spool = LogSpool(directory=str(tmp_path))
    count = spool.append_lines(" ".join(rng.choice(words) for _ in range(rng.randint(0, 4))) for _ in range(3000))
    assert count == 3000 and spool.committed_count == 3000
    spool.set_partial("p", "partial error line")
    everything = spool.lines()
    cases = [("error", False, True), ("error", False, False), ("k", False, True), ("\u00dcBER", False, True),
             ("^bar", True, True), ("foo$", True, False), (r"\bx\b", True, True), (r"a\s+b", True, True), ("", False, True),
             (r"^$", True, True), (r"(?<=a) b", True, True), (r"x\Z", True, True), ("r\n", False, True), ("[x]", False, True),
             # regexes with a required literal: found by the literal, confirmed by the regex
             (r"rror\b", True, True), (r"ERR.R \w+", True, False), (r"(?i)error [x\u212a]", True, False), (r"caf\u00e9 ?\w*", True, True)]
    for pattern, regex, ignore_case in cases:
        rx = re.compile(pattern if regex else re.escape(pattern), re.IGNORECASE if ignore_case else 0)
        for start in (0, 1234):
            expected = [i for i, text in enumerate(everything) if i >= start and rx.search(text)]
            assert spool.search(pattern, regex=regex, ignore_case=ignore_case, start=start) == expected, pattern
    spool.close()


def test_timestamps_parse_with_nanoseconds_and_offsets():
    ns, ts, rest = split_timestamp(b"2026-01-01T00:00:01.123456789Z hello world")
    assert rest == b"hello world" and ts == b"2026-01-01T00:00:01.123456789Z"
    assert format_timestamp_ns(ns) == "2026-01-01T00:00:01.123456789Z"
    ns2, _, _ = split_timestamp(b"2026-01-01T01:00:01.123456789+01:00 x")
    assert ns2 == ns
    assert split_timestamp(b"no stamp")[0] is None


def test_block_parse_equals_line_by_line(tmp_path):
    # The follower parses a chunk whose lines all carry timestamps with one regex call; the result
    # (lines, order keys, resume state) must be what the line-by-line path gives.
    raw = [b"2026-01-01T00:00:01.5Z a\r", b"2026-01-01T00:00:01.5Z b", b"2026-01-01T01:00:02+01:00 c [x]",
           b"2026-01-01T00:00:03.123456789Z ", b"2026-01-01T00:00:03.123456789Z \xff\xfe bytes"]
    for timestamps in (False, True):
        request = LogRequest(namespace="ns", pods=("a", "b"), follow=True, timestamps=timestamps)
        by_block, by_line = (LogStream(FlakySource([], 0), request, [("a", "main"), ("b", "main")],
                                       spool_dir=str(tmp_path))._followers[0] for _ in range(2))
        block_batch, line_batch = [], []
        assert by_block._emit_block(b"\n".join(raw), block_batch, 1.0)
        for line in raw:
            by_line._emit(line, 0, 0, line_batch, 1.0)
        assert block_batch == line_batch
        assert (by_block.last_ns, by_block.same_ns_count, by_block._seq) == (by_line.last_ns, by_line.same_ns_count, by_line._seq)
        assert not by_block._emit_block(b"\n".join([*raw, b"no timestamp"]), [], 1.0)


class FlakySource:
    """A scripted log source: serves lines, breaks once mid-stream, honours sinceTime (seconds)."""

    def __init__(self, lines, break_after, partial_tail=b""):
        self.lines = lines
        self.break_after = break_after
        self.partial_tail = partial_tail
        self.opens = []
        self.lock = threading.Lock()

    def resolve_log_targets(self, request):
        return [("pod-a", "main")]

    def open_container_log(self, req: LogChunkRequest):
        with self.lock:
            self.opens.append(req)
            first = len(self.opens) == 1
        since = int(req.since_time.timestamp()) * 10**9 if req.since_time else 0
        chosen = [line for line in self.lines if split_timestamp(line)[0] >= since]
        source = self

        class It:
            def __iter__(self_inner):
                for i, line in enumerate(chosen):
                    if first and i == source.break_after:
                        yield line[:7]  # a torn partial line, then the connection drops
                        raise ConnectionResetError("reset")
                    yield line + b"\n"
                if source.partial_tail:
                    yield source.partial_tail

            def close(self_inner):
                pass
        return It()

    def container_finished(self, namespace, pod, container):
        return True


def test_stream_resumes_after_break_without_duplicates(tmp_path):
    base = 1_767_225_600 * 10**9
    lines = []
    for i in range(30):
        ns = base + (i // 3) * 10**9 + (i % 3)  # three lines share each second, two share a nanosecond below
        lines.append(f"{format_timestamp_ns(ns)} line {i}".encode())
    lines.insert(10, lines[9].split(b" ", 1)[0] + b" same-ns twin")  # identical timestamp as line 9
    source = FlakySource(lines, break_after=12, partial_tail=b"2026-01-01T00:00:30.000000000Z unterminated")
    stream = LogStream(source, LogRequest(namespace="ns", pods=("pod-a",), follow=True), [("pod-a", "main")],
                       spool_dir=str(tmp_path)).start()
    assert stream.wait_done(10)
    expected = [line.split(b" ", 1)[1].decode() for line in lines] + ["unterminated"]
    assert stream.spool.lines() == expected
    assert stream.reconnects == 1 and len(source.opens) == 2
    assert source.opens[1].since_time is not None and source.opens[1].tail_lines is None
