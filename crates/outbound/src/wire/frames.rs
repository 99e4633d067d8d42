//! A request body as pieces of shared bytes, written out as they are (a webhook body is the
//! queue's own bytes, never copied). `http/frames.rs` makes it a body hyper sends.

use bytes::Bytes;
use std::collections::VecDeque;

#[derive(Clone, Default, Debug)]
pub(crate) struct Frames {
    pieces: VecDeque<Bytes>,
    len: u64,
}

impl Frames {
    /// A body of one piece.
    pub(crate) fn one(bytes: Bytes) -> Frames {
        let mut f = Frames::default();
        f.push(bytes);
        f
    }

    pub(crate) fn push(&mut self, bytes: Bytes) {
        if !bytes.is_empty() {
            self.len += bytes.len() as u64;
            self.pieces.push_back(bytes);
        }
    }

    /// The next piece, taken out.
    pub(crate) fn pop(&mut self) -> Option<Bytes> {
        let piece = self.pieces.pop_front()?;
        self.len -= piece.len() as u64;
        Some(piece)
    }

    /// Whether every piece was taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Its length in bytes (the `Content-Length`).
    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}
