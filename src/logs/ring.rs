//! The last lines of a program, kept in memory for `ctrlinit logs` and crash reports.
//!
//! Bytes and the stream each run of lines came from are kept separately (one byte deque, one
//! deque of segment lengths), so pushing a block costs a copy and no per-line work. Nothing is
//! allocated until the program writes.

use std::collections::VecDeque;

use super::Stream;

/// Default capacity.
pub const RING_BYTES: usize = 64 * 1024;

/// The last `cap` bytes of a program's output, at line boundaries.
#[derive(Debug)]
pub struct Ring {
    bytes: VecDeque<u8>,
    segments: VecDeque<(Stream, usize)>,
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

    /// Adds a block: complete lines, or one line without its `\n` when not `terminated`.
    pub fn push_block(&mut self, stream: Stream, data: &[u8], terminated: bool) {
        if terminated {
            self.push(stream, data);
        } else {
            let keep = &data[data.len().saturating_sub(self.cap - 1)..];
            self.bytes.extend(keep);
            self.bytes.push_back(b'\n');
            self.add_segment(stream, keep.len() + 1);
            self.trim();
        }
    }

    /// Adds complete lines (`data` ends with `\n`).
    pub fn push(&mut self, stream: Stream, data: &[u8]) {
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
        self.bytes.extend(data);
        self.add_segment(stream, data.len());
        self.trim();
    }

    fn add_segment(&mut self, stream: Stream, len: usize) {
        match self.segments.back_mut() {
            Some((s, n)) if *s == stream => *n += len,
            _ => self.segments.push_back((stream, len)),
        }
    }

    fn trim(&mut self) {
        while self.bytes.len() > self.cap {
            let excess = self.bytes.len() - self.cap;
            let Some((_, first)) = self.segments.front_mut() else {
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
        let mut out = Vec::new();
        if n == 0 {
            return out;
        }
        let mut end = self.bytes.len();
        for &(stream, len) in self.segments.iter().rev() {
            let start = end - len;
            let seg: Vec<u8> = self.bytes.range(start..end).copied().collect();
            let body = seg.strip_suffix(b"\n").unwrap_or(&seg);
            for line in body.split(|&b| b == b'\n').rev() {
                out.push((stream, line.to_vec()));
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
        r.push(Stream::Stdout, b"a\nb\n");
        r.push(Stream::Stderr, b"oops\n");
        r.push(Stream::Stdout, b"c\n");
        assert_eq!(text(&r.last_lines(10)), vec!["a", "b", "!oops", "c"]);
        assert_eq!(text(&r.last_lines(2)), vec!["!oops", "c"]);
    }

    #[test]
    fn drops_whole_old_lines_when_full() {
        let mut r = Ring::new(10);
        r.push(Stream::Stdout, b"1111\n2222\n");
        r.push(Stream::Stdout, b"3333\n");
        assert!(r.len() <= 10);
        assert_eq!(text(&r.last_lines(10)), vec!["2222", "3333"]);
        // A block larger than the ring keeps only its last lines.
        r.push(Stream::Stderr, b"aaaa\nbbbb\ncccc\ndddd\n");
        assert_eq!(text(&r.last_lines(10)), vec!["!cccc", "!dddd"]);
    }
}
