//! The frame format: `length: u32 LE | crc: u32 LE | payload`, where `crc` is the CRC-32C of the
//! length bytes followed by the payload. Pure functions over bytes and readers; no files.

use std::fmt;
use std::io::{self, Read};

/// The largest payload one frame may hold (16 MiB). A length field above it is corruption, so
/// a damaged length never turns into a huge allocation.
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

/// Bytes in a frame header (length and checksum).
pub(crate) const HEADER_BYTES: u64 = 8;

/// Why the bytes at some offset are not a valid frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TornReason {
    /// Fewer bytes than a frame header remain.
    ShortHeader,
    /// The length field is zero; the store never writes an empty payload.
    EmptyFrame,
    /// The length field is over [`MAX_RECORD_BYTES`].
    LengthOverCap(u32),
    /// The length field promises more bytes than the file holds.
    ShortPayload(u32),
    /// The checksum does not match the length and payload.
    ChecksumMismatch,
}

impl fmt::Display for TornReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShortHeader => f.write_str("a frame header was cut short"),
            Self::EmptyFrame => f.write_str("a frame claims an empty record"),
            Self::LengthOverCap(n) => write!(f, "a frame claims {n} bytes, over the size cap"),
            Self::ShortPayload(n) => write!(f, "a frame claims {n} bytes but the file ends first"),
            Self::ChecksumMismatch => f.write_str("a frame's checksum does not match its bytes"),
        }
    }
}

/// What [`read_frame`] found at the current position.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrameRead {
    /// A valid frame's payload.
    Payload(Vec<u8>),
    /// The end of the file, exactly at a frame boundary.
    End,
    /// Bytes that are not a valid frame.
    Torn(TornReason),
}

/// Appends one frame holding `payload` to `out`.
pub(crate) fn encode_frame(payload: &[u8], out: &mut Vec<u8>) {
    // The caller checks the cap before encoding, so the length fits in a u32.
    let len = u32::try_from(payload.len())
        .unwrap_or(u32::MAX)
        .to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&checksum(len, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn checksum(len: [u8; 4], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&len), payload)
}

/// Reads the next frame from `reader`, which has `remaining` bytes left in the file.
///
/// Allocates at most `min(length, remaining)` bytes, both checked against the cap first.
///
/// # Errors
/// Returns the reader's I/O errors; bad bytes are a [`FrameRead::Torn`], not an error.
pub(crate) fn read_frame(reader: &mut impl Read, remaining: u64) -> io::Result<FrameRead> {
    if remaining == 0 {
        return Ok(FrameRead::End);
    }
    if remaining < HEADER_BYTES {
        return Ok(FrameRead::Torn(TornReason::ShortHeader));
    }
    let mut header = [0u8; HEADER_BYTES as usize];
    reader.read_exact(&mut header)?;
    let len_bytes = [header[0], header[1], header[2], header[3]];
    let len = u32::from_le_bytes(len_bytes);
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if len == 0 {
        return Ok(FrameRead::Torn(TornReason::EmptyFrame));
    }
    if len as usize > MAX_RECORD_BYTES {
        return Ok(FrameRead::Torn(TornReason::LengthOverCap(len)));
    }
    if u64::from(len) > remaining - HEADER_BYTES {
        return Ok(FrameRead::Torn(TornReason::ShortPayload(len)));
    }
    let mut payload = vec![0u8; len as usize];
    reader.read_exact(&mut payload)?;
    if checksum(len_bytes, &payload) != crc {
        return Ok(FrameRead::Torn(TornReason::ChecksumMismatch));
    }
    Ok(FrameRead::Payload(payload))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn read_all(bytes: &[u8]) -> Vec<FrameRead> {
        let mut reader = bytes;
        let mut out = Vec::new();
        loop {
            let remaining = reader.len() as u64;
            let next = read_frame(&mut reader, remaining).unwrap();
            let done = !matches!(next, FrameRead::Payload(_));
            out.push(next);
            if done {
                return out;
            }
        }
    }

    #[test]
    fn frames_round_trip() {
        let mut bytes = Vec::new();
        encode_frame(b"{\"a\":1}", &mut bytes);
        encode_frame(b"[]", &mut bytes);
        assert_eq!(
            read_all(&bytes),
            vec![
                FrameRead::Payload(b"{\"a\":1}".to_vec()),
                FrameRead::Payload(b"[]".to_vec()),
                FrameRead::End
            ]
        );
    }

    #[test]
    fn every_cut_of_a_frame_is_torn() {
        let mut bytes = Vec::new();
        encode_frame(b"{\"key\":\"value\"}", &mut bytes);
        for cut in 1..bytes.len() {
            let last = read_all(&bytes[..cut]).pop().unwrap();
            assert!(matches!(last, FrameRead::Torn(_)), "cut at {cut}: {last:?}");
        }
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let mut bytes = Vec::new();
        encode_frame(b"{\"key\":\"value\"}", &mut bytes);
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let first = read_all(&damaged).remove(0);
            assert!(matches!(first, FrameRead::Torn(_)), "bit {bit}: {first:?}");
        }
    }

    #[test]
    fn huge_length_is_corruption_not_allocation() {
        let mut bytes = u32::MAX.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0; 100]);
        assert_eq!(
            read_all(&bytes),
            vec![FrameRead::Torn(TornReason::LengthOverCap(u32::MAX))]
        );
    }

    #[test]
    fn zeroed_tail_is_corruption() {
        assert_eq!(
            read_all(&[0; 64]),
            vec![FrameRead::Torn(TornReason::EmptyFrame)]
        );
    }
}
