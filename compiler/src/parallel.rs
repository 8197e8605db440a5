//! Splitting a pass over many items among the compile's threads: each
//! part is contiguous and computed alone, so every helper gives the same
//! result for any number of threads.

/// How many threads share a pass over `n` items: `threads` from `min`
/// items on, one below (where starting a thread costs more than it
/// saves).
pub(crate) fn parts(n: usize, min: usize, threads: usize) -> usize {
    if n >= min {
        threads.max(1)
    } else {
        1
    }
}

/// `f` over `0..n` split in `parts` contiguous ranges, each on its own
/// thread (this one included), results concatenated in order.
pub(crate) fn in_parts<T: Send>(
    n: usize,
    parts: usize,
    f: impl Fn(std::ops::Range<usize>) -> Vec<T> + Sync,
) -> Vec<T> {
    let per = n.div_ceil(parts.max(1)).max(1);
    let ranges: Vec<_> = (0..n)
        .step_by(per)
        .map(|lo| lo..(lo + per).min(n))
        .collect();
    if ranges.len() <= 1 {
        return f(0..n);
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = ranges[1..]
            .iter()
            .map(|r| {
                let r = r.clone();
                scope.spawn(move || f(r))
            })
            .collect();
        let mut out = f(ranges[0].clone());
        for h in handles {
            out.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        out
    })
}

/// `f(first, part)` over `out` split in `parts` contiguous parts of whole
/// units of `unit` items (a table's rows), each on its own thread (this
/// one included); `first` is the part's first unit.
pub(crate) fn fill_parts<T: Send>(
    out: &mut [T],
    unit: usize,
    parts: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let units = out.len() / unit.max(1);
    let per = units.div_ceil(parts.max(1)).max(1);
    let f = &f;
    std::thread::scope(|scope| {
        let mut chunks = out.chunks_mut(per * unit.max(1)).enumerate();
        let first = chunks.next();
        for (i, part) in chunks {
            scope.spawn(move || f(i * per, part));
        }
        if let Some((_, part)) = first {
            f(0, part);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any number of parts gives one part's result, rows kept whole.
    #[test]
    fn parts_give_one_parts_result() {
        let one = in_parts(1000, 1, |r| r.map(|i| i * 3).collect::<Vec<_>>());
        for parts in [2, 3, 7, 2000] {
            assert_eq!(in_parts(1000, parts, |r| r.map(|i| i * 3).collect()), one);
            let mut rows = vec![0usize; 3 * 101];
            fill_parts(&mut rows, 3, parts, |first, part| {
                assert_eq!(part.len() % 3, 0, "a row split");
                for (i, x) in part.iter_mut().enumerate() {
                    *x = (first + i / 3) * 10 + i % 3;
                }
            });
            let want: Vec<usize> = (0..3 * 101).map(|i| (i / 3) * 10 + i % 3).collect();
            assert_eq!(rows, want, "{parts} parts");
        }
    }
}
