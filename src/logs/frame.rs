//! Line framing over one read buffer, without per-line work.
//!
//! A pump reads into [`Framer::spare`], reports the bytes with [`Framer::filled`] and takes
//! [`Block`]s until none is left. A block is either a run of complete lines, ending with `\n`, found
//! with one `memrchr` — sinks write it with one call — or one piece of a line longer than
//! [`MAX_LINE`] (found with a backward search per 64 KiB window, only when the block is longer than
//! that), or the unterminated last line at end of file. The partial line at the end of a read
//! stays in the buffer and is moved to its front before the next read (it is short, usually).

/// Longest line kept whole; longer lines are split into pieces of this size.
pub const MAX_LINE: usize = 64 * 1024;

/// Bytes asked for per read, once a program writes a lot.
pub const READ_CHUNK: usize = 1024 * 1024;

/// The buffer a pump starts with.
const FIRST_BUFFER: usize = 4096;

/// The largest buffer: a full read plus the longest partial line it may follow.
const FULL_BUFFER: usize = READ_CHUNK + MAX_LINE;

/// A piece of output ready for the sinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<'a> {
    /// The bytes; when `terminated`, whole lines each ending with `\n`.
    pub data: &'a [u8],
    /// `false` for one line without its `\n` (a split long line, or the last line at EOF);
    /// sinks add the newline.
    pub terminated: bool,
}

impl Block<'_> {
    /// Iterates the lines, without their `\n`.
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> {
        let data = if self.terminated {
            &self.data[..self.data.len().saturating_sub(1)]
        } else {
            self.data
        };
        data.split(|&b| b == b'\n')
    }

    /// Number of lines in the block.
    pub fn line_count(&self) -> usize {
        if self.terminated {
            memchr::memchr_iter(b'\n', self.data).count()
        } else {
            1
        }
    }
}

/// The read buffer of one pipe and the framing state.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Framer {
    /// An empty framer; its buffer is allocated on first use, so a silent program costs nothing.
    pub fn new() -> Self {
        Framer::default()
    }

    /// Space to read into (compacting the partial line to the front first).
    pub fn spare(&mut self) -> &mut [u8] {
        // Start small (a quiet program, or a pipe only read for its end of file, costs a page),
        // and grow by 4x whenever a read filled all the space there was.
        if self.buf.is_empty() {
            self.buf = vec![0; FIRST_BUFFER];
        } else if self.end == self.buf.len() && self.buf.len() < FULL_BUFFER {
            let grown = (self.buf.len() * 4).min(FULL_BUFFER);
            self.buf.resize(grown, 0);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    /// Records that `n` bytes were read into [`Framer::spare`].
    pub fn filled(&mut self, n: usize) {
        self.end += n;
        debug_assert!(self.end <= self.buf.len());
    }

    /// The next block of complete lines (or a piece of an over-long line), if any.
    pub fn next_block(&mut self) -> Option<Block<'_>> {
        let data = &self.buf[self.start..self.end];
        let complete = memchr::memrchr(b'\n', data).map_or(0, |p| p + 1);
        // A line longer than MAX_LINE is cut into pieces, complete or not: find where the
        // first one starts (one vectorised scan of the block; no copy, no allocation).
        let long_at = if complete > MAX_LINE {
            first_long_line(&data[..complete])
        } else {
            None
        };
        let (len, terminated) = match long_at {
            Some(0) => (MAX_LINE, false),
            Some(at) => (at, true),
            None if complete > 0 => (complete, true),
            // Exactly MAX_LINE pending may still be a whole line: wait for one more byte.
            None if data.len() > MAX_LINE => (MAX_LINE, false),
            None => return None,
        };
        let block = &self.buf[self.start..self.start + len];
        self.start += len;
        Some(Block {
            data: block,
            terminated,
        })
    }

    /// At end of file: the last line, if it had no `\n`.
    pub fn finish(&mut self) -> Option<Block<'_>> {
        if self.start == self.end {
            return None;
        }
        let block = &self.buf[self.start..self.end];
        self.start = self.end;
        Some(Block {
            data: block,
            terminated: false,
        })
    }

    /// Bytes held as an incomplete line.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }
}

