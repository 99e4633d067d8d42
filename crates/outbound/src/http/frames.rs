//! [`Frames`] as a body hyper sends: one frame per piece.

pub(crate) use crate::wire::frames::Frames;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

impl Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().pop().map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        Frames::is_empty(self)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn pieces_come_out_in_order_and_the_length_is_exact() {
        let mut f = Frames::default();
        for p in ["{\"batch\":[", "{}", "", ",", "{}", "]}"] {
            f.push(Bytes::from_static(p.as_bytes()));
        }
        assert_eq!(f.len(), 17);
        assert_eq!(f.size_hint().exact(), Some(17));
        let got = f.collect().await.unwrap().to_bytes();
        assert_eq!(&got[..], b"{\"batch\":[{},{}]}");
    }
}
