//! Line framing, the log path's hot pure code: one read buffer of 100-byte lines (as a chatty
//! program writes them) framed into blocks, and the same with one over-long line in it.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctrlinit::logs::frame::Framer;

/// `n` numbered 100-byte lines.
fn lines(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 100);
    for i in 0..n {
        out.extend_from_slice(format!("{i:010} ").as_bytes());
        out.extend_from_slice(&[b'x'; 88]);
        out.push(b'\n');
    }
    out
}

/// Frames `input` in reads of at most what the framer offers; returns the lines seen.
fn frame(input: &[u8]) -> usize {
    let mut f = Framer::new();
    let mut seen = 0;
    let mut rest = input;
    while !rest.is_empty() {
        let spare = f.spare();
        let n = spare.len().min(rest.len());
        spare[..n].copy_from_slice(&rest[..n]);
        f.filled(n);
        rest = &rest[n..];
        while let Some(block) = f.next_block() {
            seen += block.line_count();
        }
    }
    seen
}

fn framing(c: &mut Criterion) {
    let input = lines(10_000);
    let mut g = c.benchmark_group("line_framing");
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("1MB of 100-byte lines", |b| {
        b.iter(|| frame(black_box(&input)))
    });
    let mut with_long = lines(5_000);
    with_long.extend(vec![b'y'; 200_000]);
    with_long.push(b'\n');
    with_long.extend(lines(5_000));
    g.throughput(Throughput::Bytes(with_long.len() as u64));
    g.bench_function("1.2MB with a 200KB line", |b| {
        b.iter(|| frame(black_box(&with_long)))
    });
    g.finish();
}

criterion_group!(benches, framing);
criterion_main!(benches);
