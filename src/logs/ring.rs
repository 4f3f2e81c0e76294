//! The last lines of a program, kept in memory for `ctrlinit logs` and crash reports.
//!
//! Bytes and the stream and time each run of lines came from are kept separately (one byte
//! deque, one deque of segments), so pushing a block costs a copy and no per-line work. Lines
//! read together share their segment's time (milliseconds), which is what `ctrlinit logs` merges
//! programs by. Nothing is allocated until the program writes.
//!
//! Invariant: the byte deque never holds, nor is ever given room for, more than `cap` bytes.
//! Old lines are dropped *before* new ones are added, and the deque grows by doubling up to
//! `cap` and then exactly to it, so a full ring's buffer is `cap` bytes. (Appending first and
//! trimming after let the deque outgrow `cap` once and double to twice its size: every ring
//! then took 128 KiB, whose second half a program killed again and again paged in a few lines
//! at a time over an hour.)

use std::collections::VecDeque;

use super::command::Stream;

/// Default capacity.
pub const RING_BYTES: usize = 64 * 1024;

/// A run of bytes from one stream, read at one time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    stream: Stream,
    len: usize,
    /// When it was read: milliseconds since the Unix epoch.
    at_ms: u64,
}

/// One line of the ring: when it was read, its stream, its bytes (without the newline).
pub type TimedLine = (u64, Stream, Vec<u8>);

/// The last `cap` bytes of a program's output, at line boundaries.
#[derive(Debug)]
pub struct Ring {
    bytes: VecDeque<u8>,
    segments: VecDeque<Segment>,
    cap: usize,
}