/// Where the first line longer than [`MAX_LINE`] starts in `data` (whole lines).
///
/// Jumps window by window instead of visiting every newline: the last newline within
/// `MAX_LINE + 1` bytes of a line start proves every line up to it short enough, so a block of
/// short lines costs one backward `memrchr` per 64 KiB (a few per read), not one call per line.
fn first_long_line(data: &[u8]) -> Option<usize> {
    let mut line_start = 0;
    while line_start < data.len() {
        let window_end = (line_start + MAX_LINE + 1).min(data.len());
        match memchr::memrchr(b'\n', &data[line_start..window_end]) {
            Some(nl) => line_start += nl + 1,
            None => return Some(line_start),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` through a framer (as reads of at most the space it offers); returns every
    /// line as the sinks would see it.
    fn run(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut f = Framer::new();
        let mut out = Vec::new();
        for chunk in chunks {
            let mut rest: &[u8] = chunk;
            while !rest.is_empty() {
                let spare = f.spare();
                let n = spare.len().min(rest.len());
                spare[..n].copy_from_slice(&rest[..n]);
                f.filled(n);
                rest = &rest[n..];
                while let Some(b) = f.next_block() {
                    out.extend(b.lines().map(<[u8]>::to_vec));
                }
            }
        }
        if let Some(b) = f.finish() {
            out.extend(b.lines().map(<[u8]>::to_vec));
        }
        out
    }

    #[test]
    fn the_buffer_starts_small_and_grows_for_chatty_programs() {
        let mut f = Framer::new();
        assert_eq!(f.spare().len(), FIRST_BUFFER);
        let n = f.spare().len();
        f.filled(n);
        assert_eq!(
            f.spare().len(),
            3 * FIRST_BUFFER,
            "a full read grows the buffer 4x"
        );
        let lines = run(&[&b"0123456789\n".repeat(200_000)]);
        assert_eq!(lines.len(), 200_000);
    }

    #[test]
    fn splits_complete_lines_and_keeps_the_partial_one() {
        let lines = run(&[b"one\ntw", b"o\nthree\n", b"four"]);
        assert_eq!(
            lines,
            vec![
                b"one".to_vec(),
                b"two".to_vec(),
                b"three".to_vec(),
                b"four".to_vec()
            ]
        );
    }

    #[test]
    fn one_block_per_read_for_many_lines() {
        let mut f = Framer::new();
        let data = b"a\nb\nc\npartial";
        f.spare()[..data.len()].copy_from_slice(data);
        f.filled(data.len());
        let b = f.next_block().unwrap();
        assert_eq!(b.data, b"a\nb\nc\n");
        assert_eq!(b.line_count(), 3);
        assert!(f.next_block().is_none());
        assert_eq!(f.pending(), 7);
    }

    #[test]
    fn over_long_lines_are_split_not_dropped() {
        let long = vec![b'x'; MAX_LINE * 2 + 10];
        let mut input = long.clone();
        input.extend_from_slice(b"\nafter\n");
        let lines = run(&[&input]);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].len(), MAX_LINE);
        assert_eq!(lines[1].len(), MAX_LINE);
        assert_eq!(lines[2].len(), 10);
        assert_eq!(lines[3], b"after");
        assert_eq!(lines[..3].concat(), long);
    }

    #[test]
    fn long_lines_are_found_among_short_ones() {
        let mut data = b"short\n".repeat(20_000);
        assert_eq!(first_long_line(&data), None);
        let at = data.len();
        data.extend(vec![b'y'; MAX_LINE + 1]);
        data.push(b'\n');
        data.extend(b"tail\n");
        assert_eq!(first_long_line(&data), Some(at));
        // Exactly MAX_LINE is not too long.
        let mut exact = vec![b'z'; MAX_LINE];
        exact.push(b'\n');
        assert_eq!(first_long_line(&exact), None);
    }

    #[test]
    fn invalid_utf8_and_empty_lines_pass_through() {
        let lines = run(&[b"\xff\xfe\n\n\x00x\n"]);
        assert_eq!(
            lines,
            vec![b"\xff\xfe".to_vec(), b"".to_vec(), b"\x00x".to_vec()]
        );
    }

    #[test]
    fn nothing_pending_means_nothing_at_eof() {
        assert!(run(&[]).is_empty());
        let mut f = Framer::new();
        assert!(f.finish().is_none());
    }
}
