//! Server-sent events, read line by line from byte pieces (both families' streams):
//! `data:` lines are joined into one event's data, a blank line ends the event; comments,
//! `event:`, `id:` and `retry:` lines carry nothing the providers use (each event's data names
//! its own type). Bounded: a line or a stream past its limit is refused, not buffered.

use hookline_host::provider::ProviderError;

/// The longest line a stream may send (one event); past it the stream is refused.
const MAX_LINE: usize = 4 * 1024 * 1024;
/// The most bytes one streamed answer may take; past it the stream is refused.
const MAX_STREAM: usize = 64 * 1024 * 1024;

/// Splits byte pieces into events' data.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    line: Vec<u8>,
    data: String,
    fed: usize,
}

impl SseReader {
    /// Feeds the next piece; each complete event's data goes to `event`.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        event: &mut dyn FnMut(String) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        self.fed = self.fed.saturating_add(bytes.len());
        if self.fed > MAX_STREAM {
            return Err(ProviderError::Malformed(format!(
                "the stream is longer than {MAX_STREAM} bytes"
            )));
        }
        for &byte in bytes {
            if byte == b'\n' {
                let line = std::mem::take(&mut self.line);
                self.line_done(&line, event)?;
            } else if self.line.len() >= MAX_LINE {
                return Err(ProviderError::Malformed(format!(
                    "a stream line is longer than {MAX_LINE} bytes"
                )));
            } else {
                self.line.push(byte);
            }
        }
        Ok(())
    }

    /// The body ended: a last event without its blank line still counts.
    pub(crate) fn finish(
        &mut self,
        event: &mut dyn FnMut(String) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        let line = std::mem::take(&mut self.line);
        self.line_done(&line, event)?;
        self.dispatch(event)
    }

    fn line_done(
        &mut self,
        line: &[u8],
        event: &mut dyn FnMut(String) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        let line = std::str::from_utf8(line)
            .map_err(|_| ProviderError::Malformed("the stream is not UTF-8".into()))?;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            return self.dispatch(event);
        }
        if let Some(data) = line.strip_prefix("data:") {
            if !self.data.is_empty() {
                self.data.push('\n');
            }
            self.data.push_str(data.strip_prefix(' ').unwrap_or(data));
        }
        Ok(())
    }

    fn dispatch(
        &mut self,
        event: &mut dyn FnMut(String) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        let data = std::mem::take(&mut self.data);
        if data.is_empty() {
            return Ok(());
        }
        event(data)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let body = "event: a\r\ndata: {\"x\":\r\ndata: 1}\r\n\r\n: ping\n\nevent: b\ndata: two";
        for split in [1, 2, 5, body.len()] {
            let mut seen = Vec::new();
            let mut reader = SseReader::default();
            let mut push = |data: String| {
                seen.push(data);
                Ok(())
            };
            for piece in body.as_bytes().chunks(split) {
                reader.feed(piece, &mut push).unwrap();
            }
            reader.finish(&mut push).unwrap();
            assert_eq!(seen, vec!["{\"x\":\n1}", "two"]);
        }
    }
}