impl Ring {
    /// An empty ring of `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Ring {
            bytes: VecDeque::new(),
            segments: VecDeque::new(),
            cap,
        }
    }

    /// Adds a block read at `at_ms`: complete lines, or one line without its `\n` when not
    /// `terminated`.
    pub fn push_block(&mut self, stream: Stream, data: &[u8], terminated: bool, at_ms: u64) {
        if terminated {
            self.push(stream, data, at_ms);
        } else {
            let keep = &data[data.len().saturating_sub(self.cap - 1)..];
            self.make_room(keep.len() + 1);
            self.bytes.extend(keep);
            self.bytes.push_back(b'\n');
            self.add_segment(stream, keep.len() + 1, at_ms);
        }
    }

    /// Adds complete lines (`data` ends with `\n`) read at `at_ms`.
    pub fn push(&mut self, stream: Stream, data: &[u8], at_ms: u64) {
        debug_assert!(data.ends_with(b"\n"));
        let data = if data.len() > self.cap {
            // Only the tail can survive: start at a line boundary within the last `cap` bytes.
            let from = data.len() - self.cap;
            match memchr::memchr(b'\n', &data[from - 1..]) {
                Some(p) if from + p < data.len() => &data[from + p..],
                _ => &data[from..],
            }
        } else {
            data
        };
        self.make_room(data.len());
        self.bytes.extend(data);
        self.add_segment(stream, data.len(), at_ms);
    }

    fn add_segment(&mut self, stream: Stream, len: usize, at_ms: u64) {
        match self.segments.back_mut() {
            Some(s) if s.stream == stream && s.at_ms == at_ms => s.len += len,
            _ => self.segments.push_back(Segment { stream, len, at_ms }),
        }
    }

    /// Drops the oldest whole lines until `incoming` more bytes fit within `cap`, and gives the
    /// deque room for them without letting its capacity pass `cap`.
    fn make_room(&mut self, incoming: usize) {
        debug_assert!(incoming <= self.cap);
        self.trim_to(self.cap - incoming);
        let needed = self.bytes.len() + incoming;
        if needed > self.bytes.capacity() {
            // Amortised doubling, but never past `cap`.
            let target = needed.max(self.bytes.capacity() * 2).min(self.cap);
            self.bytes.reserve_exact(target - self.bytes.len());
        }
    }

    /// Drops the oldest whole lines until at most `limit` bytes are held.
    fn trim_to(&mut self, limit: usize) {
        while self.bytes.len() > limit {
            let excess = self.bytes.len() - limit;
            let Some(Segment { len: first, .. }) = self.segments.front_mut() else {
                break;
            };
            if *first <= excess {
                let n = *first;
                self.bytes.drain(..n);
                self.segments.pop_front();
                continue;
            }
            // Drop whole lines from the first segment until within bounds: the first line
            // boundary at or after `excess` (a boundary follows a `\n`).
            let cut = self
                .bytes
                .range(excess - 1..*first)
                .position(|&b| b == b'\n')
                .map_or(*first, |p| excess + p);
            self.bytes.drain(..cut);
            *first -= cut;
            if *first == 0 {
                self.segments.pop_front();
            }
        }
    }

    /// The last `n` lines, oldest first, with their stream.
    pub fn last_lines(&self, n: usize) -> Vec<(Stream, Vec<u8>)> {
        self.last_timed_lines(n)
            .into_iter()
            .map(|(_, stream, line)| (stream, line))
            .collect()
    }

    /// The last `n` lines, oldest first, with when they were read and their stream.
    pub fn last_timed_lines(&self, n: usize) -> Vec<TimedLine> {
        let mut out = Vec::new();
        if n == 0 {
            return out;
        }
        let mut end = self.bytes.len();
        for seg in self.segments.iter().rev() {
            let start = end - seg.len;
            let bytes: Vec<u8> = self.bytes.range(start..end).copied().collect();
            let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            for line in body.split(|&b| b == b'\n').rev() {
                out.push((seg.at_ms, seg.stream, line.to_vec()));
                if out.len() == n {
                    out.reverse();
                    return out;
                }
            }
            end = start;
        }
        out.reverse();
        out
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[(Stream, Vec<u8>)]) -> Vec<String> {
        lines
            .iter()
            .map(|(s, l)| {
                format!(
                    "{}{}",
                    if *s == Stream::Stderr { "!" } else { "" },
                    String::from_utf8_lossy(l)
                )
            })
            .collect()
    }

    #[test]
    fn keeps_the_last_lines_in_order_across_streams() {
        let mut r = Ring::new(1024);
        assert_eq!(
            r.bytes.capacity(),
            0,
            "nothing allocated before the first line"
        );
        r.push(Stream::Stdout, b"a\nb\n", 1);
        r.push(Stream::Stderr, b"oops\n", 1);
        r.push(Stream::Stdout, b"c\n", 1);
        assert_eq!(text(&r.last_lines(10)), vec!["a", "b", "!oops", "c"]);
        assert_eq!(text(&r.last_lines(2)), vec!["!oops", "c"]);
    }

    #[test]
    fn lines_keep_the_time_they_were_read() {
        let mut r = Ring::new(1024);
        r.push(Stream::Stdout, b"a\nb\n", 10);
        r.push(Stream::Stdout, b"c\n", 10);
        r.push(Stream::Stdout, b"d\n", 20);
        let times: Vec<u64> = r.last_timed_lines(10).iter().map(|l| l.0).collect();
        assert_eq!(times, vec![10, 10, 10, 20]);
        // Same stream and time: one segment.
        assert_eq!(r.segments.len(), 2);
    }

    #[test]
    fn the_buffer_never_grows_past_the_cap() {
        // Appending before trimming made a full ring's deque double past its cap, to
        // 128 KiB for 64 KiB of lines.
        for cap in [RING_BYTES, 1000] {
            let mut r = Ring::new(cap);
            for i in 0..(4 * cap / 30) {
                let line = format!("line {i} of a program that keeps writing\n");
                let stream = if i % 7 == 0 {
                    Stream::Stderr
                } else {
                    Stream::Stdout
                };
                r.push(stream, line.as_bytes(), i as u64);
                assert!(r.len() <= cap);
            }
            r.push_block(Stream::Stdout, &vec![b'x'; 3 * cap], false, 1 << 40);
            assert!(r.len() <= cap);
            assert_eq!(r.bytes.capacity(), cap, "cap {cap}");
        }
    }

    #[test]
    fn drops_whole_old_lines_when_full() {
        let mut r = Ring::new(10);
        r.push(Stream::Stdout, b"1111\n2222\n", 1);
        r.push(Stream::Stdout, b"3333\n", 2);
        assert!(r.len() <= 10);
        assert_eq!(text(&r.last_lines(10)), vec!["2222", "3333"]);
        // A block larger than the ring keeps only its last lines.
        r.push(Stream::Stderr, b"aaaa\nbbbb\ncccc\ndddd\n", 3);
        assert_eq!(text(&r.last_lines(10)), vec!["!cccc", "!dddd"]);
    }
}
