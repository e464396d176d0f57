//! Reading newline-delimited lines with a size cap, without ever buffering more than the cap.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The default cap on one protocol line: 1 MiB.
pub const DEFAULT_LINE_CAP: usize = 1024 * 1024;

/// One read from a plugin's stream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A complete line, without its newline.
    Text(Vec<u8>),
    /// A line longer than the cap; it was read to its end and dropped.
    TooLong,
    /// The stream ended. A partial last line (a crash mid-reply) is dropped.
    End,
}

/// Reads the next line of at most `cap` bytes (newline excluded).
///
/// # Cancel safety
/// Not cancel safe: a cancelled read loses the part of the line read so far. The reader task
/// that calls it is never cancelled mid-line except at shutdown.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, cap: usize) -> Line {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(chunk) if !chunk.is_empty() => chunk,
            // End of stream or a read error: either way nothing more will come.
            _ => return Line::End,
        };
        let (taken, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => (at, true),
            None => (chunk.len(), false),
        };
        if !over && line.len() + taken <= cap {
            line.extend_from_slice(&chunk[..taken]);
        } else {
            over = true;
            line = Vec::new();
        }
        reader.consume(taken + usize::from(done));
        if done {
            return if over {
                Line::TooLong
            } else {
                Line::Text(line)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], cap: usize) -> Vec<Line> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, cap).await;
            let end = line == Line::End;
            out.push(line);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_drops_oversize_ones_and_a_partial_tail() {
        let got = lines(b"ab\n0123456789\ncd\npartial", 5).await;
        assert_eq!(
            got,
            [
                Line::Text(b"ab".to_vec()),
                Line::TooLong,
                Line::Text(b"cd".to_vec()),
                Line::End
            ]
        );
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_cap_is_kept() {
        assert_eq!(lines(b"abcde\n", 5).await[0], Line::Text(b"abcde".to_vec()));
    }

    proptest::proptest! {
        /// Issue 8 item 2: any bytes, any cap: every line read is within the cap and the reader
        /// always reaches the end; it never panics and never buffers past the cap.
        #[test]
        fn any_bytes_split_into_lines_within_the_cap(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
            cap in 0usize..64,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build();
            let Ok(runtime) = runtime else { return Ok(()) };
            let got = runtime.block_on(lines(&input, cap));
            proptest::prop_assert_eq!(got.last(), Some(&Line::End));
            let newlines = input.iter().filter(|b| **b == b'\n').count();
            proptest::prop_assert_eq!(got.len(), newlines + 1);
            for line in &got {
                if let Line::Text(text) = line {
                    proptest::prop_assert!(text.len() <= cap);
                }
            }
        }
    }
}
